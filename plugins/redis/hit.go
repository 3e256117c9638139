package redisstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

// RecordHit counts shown/used references; trust never changes. The
// references are grouped by the project that owns each QA, and each group
// is one atomic, deduplicated write. A reference to a QA whose owner the
// principal does not cover is not counted (ledger.MayHit).
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
	var out core.HitResult
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
		if st == nil || !ledger.MayHit(ctx, &out, ref.QAID, st.project) {
			continue
		}
		owners[ref.QAID] = st.project
		if !slices.Contains(order, st.project) {
			order = append(order, st.project)
		}
	}
	for _, owner := range order {
		n, err := s.hitGroup(ctx, req, owner, owners, eid, now)
		if err != nil {
			return core.HitResult{}, err
		}
		out.Updated += n
	}
	return out, nil
}

func (s *Store) hitGroup(ctx context.Context, req core.HitRequest, owner string, owners map[string]string, eid string, now time.Time) (int, error) {
	var ids []string
	for _, ref := range req.References {
		if owners[ref.QAID] == owner && !slices.Contains(ids, ref.QAID) {
			ids = append(ids, ref.QAID)
		}
	}
	n := 0
	err := update(s, ctx, "record hit", owner, ids, nil, s.k.event(owner, "h", req.ProjectID, eid), &n, func(w *write) (*int, error) {
		recs := map[string]*stored{}
		for i, st := range w.recs {
			if st != nil && !ledger.Visible(owner, st.Shared, req.ProjectID) {
				w.recs[i] = nil // not counted, and its reputation is not read
			} else if st != nil {
				recs[st.ID] = st
			}
		}
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
		for _, st := range w.recs {
			if st != nil {
				if err := w.put(st, ledger.Change{}, now); err != nil {
					return nil, err
				}
			}
		}
		return &count, nil // its JSON is the decimal count
	})
	return n, err
}
