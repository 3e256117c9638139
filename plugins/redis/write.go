package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// batch is one atomic write of a project: the event key, version checks
// and the operations commitScript applies.
type batch struct {
	keys   []string
	kidx   map[string]int
	checks []any
	nCheck int
	ops    []any
	// appendAt is the ops index of the pending append value per key index:
	// appends to one key coalesce into one operation (bulk imports), unless
	// a removal from that key came in between.
	appendAt map[int]int
	// premAt is the ops index of the last removal per key index: a
	// removal followed by an append of the same document (a re-indexed
	// QA) becomes a no-op, as the append replaces that document's posting.
	premAt map[int]int
	// ivSet: the project's index version is already set by this batch.
	ivSet bool
	// written are the KEYS indexes of the keys set, deleted or
	// incremented: commit lists the records and reputation among them in
	// the project's change feed.
	written []int
}

func newBatch(eventKey string) *batch {
	return &batch{keys: []string{eventKey}, kidx: map[string]int{eventKey: 1}}
}

// key returns the 1-based KEYS index of k.
func (b *batch) key(k string) int {
	if i, ok := b.kidx[k]; ok {
		return i
	}
	b.keys = append(b.keys, k)
	b.kidx[k] = len(b.keys)
	return len(b.keys)
}

// version requires the record at k to be at ver (0: absent).
func (b *batch) version(k string, ver int64) {
	b.checks = append(b.checks, "v", b.key(k), strconv.FormatInt(ver, 10))
	b.nCheck++
}

// absentField requires hash k to have no field f.
func (b *batch) absentField(k, f string) {
	b.checks = append(b.checks, "hnx", b.key(k), f)
	b.nCheck++
}

func (b *batch) op(name, k string, args ...any) {
	ki := b.key(k)
	switch name {
	case "padd":
		// args: bucket hash key, term, doc (uint64), posting rest
		// (string). Appends of ascending documents to one list coalesce
		// into one operation: bucket key index, term, first doc, last doc,
		// the first posting's rest followed by gap-coded postings.
		doc, rest := args[2].(uint64), args[3].(string)
		if at, ok := b.premAt[ki]; ok && b.ops[at+4] == doc {
			b.ops[at] = "pnop"
			delete(b.premAt, ki)
		}
		if at, ok := b.appendAt[ki]; ok {
			if last := b.ops[at+1].(uint64); doc > last {
				b.ops[at+1] = doc
				b.ops[at+2] = b.ops[at+2].(string) + uvarintGap(doc-last) + rest
				return
			}
		}
		if b.appendAt == nil {
			b.appendAt = map[int]int{}
		}
		b.appendAt[ki] = len(b.ops) + 4
		args = []any{b.key(args[0].(string)), args[1], doc, doc, rest}
	case "prem":
		// args: bucket hash key, term, doc.
		delete(b.appendAt, ki)
		if b.premAt == nil {
			b.premAt = map[int]int{}
		}
		b.premAt[ki] = len(b.ops)
		args = []any{b.key(args[0].(string)), args[1], args[2]}
	case "set", "del":
		delete(b.appendAt, ki)
		delete(b.premAt, ki)
		b.written = append(b.written, ki)
	case "hincrf":
		b.written = append(b.written, ki)
	}
	b.ops = append(b.ops, name, ki)
	b.ops = append(b.ops, args...)
}

// commit outcomes.
const (
	commitConflict = 0
	commitRepeated = 1
	commitApplied  = 2
)

// feed adds to b, once, the entry of the records and reputation it
// changes to their project's change feed (keys.changes): the script sets
// the project's record version to the next one.
func (s *Store) feed(b *batch) {
	var project string
	var ids []string
	seen := map[string]bool{}
	for _, ki := range b.written {
		p, id, rep := s.k.written(b.keys[ki-1])
		if rep {
			id = "~"
		}
		if id == "" || seen[id] {
			continue
		}
		seen[id], project = true, p
		ids = append(ids, id)
	}
	b.written = nil
	if len(ids) == 0 {
		return
	}
	if len(ids) > maxChangedIDs {
		ids = []string{"*"}
	}
	b.ops = append(b.ops, "chg", b.key(s.k.stats(project)), b.key(s.k.changes(project)), strings.Join(ids, " "), newID(""))
}

// commit runs the batch. For a repeated event it returns the stored result.
func (s *Store) commit(ctx context.Context, b *batch, result string) (int, string, error) {
	s.feed(b)
	args := make([]any, 0, 3+len(b.checks)+len(b.ops))
	args = append(args, int64(eventTTL/time.Second), result, b.nCheck)
	args = append(args, b.checks...)
	args = append(args, b.ops...)
	v, err := s.eval(ctx, commitScript.get(), b.keys, args...).Slice()
	if err != nil {
		return 0, "", err
	}
	if len(v) == 0 {
		return 0, "", errors.New("empty commit reply")
	}
	code, _ := v[0].(int64)
	if code == commitRepeated && len(v) > 1 {
		prev, _ := v[1].(string)
		return commitRepeated, prev, nil
	}
	return int(code), "", nil
}

// retry runs attempt until it reports done, backing off with jitter after
// a conflict, at most maxCommitAttempts times.
func (s *Store) retry(ctx context.Context, op string, attempt func() (bool, error)) error {
	for i := range maxCommitAttempts {
		done, err := attempt()
		if err != nil {
			return s.wrap(ctx, op, err)
		}
		if done {
			return nil
		}
		s.cfg.logger.DebugContext(ctx, "redis: write conflict, retrying", "op", op, "attempt", i+1)
		d := time.Duration(rand.Int64N(int64(min(time.Millisecond<<min(i, 10), maxCommitBackoff)) + 1))
		select {
		case <-ctx.Done():
			return s.wrap(ctx, op, ctx.Err())
		case <-time.After(d):
		}
	}
	return fmt.Errorf("redis: %s: %w (write contention: %d attempts)", op, core.ErrUnavailable, maxCommitAttempts)
}

func eventID(id string) string {
	if id == "" {
		return newID("gen_")
	}
	return id
}

// refresh recomputes the record's derived fields from its evidence at now.
func (s *Store) refresh(rep trust.Reputation, st *stored, now time.Time) core.Record {
	return s.refreshRecord(rep, st, now, true)
}

// refreshRecord is refresh; withHash false leaves ContentHash unset when
// it is not stored (search matches do not carry it).
func (s *Store) refreshRecord(rep trust.Reputation, st *stored, now time.Time, withHash bool) core.Record {
	e := st.entry(withHash)
	s.ledger.Refresh(&e, rep, now)
	return e.Rec
}

// now is the store's clock in the precision records keep (milliseconds).
func (s *Store) now() time.Time { return s.cfg.clock().UTC().Truncate(time.Millisecond) }

// changeOps adds to b what a ledger event asks the store to persist
// besides the record: the reputation increments in the owning project's
// book and the day counter.
func (s *Store) changeOps(b *batch, project, creator string, ch ledger.Change) {
	rk := s.k.rep(project)
	eff := ch.Effects
	for _, id := range slices.Sorted(maps.Keys(eff.Sources)) {
		inc := eff.Sources[id]
		if inc.Agree != 0 {
			b.op("hincrf", rk, "sa:"+id, strconv.FormatFloat(inc.Agree, 'g', -1, 64))
		}
		if inc.Disagree != 0 {
			b.op("hincrf", rk, "sd:"+id, strconv.FormatFloat(inc.Disagree, 'g', -1, 64))
		}
	}
	if creator != "" && eff.Creator.Proven != 0 {
		b.op("hincrf", rk, "cp:"+creator, strconv.FormatFloat(eff.Creator.Proven, 'g', -1, 64))
	}
	if creator != "" && eff.Creator.Rejected != 0 {
		b.op("hincrf", rk, "cr:"+creator, strconv.FormatFloat(eff.Creator.Rejected, 'g', -1, 64))
	}
	if ch.Day != nil {
		field := ch.Day.Date + ":f"
		if ch.Day.Pass {
			field = ch.Day.Date + ":p"
		}
		b.op("hincr", s.k.days(project), field, 1)
	}
}

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// readRep reads the reputation entries of st's sources (and extra ones)
// and of its creator from the owning project's book.
func (s *Store) readRep(ctx context.Context, project string, states []*trust.State, extra ...string) (reputation, error) {
	rep := reputation{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}
	fields := repFields(states, extra...)
	if len(fields) == 0 {
		return rep, nil
	}
	vals, err := s.rdb.HMGet(ctx, s.k.rep(project), fields...).Result()
	if err != nil {
		return rep, err
	}
	fillRep(&rep, fields, vals)
	return rep, nil
}

func fillRep(rep *reputation, fields []string, vals []any) {
	for i, f := range fields {
		str, _ := vals[i].(string)
		if str == "" {
			continue
		}
		x, err := strconv.ParseFloat(str, 64)
		if err != nil || len(f) < 3 {
			continue
		}
		id := f[3:]
		switch f[:3] {
		case "sa:":
			r := rep.src[id]
			r.Agree = x
			rep.src[id] = r
		case "sd:":
			r := rep.src[id]
			r.Disagree = x
			rep.src[id] = r
		case "cp:":
			r := rep.cre[id]
			r.Proven = x
			rep.cre[id] = r
		case "cr:":
			r := rep.cre[id]
			r.Rejected = x
			rep.cre[id] = r
		}
	}
}

// readStored reads one record of project; nil when absent.
func (s *Store) readStored(ctx context.Context, project, id string) (*stored, error) {
	v, err := s.rdb.Get(ctx, s.k.qa(project, id)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeStored(project, id, v)
}

// locate finds the QA id visible to project from: its own, the global
// project's, or one shared with it. nil when not visible.
func (s *Store) locate(ctx context.Context, from, id string) (*stored, error) {
	st, _, err := s.locateRep(ctx, from, id, nil)
	return st, err
}

// locateRep is locate that also reads the reputation fields repFields of
// project from's book in the same round trip; the values are returned only
// when the QA is from's own.
func (s *Store) locateRep(ctx context.Context, from, id string, repFields []string) (*stored, []any, error) {
	pipe := s.rdb.Pipeline()
	own := pipe.Get(ctx, s.k.qa(from, id))
	var repCmd *redis.SliceCmd
	if len(repFields) > 0 {
		repCmd = pipe.HMGet(ctx, s.k.rep(from), repFields...)
	}
	var glob *redis.StringCmd
	var shin *redis.StringCmd
	if from != core.GlobalProject {
		glob = pipe.Get(ctx, s.k.qa(core.GlobalProject, id))
		shin = pipe.HGet(ctx, s.k.sharedIn(from), id)
	}
	if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	if v, err := own.Result(); err == nil {
		st, err := decodeStored(from, id, v)
		var vals []any
		if repCmd != nil && err == nil {
			vals, err = repCmd.Result()
		}
		return st, vals, err
	}
	if glob == nil {
		return nil, nil, nil
	}
	if v, err := glob.Result(); err == nil {
		st, err := decodeStored(core.GlobalProject, id, v)
		return st, nil, err
	}
	owner, err := shin.Result()
	if err != nil || owner == "" || owner == from {
		return nil, nil, nil
	}
	st, err := s.readStored(ctx, owner, id)
	if err != nil || st == nil {
		return nil, nil, err
	}
	if !slices.Contains(st.Shared, from) {
		return nil, nil, nil
	}
	return st, nil, nil
}

// repFields lists the reputation fields the states (their sources and
// creators) and the extra sources need.
func repFields(states []*trust.State, extra ...string) []string {
	var fields []string
	seen := map[string]bool{}
	addSrc := func(id string) {
		if !seen["s"+id] {
			seen["s"+id] = true
			fields = append(fields, "sa:"+id, "sd:"+id)
		}
	}
	for _, st := range states {
		for id := range st.Sources {
			addSrc(id)
		}
		if c := st.Creator; c != "" && !seen["c"+c] {
			seen["c"+c] = true
			fields = append(fields, "cp:"+c, "cr:"+c)
		}
	}
	for _, id := range extra {
		addSrc(id)
	}
	return fields
}

// repHints remembers, per QA, which reputation fields its last write
// needed, so the next write can read them in the same round trip as the
// record. A hint only saves a round trip; a stale one costs one.
type repHints struct {
	mu sync.Mutex
	m  map[string][]string
}

const maxRepHints = 1 << 16

func (h *repHints) get(k string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[k]
}

func (h *repHints) put(k string, fields []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxRepHints {
		h.m = map[string][]string{}
	}
	h.m[k] = fields
}

// covers reports whether have holds every field of need.
func covers(have, need []string) bool {
	if len(have) < len(need) {
		return false
	}
	set := make(map[string]struct{}, len(have))
	for _, f := range have {
		set[f] = struct{}{}
	}
	for _, f := range need {
		if _, ok := set[f]; !ok {
			return false
		}
	}
	return true
}

// RecordValidation records a pass or fail of a QA visible to the project.
func (s *Store) RecordValidation(ctx context.Context, req core.ValidateRequest) (core.Record, error) {
	_, after, err := s.RecordValidationBefore(ctx, req)
	return after, err
}

// RecordValidationBefore is RecordValidation that also returns the record
// as it was just before (what Get would have answered), read in the same
// round trip: memex serve audits before → after without a Get of its own.
func (s *Store) RecordValidationBefore(ctx context.Context, req core.ValidateRequest) (before, after core.Record, err error) {
	const op = "record validation"
	if err := req.Validate(); err != nil {
		return core.Record{}, core.Record{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	res, strength, err := req.Outcome()
	if err != nil {
		return core.Record{}, core.Record{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.Record{}, core.Record{}, s.wrap(ctx, op, err)
	}
	now := s.now()
	v := s.ledger.Vote(ctx, req.RunID, res, strength, now)
	eid := eventID(req.EventID)
	unlock, err := s.lockMany(ctx, req.ProjectID, []string{req.QAID})
	if err != nil {
		return core.Record{}, core.Record{}, err
	}
	defer unlock()
	var out core.Record
	hintKey := req.ProjectID + "\x00" + req.QAID
	err = s.retry(ctx, op, func() (bool, error) {
		ask := append(slices.Clone(s.hints.get(hintKey)), "sa:"+v.Source, "sd:"+v.Source)
		st, hinted, err := s.locateRep(ctx, req.ProjectID, req.QAID, ask)
		if err != nil {
			return false, err
		}
		if st == nil {
			err := s.repeated(ctx, "v", req.ProjectID, eid, &out, ledger.NotFound(req.QAID))
			return err == nil, err
		}
		if err := ledger.MayVote(ctx, st.project); err != nil {
			return false, err
		}
		need := repFields([]*trust.State{st.State}, v.Source)
		var rep reputation
		if st.project == req.ProjectID && hinted != nil && covers(ask, need) {
			rep = reputation{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}
			fillRep(&rep, ask, hinted)
		} else if rep, err = s.readRep(ctx, st.project, []*trust.State{st.State}, v.Source); err != nil {
			return false, err
		}
		s.hints.put(hintKey, need)
		e := st.entry(true)
		s.ledger.Refresh(&e, rep, now)
		before = e.Rec
		ch := s.ledger.Validation(&e, v, rep)
		rec := e.Rec
		st.set(e)
		key := s.k.qa(st.project, st.ID)
		b := newBatch(s.k.event(st.project, "v", req.ProjectID, eid))
		b.version(key, st.ver)
		s.changeOps(b, st.project, st.State.Creator, ch)
		val, err := st.encode(st.ver + 1)
		if err != nil {
			return false, err
		}
		b.op("set", key, val)
		body, err := json.Marshal(withoutText(rec))
		if err != nil {
			return false, err
		}
		code, prev, err := s.commit(ctx, b, string(body))
		switch {
		case err != nil:
			return false, err
		case code == commitRepeated:
			if err := json.Unmarshal([]byte(prev), &out); err != nil {
				return false, err
			}
			out.Question, out.Answer, out.Summary = st.Q, st.A, st.Summary
			return true, nil
		case code == commitApplied:
			out = rec
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return core.Record{}, core.Record{}, err
	}
	return before, out, nil
}

// withoutText is a validation's result as its event key keeps it for 24 h:
// the record without its question, answer and summary, which a repeat
// takes from the current record (the bulk of the bytes of every event key
// at thousands of validations per second). A repeat after the QA was
// deleted returns the record without its text.
func withoutText(r core.Record) core.Record {
	r.Question, r.Answer, r.Summary = "", "", ""
	return r
}

// repeated answers a write whose target vanished: if the event was already
// applied (the QA was deleted since), the stored result is returned, else
// errNF.
func (s *Store) repeated(ctx context.Context, kind, from, eid string, out any, errNF error) error {
	for _, p := range []string{from, core.GlobalProject} {
		v, err := s.rdb.Get(ctx, s.k.event(p, kind, from, eid)).Result()
		if err == nil {
			return json.Unmarshal([]byte(v), out)
		}
		if !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return errNF
}

// RecordHit counts shown/used references; trust never changes. The
// references are grouped by the project that owns each QA, and each group
// is one atomic, deduplicated write.
func (s *Store) RecordHit(ctx context.Context, req core.HitRequest) (core.HitResult, error) {
	const op = "record hit"
	if err := req.Validate(); err != nil {
		return core.HitResult{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.HitResult{}, s.wrap(ctx, op, err)
	}
	now := s.now()
	eid := eventID(req.EventID)
	// Resolve owners once; a QA's owner does not change.
	owners := map[string]string{}
	var order []string
	for _, ref := range req.References {
		if !ref.Shown && !ref.Used {
			continue
		}
		if _, ok := owners[ref.QAID]; ok {
			continue
		}
		st, err := s.locate(ctx, req.ProjectID, ref.QAID)
		if err != nil {
			return core.HitResult{}, s.wrap(ctx, op, err)
		}
		if st == nil {
			continue
		}
		owners[ref.QAID] = st.project
		if !slices.Contains(order, st.project) {
			order = append(order, st.project)
		}
	}
	total := 0
	for _, owner := range order {
		n, err := s.hitGroup(ctx, req, owner, owners, eid, now)
		if err != nil {
			return core.HitResult{}, err
		}
		total += n
	}
	return core.HitResult{Updated: total}, nil
}

func (s *Store) hitGroup(ctx context.Context, req core.HitRequest, owner string, owners map[string]string, eid string, now time.Time) (int, error) {
	var ids []string
	for _, ref := range req.References {
		if owners[ref.QAID] == owner && !slices.Contains(ids, ref.QAID) {
			ids = append(ids, ref.QAID)
		}
	}
	unlock, err := s.lockMany(ctx, owner, ids)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	err = s.retry(ctx, "record hit", func() (bool, error) {
		recs := map[string]*stored{}
		for _, id := range ids {
			st, err := s.readStored(ctx, owner, id)
			if err != nil {
				return false, err
			}
			if st != nil && ledger.Visible(owner, st.Shared, req.ProjectID) {
				recs[id] = st
			}
		}
		b := newBatch(s.k.event(owner, "h", req.ProjectID, eid))
		count := 0
		for _, ref := range req.References {
			st := recs[ref.QAID]
			if st == nil || owners[ref.QAID] != owner {
				continue
			}
			e := st.entry(false)
			if !s.ledger.Hit(&e.Rec, ref, now) {
				continue
			}
			st.set(e)
			count++
		}
		for _, id := range ids {
			st := recs[id]
			if st == nil {
				continue
			}
			key := s.k.qa(owner, id)
			b.version(key, st.ver)
			val, err := st.encode(st.ver + 1)
			if err != nil {
				return false, err
			}
			b.op("set", key, val)
		}
		code, prev, err := s.commit(ctx, b, strconv.Itoa(count))
		switch {
		case err != nil:
			return false, err
		case code == commitRepeated:
			n, err = strconv.Atoi(prev)
			return true, err
		case code == commitApplied:
			n = count
			return true, nil
		}
		return false, nil
	})
	return n, err
}
