package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// loadHits reads the records of hits (nil where a record vanished), in
// hit order: one pipeline maps doc ids to qa_ids, one reads the records.
// With shared, the records current in the head memo are not read, and
// those read are remembered: the caller only reads them.
func (s *Store) loadHits(ctx context.Context, src *source, hits []retrieval.Hit, shared bool) ([]*stored, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	// doc id → qa_id: from the cache, else one pipeline.
	owners := make([]string, len(hits))
	docs := make([]uint64, len(hits))
	want := map[string][]uint64{}
	for i, h := range hits {
		owners[i], docs[i] = src.scopes[h.Doc>>32].owner, h.Doc&(1<<32-1)
		want[owners[i]] = append(want[owners[i]], docs[i])
	}
	entries, _, err := s.readValues(ctx, kindDoc, src.iv, want)
	if err != nil {
		return nil, err
	}
	qaIDs := make([]string, len(hits))
	for i := range hits {
		qaIDs[i], _ = docEntry(entries[owners[i]][docs[i]])
	}
	out := make([]*stored, len(hits))
	if shared {
		// Records current at the owner's record version need no read.
		hvs := make([]string, len(hits))
		for i, o := range owners {
			hvs[i] = src.hv[o]
		}
		s.heads.current(owners, qaIDs, hvs, out)
	}
	// The other records: one MGET per owner (its keys share the owner's
	// hash tag), all in one pipeline.
	type mget struct {
		keys []string
		at   []int // hit index of each key
		cmd  *redis.SliceCmd
	}
	var byOwner []*mget
	group := map[string]*mget{}
	for i := range hits {
		if qaIDs[i] == "" || out[i] != nil {
			continue
		}
		g := group[owners[i]]
		if g == nil {
			g = &mget{}
			group[owners[i]] = g
			byOwner = append(byOwner, g)
		}
		g.keys = append(g.keys, s.k.qa(owners[i], qaIDs[i]))
		g.at = append(g.at, i)
	}
	if len(byOwner) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	for _, g := range byOwner {
		g.cmd = pipe.MGet(ctx, g.keys...)
		if shared {
			s.headReads.Add(int64(len(g.keys)))
		}
	}
	if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	var read []*stored
	var raws []int
	for _, g := range byOwner {
		vals, err := g.cmd.Result()
		if err != nil {
			return nil, err
		}
		for j, v := range vals {
			// A record that vanished since its doc id was read is
			// skipped.
			str, ok := v.(string)
			if !ok || j >= len(g.at) {
				continue
			}
			i := g.at[j]
			if out[i], err = decodeStored(owners[i], qaIDs[i], str); err != nil {
				return nil, err
			}
			read, raws = append(read, out[i]), append(raws, len(str))
		}
	}
	if shared {
		s.heads.put(read, raws, src.hv)
	}
	return out, nil
}

// followChanges brings the head memo up to the record version of each
// owner of hits (one changesScript call for each owner it is behind on:
// the records changed since it last saw the owner stop being current) and
// sets src.hv[owner] to the version the memo is at, the one its current
// heads are of.
func (s *Store) followChanges(ctx context.Context, src *source, hits []retrieval.Hit) error {
	if s.heads == nil {
		return nil
	}
	done := make(map[string]bool, len(src.scopes))
	for _, h := range hits {
		owner := src.scopes[h.Doc>>32].owner
		if done[owner] {
			continue
		}
		done[owner] = true
		hv, at := src.hv[owner], s.heads.at(owner)
		if hv == "" || hv == at {
			continue
		}
		v, err := s.eval(ctx, changesScript, []string{s.k.stats(owner), s.k.changes(owner)}, at).Slice()
		if err != nil {
			return err
		}
		cur, _ := v[0].(string)
		var ids []string
		restart := len(v) > 1 && v[1] == "!"
		if len(v) > 1 && v[1] == "+" {
			for _, e := range v[2:] {
				str, _ := e.(string)
				ids = append(ids, strings.Fields(str)...)
			}
		}
		s.heads.advance(owner, at, cur, ids, restart)
		src.hv[owner] = cur
	}
	return nil
}

// repFor reads the reputation entries the states need, one pipeline for
// all owning projects: those the head memo does not hold current at the
// record version hv[project] the search followed the project to (any
// write of the book since would have been in the change feed).
func (s *Store) repFor(ctx context.Context, sts []*stored, hv map[string]string) (map[string]reputation, error) {
	states := map[string][]*trust.State{}
	for _, st := range sts {
		if st != nil {
			states[st.project] = append(states[st.project], st.State)
		}
	}
	out := map[string]reputation{}
	// A project's reads: the fields it needs, their values (the memo's
	// first), and the command reading those the memo lacks.
	type repRead struct {
		fields  []string
		vals    []any
		missing []int
		cmd     *redis.SliceCmd
	}
	reads := make(map[string]*repRead, len(states))
	var pipe redis.Pipeliner
	for p, sts := range states {
		out[p] = reputation{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}
		r := &repRead{fields: repFields(sts)}
		if len(r.fields) == 0 {
			continue
		}
		reads[p] = r
		r.vals = make([]any, len(r.fields))
		if r.missing = s.heads.repCurrent(p, hv[p], r.fields, r.vals); len(r.missing) == 0 {
			continue
		}
		ask := make([]string, len(r.missing))
		for j, i := range r.missing {
			ask[j] = r.fields[i]
		}
		if pipe == nil {
			pipe = s.rdb.Pipeline()
		}
		r.cmd = pipe.HMGet(ctx, s.k.rep(p), ask...)
		s.repReads.Add(int64(len(ask)))
	}
	if pipe != nil {
		if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
	}
	for p, r := range reads {
		if r.cmd != nil {
			got, err := r.cmd.Result()
			if err != nil {
				return nil, err
			}
			for j, i := range r.missing {
				r.vals[i] = got[j]
			}
			s.heads.putRep(p, hv[p], r.fields, r.vals)
		}
		rep := out[p]
		fillRep(&rep, r.fields, r.vals)
	}
	return out, nil
}

// Search returns the visible QAs matching req.Query in Rank order. It reads
// the postings of the query's terms (never a scan of the project), then
// only the records of the best lexical candidates.
func (s *Store) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	const op = "search"
	if err := ctx.Err(); err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	if err := req.Normalize(); err != nil {
		return nil, fmt.Errorf("redis: %s: %w", op, err)
	}
	if strings.TrimSpace(req.Query) == "" {
		return []core.Match{}, nil
	}
	now := s.cfg.clock().UTC()
	src, err := s.newSource(ctx, req.ProjectID, req.Query, false)
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	// Only matches at or above min_score survive Rank: the scorer skips
	// the rest (and the postings only they would need), and their records
	// are never read.
	hits, err := s.scorer.SearchTerms(ctx, src, src.terms, ledger.SearchCandidates(req.Limit), req.MinScore)
	src.release()
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	// Rank the records: those current in the memo, the others read.
	if err := s.followChanges(ctx, src, hits); err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	sts, err := s.loadHits(ctx, src, hits, true)
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	reps, err := s.repFor(ctx, sts, src.hv)
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	ms := make([]core.Match, 0, len(sts))
	type found struct {
		st    *stored
		score float64 // its hit's raw score
	}
	byID := make(map[string]found, len(sts))
	for i, st := range sts {
		if st == nil {
			continue
		}
		m, ok := ledger.Rankable(s.refreshRecord(reps[st.project], st, now, false), req.ProjectID, hits[i].Relevance)
		if !ok {
			continue
		}
		byID[st.project+"\x00"+st.ID] = found{st, hits[i].Score}
		ms = append(ms, m)
	}
	ranked := core.Rank(ms, req.MinScore, req.Limit, req.Explain)
	for i, m := range ranked {
		st := byID[m.ProjectID+"\x00"+m.QAID].st
		full := core.MatchFromRecord(s.refreshRecord(reps[st.project], st, now, false), m.Relevance)
		full.Score, full.Explain = m.Score, m.Explain
		detach(&full)
		ranked[i] = full
	}
	// The function words of the query re-rank the answer (see
	// retrieval.Scorer.Rerank).
	s.scorer.RerankMatches(req.Query, ranked, func(i int) float64 {
		return byID[ranked[i].ProjectID+"\x00"+ranked[i].QAID].score
	})
	return core.Rank(ranked, req.MinScore, req.Limit, req.Explain), nil
}

// detach gives m copies of what it shares with a remembered record (its
// tags and the values inside its metadata), so a caller may change them.
func detach(m *core.Match) {
	m.Tags = slices.Clone(m.Tags)
	for k, v := range m.Metadata {
		m.Metadata[k] = cloneJSON(v)
	}
}

// cloneJSON deep-copies a value decoded from JSON into an any.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	}
	return v
}

// Get reads one record visible to projectID.
func (s *Store) Get(ctx context.Context, projectID, qaID string) (core.Record, error) {
	const op = "get"
	if err := core.ValidateProjectID(projectID); err != nil {
		return core.Record{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := core.ValidateQAID(qaID); err != nil {
		return core.Record{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	found, err := s.locate(ctx, projectID, qaID)
	if err != nil {
		return core.Record{}, s.wrap(ctx, op, err)
	}
	st := found[0]
	if st == nil {
		return core.Record{}, fmt.Errorf("redis: %s: %w", op, ledger.NotFound(qaID))
	}
	rep, err := s.readRep(ctx, st.project, []*trust.State{st.State})
	if err != nil {
		return core.Record{}, s.wrap(ctx, op, err)
	}
	return s.refresh(rep, st, s.cfg.clock().UTC()), nil
}
