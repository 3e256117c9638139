package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

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
	var out core.Record
	err := update(s, ctx, op, p, []string{req.QAID}, s.k.event(p, "p", p, eid), &out, func(w *write) (*core.Record, error) {
		st := w.recs[0]
		if st == nil {
			return nil, s.repeated(ctx, "p", p, eid, &out, ledger.NotFound(req.QAID))
		}
		rep, err := w.reputation()
		if err != nil {
			return nil, err
		}
		e := st.entry(true)
		reindex := ledger.TextChanged(e.Rec, req)
		if reindex {
			s.indexOps(w.b, st, false)
		}
		ch := s.ledger.Verdict(&e, req, rep, now)
		st.set(e)
		if reindex {
			s.indexOps(w.b, st, true)
		}
		return &e.Rec, w.put(st, ch, now)
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
	var ignored string
	evKey := s.k.event(projectID, "d", projectID, newID("del_"))
	err := update(s, ctx, op, projectID, []string{qaID}, evKey, &ignored, func(w *write) (*string, error) {
		st := w.recs[0]
		if st == nil {
			return nil, ledger.NotFound(qaID)
		}
		key := s.k.qa(projectID, qaID)
		w.b.version(key, st.ver)
		w.b.op("del", key)
		s.indexOps(w.b, st, false)
		s.keepStats(w.b, st, nil)
		return &qaID, nil
	})
	if err != nil {
		return err
	}
	return s.wrap(ctx, op, s.eval(ctx, unclaimScript, []string{s.k.ids(qaID)}, qaID, projectID).Err())
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
	at := map[string][]int{} // indexes in recs
	var order []string
	for i, r := range recs {
		if _, ok := byProject[r.ProjectID]; !ok {
			order = append(order, r.ProjectID)
		}
		byProject[r.ProjectID] = append(byProject[r.ProjectID], r)
		at[r.ProjectID] = append(at[r.ProjectID], i)
	}
	// Every id is claimed before any record is written: an id of another
	// project's QA refuses the import as a whole.
	for _, p := range order {
		ids := make([]string, len(byProject[p]))
		for i, r := range byProject[p] {
			ids[i] = r.QAID
		}
		if bad, err := s.claimIDs(ctx, p, ids, now); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return fmt.Errorf("redis: %s: record %d: %w", op, at[p][bad], err)
			}
			return s.wrap(ctx, op, err)
		}
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

// importChunk writes one chunk of p's records in one commit. A qa_id may
// come twice: the later record replaces the earlier, so the last of each
// is the one written (its version checked once, at the version read).
func (s *Store) importChunk(ctx context.Context, p string, rs []core.Record, now time.Time) error {
	last := map[string]core.Record{}
	var ids []string
	for _, r := range rs {
		if _, seen := last[r.QAID]; !seen {
			ids = append(ids, r.QAID)
		}
		last[r.QAID] = r
	}
	// The chunk's sharing pointers (registerShared), in one round trip.
	pipe := s.rdb.Pipeline()
	for _, id := range ids {
		s.queueShared(ctx, pipe, p, id, last[id].SharedProjects)
	}
	if _, err := pipe.Exec(ctx); err != nil { // none when nothing is shared
		return s.wrap(ctx, "import", err)
	}
	var newDocs []uint64
	var ignored int
	return update(s, ctx, "import", p, ids, s.k.event(p, "i", p, newID("imp_")), &ignored, func(w *write) (*int, error) {
		olds := slices.Clone(w.recs)
		need := 0 // document ids, one per new QA
		for _, old := range olds {
			if old == nil {
				need++
			}
		}
		if len(newDocs) < need {
			first, err := s.nextDocs(ctx, p, need-len(newDocs))
			if err != nil {
				return nil, err
			}
			for d := range uint64(need - len(newDocs)) {
				newDocs = append(newDocs, first+d)
			}
		}
		free := newDocs
		// The write's records are the imported ones: the reputation read
		// is that of their sources and creators.
		for i, id := range ids {
			e := s.ledger.Import(last[id], now)
			w.recs[i] = toStored(e.Rec, e.State, 0)
		}
		for i, st := range w.recs {
			if old := olds[i]; old != nil {
				s.indexOps(w.b, old, false)
				st.Doc, st.ver = old.Doc, old.ver
			} else {
				st.Doc, free = free[0], free[1:]
			}
			if err := w.put(st, ledger.Change{}, now); err != nil {
				return nil, err
			}
			s.indexOps(w.b, st, true)
		}
		n := len(rs)
		return &n, nil
	})
}

// Expire deprecates candidates never validated within the candidate TTL,
// at most batch of them (batch ≤ 0: all), across every project. Only
// records created before now − TTL are read, and each chunk of importChunk
// of them is one write.
func (s *Store) Expire(ctx context.Context, now time.Time, batch int) (int, error) {
	const op = "expire"
	projects, err := s.rdb.SMembers(ctx, s.k.projects()).Result()
	if err != nil {
		return 0, s.wrap(ctx, op, err)
	}
	slices.Sort(projects)
	cutoff := s.ledger.ExpiryCutoff(now).UnixMilli()
	n := 0
	for _, p := range projects {
		if batch > 0 && n >= batch {
			break
		}
		all, err := s.entries(ctx, p)
		if err != nil {
			return n, s.wrap(ctx, op, err)
		}
		var ids []string
		for _, e := range slices.Backward(all) { // oldest first
			if e.score > cutoff {
				break
			}
			ids = append(ids, e.id)
		}
		for chunk := range slices.Chunk(ids, importChunk) {
			if batch > 0 && n >= batch {
				break
			}
			var changed int
			err := update(s, ctx, op, p, chunk, s.k.event(p, "x", p, newID("exp_")), &changed, func(w *write) (*int, error) {
				k := 0 // changed by this write
				for _, st := range w.recs {
					if st == nil || (batch > 0 && n+k >= batch) {
						continue
					}
					e := st.entry(false)
					if !s.ledger.Expire(&e, trust.NoReputation, now) {
						continue
					}
					st.set(e)
					if err := w.put(st, ledger.Change{}, now); err != nil {
						return nil, err
					}
					k++
				}
				if k == 0 {
					return nil, nil
				}
				return &k, nil
			})
			if err != nil {
				return n, err
			}
			n += changed
		}
	}
	return n, nil
}
