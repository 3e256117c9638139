package redisstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

// RecordHit counts shown/used references; trust never changes. Each
// reference counts once, so a QA referenced twice counts twice. The
// references are grouped by the project that owns each QA, and each group
// is one atomic, deduplicated write. A reference to a QA whose owner the
// principal does not cover is not counted (ledger.MayHit).
//
// The write of the requesting project's own QAs reads every referenced QA
// in one round trip (locateWithRep, with the reputation entries its QAs
// likely need) and finds the owners of the others, which are written
// after it, one write per owner.
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
	p := req.ProjectID
	var ids []string
	for _, ref := range req.References {
		if (ref.Shown || ref.Used) && !slices.Contains(ids, ref.QAID) {
			ids = append(ids, ref.QAID)
		}
	}
	if len(ids) == 0 {
		return core.HitResult{}, nil
	}
	var out core.HitResult
	var others map[string][]string // owner → its QAs the request references
	var order []string             // the owners of others, in reference order
	err := updateWith(s, ctx, op, ids, &out.Updated, func() (*write, error) {
		out, others, order = core.HitResult{}, map[string][]string{}, nil
		found, guess, err := s.locateWithRep(ctx, p, nil, ids...)
		if err != nil {
			return nil, err
		}
		w := &write{s: s, ctx: ctx, p: p, b: newBatch(s.k.event(p, "h", p, eid))}
		for i, st := range found {
			if st == nil || !ledger.MayHit(ctx, &out, ids[i], st.project) {
				continue
			}
			if st.project == p {
				w.recs = append(w.recs, st)
			} else {
				if others[st.project] == nil {
					order = append(order, st.project)
				}
				others[st.project] = append(others[st.project], ids[i])
			}
		}
		guess.take(w)
		return w, nil
	}, func(w *write) (*int, error) {
		return s.countHits(w, req.References, now)
	})
	if err != nil {
		return core.HitResult{}, err
	}
	for _, owner := range order {
		n := 0
		err := update(s, ctx, op, owner, others[owner], s.k.event(owner, "h", p, eid), &n, func(w *write) (*int, error) {
			for i, st := range w.recs {
				if st != nil && !ledger.Visible(owner, st.Shared, p) {
					w.recs[i] = nil // not counted, and its reputation is not read
				}
			}
			return s.countHits(w, req.References, now)
		})
		if err != nil {
			return core.HitResult{}, err
		}
		out.Updated += n
	}
	return out, nil
}

// countHits applies each of refs to the QA of w it names (ledger.Hit) and
// queues their write-back; the result is the count of references applied
// (its JSON is the decimal count). nil when w holds no QA: nothing to
// write.
func (s *Store) countHits(w *write, refs []core.HitRef, now time.Time) (*int, error) {
	recs := map[string]*stored{}
	for _, st := range w.recs {
		if st != nil {
			recs[st.ID] = st
		}
	}
	if len(recs) == 0 {
		return nil, nil
	}
	count := 0
	for _, ref := range refs {
		st := recs[ref.QAID]
		if st == nil {
			continue
		}
		e := st.entry(false)
		if s.ledger.Hit(&e.Rec, ref, now) {
			st.set(e)
			count++
		}
	}
	for _, st := range w.recs {
		if st == nil {
			continue
		}
		if err := w.put(st, ledger.Change{}, now); err != nil {
			return nil, err
		}
	}
	return &count, nil
}
