package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// readRep reads the reputation entries of the states' sources (and extra
// ones) and of their creators from the owning project's book, through the
// batcher: concurrent writers share its round trip.
func (s *Store) readRep(ctx context.Context, project string, states []*trust.State, extra ...string) (reputation, error) {
	rep := reputation{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}
	fields := repFields(states, extra...)
	if len(fields) == 0 {
		return rep, nil
	}
	pipe := s.rdb.Pipeline()
	cmd := pipe.HMGet(ctx, s.k.rep(project), fields...)
	if err := s.batch.exec(ctx, pipe); err != nil {
		return rep, err
	}
	fillRep(&rep, fields, cmd.Val())
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

// locate finds each of ids visible to project from (found[i] is the QA
// ids[i], nil when not visible): its own, the global project's, or one
// shared with it, in one round trip; the QAs other projects share with
// from take one more.
func (s *Store) locate(ctx context.Context, from string, ids ...string) ([]*stored, error) {
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
	if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	found := make([]*stored, len(ids))
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
				return nil, err
			}
			continue
		}
		if glob[i] == nil {
			continue
		}
		if v, err := glob[i].Result(); err == nil {
			if found[i], err = s.last.decode(core.GlobalProject, id, v); err != nil {
				return nil, err
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
		return found, nil
	}
	if err := s.batch.exec(ctx, sharedPipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for _, r := range shared {
		v, err := r.get.Result()
		if errors.Is(err, redis.Nil) {
			continue
		} else if err != nil {
			return nil, err
		}
		st, err := decodeStored(r.owner, ids[r.i], v)
		if err != nil {
			return nil, err
		}
		if slices.Contains(st.Shared, from) {
			found[r.i] = st
		}
	}
	return found, nil
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
