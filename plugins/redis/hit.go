package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
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
	unlock, err := s.lockMany(ctx, owner, ids)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	err = s.retry(ctx, "record hit", func() (bool, error) {
		// The records and the reputation entries their last writes needed
		// (repHints) in one round trip; the entries again only if a state
		// names one the hints did not.
		var ask []string
		pipe := s.rdb.Pipeline()
		gets := make([]*redis.StringCmd, len(ids))
		for i, id := range ids {
			gets[i] = pipe.Get(ctx, s.k.qa(owner, id))
			ask = append(ask, s.hints.get(owner+"\x00"+id)...)
		}
		var repCmd *redis.SliceCmd
		if len(ask) > 0 {
			repCmd = pipe.HMGet(ctx, s.k.rep(owner), ask...)
		}
		if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
			return false, err
		}
		recs := map[string]*stored{}
		var states []*trust.State
		for i, id := range ids {
			v, err := gets[i].Result()
			if errors.Is(err, redis.Nil) {
				continue
			} else if err != nil {
				return false, err
			}
			st, err := decodeStored(owner, id, v)
			if err != nil {
				return false, err
			}
			if ledger.Visible(owner, st.Shared, req.ProjectID) {
				recs[id] = st
				states = append(states, st.State)
				s.hints.put(owner+"\x00"+id, repFields([]*trust.State{st.State}))
			}
		}
		rep := reputation{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}
		if need := repFields(states); repCmd != nil && covers(ask, need) {
			vals, err := repCmd.Result()
			if err != nil {
				return false, err
			}
			fillRep(&rep, ask, vals)
		} else {
			r, err := s.readRep(ctx, owner, states)
			if err != nil {
				return false, err
			}
			rep = r
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
			if err := s.keepRefreshed(b, st, rep, trust.Effects{}, now); err != nil {
				return false, err
			}
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
