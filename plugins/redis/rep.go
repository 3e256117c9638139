package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

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
	found, vals, err := s.locateMany(ctx, from, []string{id}, repFields)
	if err != nil || found[0] == nil {
		return nil, nil, err
	}
	if found[0].project != from {
		vals = nil
	}
	return found[0], vals, nil
}

// locateMany is locate for each of ids (found[i] is the QA ids[i], nil
// when not visible) in one round trip, with the reputation fields
// repFields of from's book; the QAs other projects share with from take
// one more.
func (s *Store) locateMany(ctx context.Context, from string, ids, repFields []string) (found []*stored, vals []any, err error) {
	pipe := s.rdb.Pipeline()
	own := make([]*redis.StringCmd, len(ids))
	glob := make([]*redis.StringCmd, len(ids))
	shin := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		own[i] = pipe.Get(ctx, s.k.qa(from, id))
		if from != core.GlobalProject {
			glob[i] = pipe.Get(ctx, s.k.qa(core.GlobalProject, id))
			shin[i] = pipe.HGet(ctx, s.k.sharedIn(from), id)
		}
	}
	var repCmd *redis.SliceCmd
	if len(repFields) > 0 {
		repCmd = pipe.HMGet(ctx, s.k.rep(from), repFields...)
	}
	if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	if repCmd != nil {
		if vals, err = repCmd.Result(); err != nil {
			return nil, nil, err
		}
	}
	found = make([]*stored, len(ids))
	// The QAs shared with from: read from their owners, kept while they
	// still name from.
	type sharedRead struct {
		i     int
		owner string
		get   *redis.StringCmd
	}
	var shared []sharedRead
	var sharedPipe redis.Pipeliner
	for i, id := range ids {
		if v, err := own[i].Result(); err == nil {
			if found[i], err = s.last.decode(from, id, v); err != nil {
				return nil, nil, err
			}
			continue
		}
		if glob[i] == nil {
			continue
		}
		if v, err := glob[i].Result(); err == nil {
			if found[i], err = s.last.decode(core.GlobalProject, id, v); err != nil {
				return nil, nil, err
			}
			continue
		}
		owner, err := shin[i].Result()
		if err != nil || owner == "" || owner == from {
			continue
		}
		if sharedPipe == nil {
			sharedPipe = s.rdb.Pipeline()
		}
		shared = append(shared, sharedRead{i, owner, sharedPipe.Get(ctx, s.k.qa(owner, id))})
	}
	if len(shared) == 0 {
		return found, vals, nil
	}
	if err := s.batch.exec(ctx, sharedPipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	for _, r := range shared {
		v, err := r.get.Result()
		if errors.Is(err, redis.Nil) {
			continue
		} else if err != nil {
			return nil, nil, err
		}
		st, err := decodeStored(r.owner, ids[r.i], v)
		if err != nil {
			return nil, nil, err
		}
		if slices.Contains(st.Shared, from) {
			found[r.i] = st
		}
	}
	return found, vals, nil
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
