package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// lockMany locks the stripes of ids of project in a fixed order and
// returns the unlock function. Waiting stops when ctx is done.
func (s *Store) lockMany(ctx context.Context, project string, ids []string) (func(), error) {
	var idx []int
	for _, id := range ids {
		h := fnv.New32a()
		_, _ = h.Write([]byte(project))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(id))
		i := int(h.Sum32() % lockStripes)
		if !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	unlock := func(n int) {
		for _, i := range slices.Backward(idx[:n]) {
			<-s.locks[i]
		}
	}
	for n, i := range idx {
		select {
		case s.locks[i] <- struct{}{}:
		case <-ctx.Done():
			unlock(n)
			return nil, s.wrap(ctx, "lock", ctx.Err())
		}
	}
	return func() { unlock(len(idx)) }, nil
}

// indexScopes are the scopes of the owner's index a record is in: its own,
// and one per project it is shared with (not itself, not global; a global
// QA is visible everywhere already).
func indexScopes(project string, shared []string) []string {
	out := []string{ownScope}
	if project == core.GlobalProject {
		return out
	}
	for _, p := range shared {
		if p == project || p == core.GlobalProject {
			continue
		}
		if sc := sharedScope(p); !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// indexOps adds (add) or removes the index entries of st to b: postings,
// collection stats, the doc id, the content-hash index and the list index.
func (s *Store) indexOps(b *batch, st *stored, add bool) {
	p := st.project
	doc := s.analyzer.Analyze(st.Q, st.A)
	terms := make([]string, 0, len(doc.Terms))
	for t := range doc.Terms {
		if t != "" {
			terms = append(terms, t)
		}
	}
	slices.Sort(terms)
	sign := int64(1)
	if !add {
		sign = -1
	}
	for _, sc := range indexScopes(p, st.Shared) {
		for _, t := range terms {
			if add {
				b.op("padd", s.k.post(p, sc, t), s.k.postBucket(p, sc, t), t, st.Doc, postingRest(doc.Terms[t]))
			} else {
				b.op("prem", s.k.post(p, sc, t), s.k.postBucket(p, sc, t), t, st.Doc)
			}
		}
		b.op("hincr", s.k.stats(p), "n:"+sc, sign)
		b.op("hincr", s.k.stats(p), "q:"+sc, sign*int64(doc.Len[0]))
		b.op("hincr", s.k.stats(p), "a:"+sc, sign*int64(doc.Len[1]))
	}
	// A new index version: searches drop what they cached (cache.go).
	// A batch writes one project, so one token per batch.
	if !b.ivSet {
		b.op("hset", s.k.stats(p), "iv", newID(""))
		b.ivSet = true
	}
	docID := strconv.FormatUint(st.Doc, 10)
	hf := hashField(st.contentHash())
	if add {
		b.op("setrange", s.k.lens(p, st.Doc), (st.Doc%lensBucket)*lensSize, lensEntry(doc.Len))
		b.op("hset", s.k.docs(p, st.Doc), docID, docValue(st.ID, st.Created))
		b.op("hset", s.k.hashes(p, hf), hf, st.ID)
	} else {
		b.op("hdel", s.k.docs(p, st.Doc), docID)
		b.op("hdelif", s.k.hashes(p, hf), hf, st.ID)
	}
}

// registerShared records, under each target project's tag, that project
// shares QA id with it (read by search and by locate). It runs before the
// owner's write; a stale entry is harmless (the record is checked).
func (s *Store) registerShared(ctx context.Context, project, id string, shared []string) error {
	if project == core.GlobalProject {
		return nil
	}
	pipe := s.rdb.Pipeline()
	n := 0
	for _, t := range shared {
		if t == project || t == core.GlobalProject {
			continue
		}
		pipe.SAdd(ctx, s.k.sharers(t), project)
		pipe.HSet(ctx, s.k.sharedIn(t), id, project)
		n++
	}
	if n == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	return err
}

// nextDocs reserves n document ids of project.
func (s *Store) nextDocs(ctx context.Context, project string, n int) (uint64, error) {
	last, err := s.rdb.HIncrBy(ctx, s.k.stats(project), "seq", int64(n)).Result()
	if err != nil {
		return 0, err
	}
	if last >= 1<<32 {
		return 0, fmt.Errorf("project %s has used all document ids: %w", project, core.ErrTooLarge)
	}
	return uint64(last) - uint64(n) + 1, nil
}

// RecordCandidate stores a new QA or folds it into an existing duplicate.
func (s *Store) RecordCandidate(ctx context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	const op = "record candidate"
	if err := req.Validate(); err != nil {
		return core.CandidateResult{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.CandidateResult{}, s.wrap(ctx, op, err)
	}
	now := s.now()
	p := req.ProjectID
	_, creator := ledger.Source(ctx, req.RunID)
	eid := eventID(req.EventID)
	evKey := s.k.event(p, "c", p, eid)
	var out core.CandidateResult
	if req.EventID != "" {
		if v, err := s.rdb.Get(ctx, evKey).Result(); err == nil {
			if err := json.Unmarshal([]byte(v), &out); err != nil {
				return core.CandidateResult{}, fmt.Errorf("redis: %s: stored event result is corrupt", op)
			}
			return out, nil
		}
	}
	if err := s.ensureProject(ctx, p); err != nil {
		return core.CandidateResult{}, err
	}
	hash := core.ContentHash(req.Question, req.Answer)
	id := req.QAID
	if id == "" {
		id = newID("qa_")
	}
	shared := ledger.SharedProjects(req.SharedProjects)
	var doc uint64
	registered := false
	err := s.retry(ctx, op, func() (bool, error) {
		dup, err := s.findDuplicate(ctx, req, hash)
		if err != nil {
			return false, err
		}
		if dup != nil {
			unlock, err := s.lockMany(ctx, p, []string{dup.ID})
			if err != nil {
				return false, err
			}
			defer unlock()
			// Re-read under the lock so the version is current.
			if dup, err = s.readStored(ctx, p, dup.ID); err != nil || dup == nil {
				return false, err
			}
			b := newBatch(evKey)
			if req.Evidence != nil {
				v := s.ledger.Vote(ctx, req.RunID, req.Evidence.Result, core.NormalizeStrength(string(req.Evidence.Strength)), now)
				rep, err := s.readRep(ctx, p, []*trust.State{dup.State}, v.Source)
				if err != nil {
					return false, err
				}
				e := dup.entry(false)
				if ch := s.ledger.CandidateEvidence(&e, v, rep, true); ch.Applied {
					dup.set(e)
					key := s.k.qa(p, dup.ID)
					b.version(key, dup.ver)
					s.changeOps(b, p, dup.State.Creator, ch)
					val, err := dup.encode(dup.ver + 1)
					if err != nil {
						return false, err
					}
					b.op("set", key, val)
				}
			}
			res := core.CandidateResult{QAID: dup.ID, Status: dup.State.Status, DeduplicatedInto: dup.ID}
			return s.commitResult(ctx, b, res, &out)
		}
		if req.QAID != "" {
			old, err := s.readStored(ctx, p, id)
			if err != nil {
				return false, err
			}
			if old != nil {
				return false, fmt.Errorf("qa %s already exists with other content: %w", id, core.ErrConflict)
			}
		}
		if doc == 0 {
			if doc, err = s.nextDocs(ctx, p, 1); err != nil {
				return false, err
			}
		}
		if !registered {
			if err := s.registerShared(ctx, p, id, shared); err != nil {
				return false, err
			}
			registered = true
		}
		e := s.ledger.NewCandidate(req, id, creator, now)
		key := s.k.qa(p, id)
		b := newBatch(evKey)
		b.version(key, 0)
		b.absentField(s.k.hashes(p, hashField(hash)), hashField(hash))
		if req.Evidence != nil {
			v := s.ledger.Vote(ctx, req.RunID, req.Evidence.Result, core.NormalizeStrength(string(req.Evidence.Strength)), now)
			rep, err := s.readRep(ctx, p, []*trust.State{e.State}, v.Source)
			if err != nil {
				return false, err
			}
			s.changeOps(b, p, e.State.Creator, s.ledger.CandidateEvidence(&e, v, rep, false))
		}
		st := toStored(e.Rec, e.State, doc)
		val, err := st.encode(1)
		if err != nil {
			return false, err
		}
		b.op("set", key, val)
		s.indexOps(b, st, true)
		return s.commitResult(ctx, b, core.CandidateResult{QAID: id, Status: st.State.Status}, &out)
	})
	if err != nil {
		return core.CandidateResult{}, err
	}
	return out, nil
}

// commitResult commits b with res as the event result; out gets res, or
// the stored result of a repeated event.
func (s *Store) commitResult(ctx context.Context, b *batch, res any, out any) (bool, error) {
	body, err := json.Marshal(res)
	if err != nil {
		return false, err
	}
	code, prev, err := s.commit(ctx, b, string(body))
	switch {
	case err != nil:
		return false, err
	case code == commitRepeated:
		return true, json.Unmarshal([]byte(prev), out)
	case code == commitApplied:
		return true, json.Unmarshal(body, out)
	}
	return false, nil
}

// findDuplicate returns the QA that req duplicates (ledger.Duplicate): the
// one its content hash indexes, else one of the lexical matches of the
// question.
func (s *Store) findDuplicate(ctx context.Context, req core.CandidateRequest, hash string) (*stored, error) {
	p := req.ProjectID
	if id, err := s.rdb.HGet(ctx, s.k.hashes(p, hashField(hash)), hashField(hash)).Result(); err == nil {
		st, err := s.readStored(ctx, p, id)
		if err != nil {
			return nil, err
		}
		if st != nil && ledger.Duplicate(req, hash, st.record(true)) {
			return st, nil
		}
	}
	src, err := s.newSource(ctx, p, req.Question, true)
	if err != nil {
		return nil, err
	}
	hits, err := s.scorer.SearchTerms(ctx, src, src.terms, ledger.DupCandidates, 0)
	if err != nil {
		return nil, err
	}
	recs, err := s.loadHits(ctx, src, hits, false)
	if err != nil {
		return nil, err
	}
	for _, st := range recs {
		if st != nil && ledger.Duplicate(req, hash, st.record(true)) {
			return st, nil
		}
	}
	return nil, nil
}

// Patch applies a human verdict or edit to a QA of the project.
func (s *Store) Patch(ctx context.Context, req core.PatchRequest) (core.Record, error) {
	const op = "patch"
	if err := req.Validate(); err != nil {
		return core.Record{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.Record{}, s.wrap(ctx, op, err)
	}
	now := s.now()
	p := req.ProjectID
	eid := eventID(req.EventID)
	unlock, err := s.lockMany(ctx, p, []string{req.QAID})
	if err != nil {
		return core.Record{}, err
	}
	defer unlock()
	var out core.Record
	err = s.retry(ctx, op, func() (bool, error) {
		st, err := s.readStored(ctx, p, req.QAID)
		if err != nil {
			return false, err
		}
		if st == nil {
			err := s.repeated(ctx, "p", p, eid, &out, ledger.NotFound(req.QAID))
			return err == nil, err
		}
		key := s.k.qa(p, st.ID)
		b := newBatch(s.k.event(p, "p", p, eid))
		b.version(key, st.ver)
		rep, err := s.readRep(ctx, p, []*trust.State{st.State})
		if err != nil {
			return false, err
		}
		e := st.entry(true)
		reindex := ledger.TextChanged(e.Rec, req)
		if reindex {
			s.indexOps(b, st, false)
		}
		ch := s.ledger.Verdict(&e, req, rep, now)
		st.set(e)
		if reindex {
			s.indexOps(b, st, true)
		}
		s.changeOps(b, p, st.State.Creator, ch)
		val, err := st.encode(st.ver + 1)
		if err != nil {
			return false, err
		}
		b.op("set", key, val)
		return s.commitResult(ctx, b, e.Rec, &out)
	})
	if err != nil {
		return core.Record{}, err
	}
	return out, nil
}

// Delete removes a QA of the project from every index.
func (s *Store) Delete(ctx context.Context, projectID, qaID string) error {
	const op = "delete"
	if err := core.ValidateProjectID(projectID); err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := core.ValidateQAID(qaID); err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return s.wrap(ctx, op, err)
	}
	unlock, err := s.lockMany(ctx, projectID, []string{qaID})
	if err != nil {
		return err
	}
	defer unlock()
	eid := newID("del_")
	return s.retry(ctx, op, func() (bool, error) {
		st, err := s.readStored(ctx, projectID, qaID)
		if err != nil {
			return false, err
		}
		if st == nil {
			return false, ledger.NotFound(qaID)
		}
		key := s.k.qa(projectID, qaID)
		b := newBatch(s.k.event(projectID, "d", projectID, eid))
		b.version(key, st.ver)
		b.op("del", key)
		s.indexOps(b, st, false)
		var ignored string
		return s.commitResult(ctx, b, qaID, &ignored)
	})
}

// importChunk is how many records one import script writes.
const importChunk = 100

// Import stores full records as they are (ids, counters and timestamps
// kept), replacing records with the same qa_id, in atomic chunks of 100
// records of one project.
func (s *Store) Import(ctx context.Context, recs []core.Record) error {
	const op = "import"
	for i, r := range recs {
		if err := ledger.ValidateImport(i, r); err != nil {
			return fmt.Errorf("redis: %s: %w", op, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return s.wrap(ctx, op, err)
	}
	now := s.now()
	byProject := map[string][]core.Record{}
	var order []string
	for _, r := range recs {
		if _, ok := byProject[r.ProjectID]; !ok {
			order = append(order, r.ProjectID)
		}
		byProject[r.ProjectID] = append(byProject[r.ProjectID], r)
	}
	for _, p := range order {
		if err := s.ensureProject(ctx, p); err != nil {
			return err
		}
		rs := byProject[p]
		for i := 0; i < len(rs); i += importChunk {
			if err := s.importChunk(ctx, p, rs[i:min(i+importChunk, len(rs))], now); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) importChunk(ctx context.Context, p string, rs []core.Record, now time.Time) error {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.QAID
	}
	unlock, err := s.lockMany(ctx, p, ids)
	if err != nil {
		return err
	}
	defer unlock()
	for _, r := range rs {
		if err := s.registerShared(ctx, p, r.QAID, r.SharedProjects); err != nil {
			return s.wrap(ctx, "import", err)
		}
	}
	eid := newID("imp_")
	var newDocs []uint64
	return s.retry(ctx, "import", func() (bool, error) {
		keys := make([]string, len(rs))
		for i, r := range rs {
			keys[i] = s.k.qa(p, r.QAID)
		}
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return false, err
		}
		cur := map[string]*stored{}
		firstVer := map[string]int64{}
		need := 0
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				if _, seen := firstVer[rs[i].QAID]; !seen {
					firstVer[rs[i].QAID] = 0
					need++
				}
				continue
			}
			st, err := decodeStored(p, rs[i].QAID, str)
			if err != nil {
				return false, fmt.Errorf("record %s: %w", rs[i].QAID, err)
			}
			cur[rs[i].QAID] = st
			firstVer[rs[i].QAID] = st.ver
		}
		if len(newDocs) < need {
			first, err := s.nextDocs(ctx, p, need-len(newDocs))
			if err != nil {
				return false, err
			}
			for d := range uint64(need - len(newDocs)) {
				newDocs = append(newDocs, first+d)
			}
		}
		free := slices.Clone(newDocs)
		b := newBatch(s.k.event(p, "i", p, eid))
		for _, id := range slices.Sorted(maps.Keys(firstVer)) {
			b.version(s.k.qa(p, id), firstVer[id])
		}
		for _, r := range rs {
			old := cur[r.QAID]
			var doc uint64
			if old != nil {
				s.indexOps(b, old, false)
				doc = old.Doc
			} else {
				doc, free = free[0], free[1:]
			}
			e := s.ledger.Import(r, now)
			st := toStored(e.Rec, e.State, doc)
			st.ver = 1
			if old != nil {
				st.ver = old.ver + 1
			}
			val, err := st.encode(st.ver)
			if err != nil {
				return false, err
			}
			b.op("set", s.k.qa(p, r.QAID), val)
			s.indexOps(b, st, true)
			cur[r.QAID] = st
		}
		var ignored int
		return s.commitResult(ctx, b, len(rs), &ignored)
	})
}

// Expire deprecates candidates never validated within the candidate TTL,
// at most batch of them (batch ≤ 0: all), across every project. Only
// records created before now − TTL are read.
func (s *Store) Expire(ctx context.Context, now time.Time, batch int) (int, error) {
	const op = "expire"
	projects, err := s.rdb.SMembers(ctx, s.k.projects()).Result()
	if err != nil {
		return 0, s.wrap(ctx, op, err)
	}
	slices.Sort(projects)
	cutoff := now.Add(-s.cfg.params.CandidateTTL).UnixMilli()
	n := 0
	var mu sync.Mutex
	for _, p := range projects {
		all, err := s.entries(ctx, p)
		if err != nil {
			return n, s.wrap(ctx, op, err)
		}
		var ids []string
		for _, e := range slices.Backward(all) {
			if e.score > cutoff {
				break
			}
			ids = append(ids, e.id)
		}
		for _, id := range ids {
			if batch > 0 && n >= batch {
				return n, nil
			}
			changed, err := s.expireOne(ctx, p, id, now)
			if err != nil {
				return n, err
			}
			if changed {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}
	}
	return n, nil
}

func (s *Store) expireOne(ctx context.Context, p, id string, now time.Time) (bool, error) {
	unlock, err := s.lockMany(ctx, p, []string{id})
	if err != nil {
		return false, err
	}
	defer unlock()
	eid := newID("exp_")
	changed := false
	err = s.retry(ctx, "expire", func() (bool, error) {
		changed = false
		st, err := s.readStored(ctx, p, id)
		if err != nil || st == nil {
			return st == nil, err
		}
		e := st.entry(false)
		if !s.ledger.Expire(&e, trust.NoReputation, now) {
			return true, nil
		}
		st.set(e)
		key := s.k.qa(p, id)
		b := newBatch(s.k.event(p, "x", p, eid))
		b.version(key, st.ver)
		val, err := st.encode(st.ver + 1)
		if err != nil {
			return false, err
		}
		b.op("set", key, val)
		var ignored string
		done, err := s.commitResult(ctx, b, id, &ignored)
		changed = done && err == nil
		return done, err
	})
	return changed, err
}
