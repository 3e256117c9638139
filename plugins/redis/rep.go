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
	found, _, err := s.locateWithRep(ctx, from, nil, ids...)
	return found, err
}

// locateWithRep is locate that also reads, in its first round trip, the
// reputation entries of from's book a write of the QAs will likely need:
// those the records this process last wrote of them under from
// (lastWritten) and the extra sources name (repGuess; nil when none of
// ids is kept under from). When every one of ids is kept under from, it
// most likely still is from's own: the global and sharing reads are left
// out of the first round trip, and sent in one of their own only for a
// QA whose key under from is gone.
func (s *Store) locateWithRep(ctx context.Context, from string, extra []string, ids ...string) ([]*stored, *repGuess, error) {
	var kept []*trust.State
	for _, id := range ids {
		if st := s.last.peek(from, id); st != nil {
			kept = append(kept, st.State)
		}
	}
	ownOnly := len(kept) == len(ids) && from != core.GlobalProject
	pipe := s.rdb.Pipeline()
	own := make([]*redis.StringCmd, len(ids))
	glob := make([]*redis.StringCmd, len(ids))
	shin := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		own[i] = pipe.Get(ctx, s.k.qa(from, id))
		if from != core.GlobalProject && !ownOnly {
			glob[i], shin[i] = s.queueElsewhere(ctx, pipe, from, id)
		}
	}
	var guess *repGuess
	if len(kept) > 0 {
		if fields := repFields(kept, extra...); len(fields) > 0 {
			guess = &repGuess{project: from, fields: fields, cmd: pipe.HMGet(ctx, s.k.rep(from), fields...)}
		}
	}
	if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	if ownOnly {
		// A QA gone from from's keys: read where else it may be.
		var elsePipe redis.Pipeliner
		for i, id := range ids {
			if !errors.Is(own[i].Err(), redis.Nil) {
				continue
			}
			if elsePipe == nil {
				elsePipe = s.rdb.Pipeline()
			}
			glob[i], shin[i] = s.queueElsewhere(ctx, elsePipe, from, id)
		}
		if elsePipe != nil {
			if err := s.batch.exec(ctx, elsePipe); err != nil && !errors.Is(err, redis.Nil) {
				return nil, nil, err
			}
		}
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
				return nil, nil, err
			}
			continue
		} else if !errors.Is(err, redis.Nil) {
			return nil, nil, err
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
		return found, guess, nil
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
	return found, guess, nil
}

// queueElsewhere queues the reads of where QA id visible to from lives
// when from has no QA id: the global project's key and from's sharing
// pointer.
func (s *Store) queueElsewhere(ctx context.Context, pipe redis.Pipeliner, from, id string) (glob, shin *redis.StringCmd) {
	return pipe.Get(ctx, s.k.qa(core.GlobalProject, id)), pipe.HGet(ctx, s.k.sharedIn(from), id)
}

// repGuess is a read of reputation entries of project's book sent before
// the records they are for were read (locateWithRep): the fields named by
// the records this process last wrote.
type repGuess struct {
	project string
	fields  []string
	cmd     *redis.SliceCmd
}

// take gives w the reputation g read when it is what w.reputation would
// read: the same book and the same fields (those of w's records as read
// and of its extra sources). Otherwise w reads its own.
func (g *repGuess) take(w *write) {
	if g == nil || w.rep != nil || g.project != w.p {
		return
	}
	var states []*trust.State
	for _, st := range w.recs {
		if st != nil {
			states = append(states, st.State)
		}
	}
	fields := repFields(states, w.extra...)
	if len(fields) != len(g.fields) {
		return
	}
	guessed := make(map[string]bool, len(g.fields))
	for _, f := range g.fields {
		guessed[f] = true
	}
	for _, f := range fields {
		if !guessed[f] {
			return
		}
	}
	vals, err := g.cmd.Result()
	if err != nil {
		return
	}
	rep := reputation{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}
	fillRep(&rep, g.fields, vals)
	w.rep = &rep
}

// peek returns the record l keeps for QA id of project (nil when none):
// the kept one itself, not to be changed.
func (l *lastWritten) peek(project, id string) *stored {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[lastKey(project, id)].st
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
