package redisstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

// lockMany locks the stripes of the QAs ids in a fixed order and returns
// the unlock function. Waiting stops when ctx is done. A stripe is the
// qa_id's alone (qa_ids are unique across projects), so the writers of
// one QA wait for each other whichever project writes: a validation from
// a project the QA is shared with, or of a global QA, included.
func (s *Store) lockMany(ctx context.Context, ids []string) (func(), error) {
	var idx []int
	for _, id := range ids {
		h := fnv.New32a()
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
// and one per project it is shared into (ledger.SharedInto).
func indexScopes(project string, shared []string) []string {
	out := []string{ownScope}
	for _, p := range ledger.SharedInto(project, shared) {
		out = append(out, sharedScope(p))
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
	// A batch writes one project, so one token per batch. This process's
	// cache forgets the owner: its next search reads the lists it needs
	// with the version instead of finding the cached ones stale only then
	// and reading them in one more round trip.
	if !b.ivSet {
		b.op("hset", s.k.stats(p), "iv", newID(""))
		b.ivSet = true
		s.cache.drop(p)
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

// registerShared records, under the tag of each project id is shared into
// (ledger.SharedInto), that project shares QA id with it (read by search
// and by locate). It runs before the owner's write; a stale entry is
// harmless (the record is checked).
func (s *Store) registerShared(ctx context.Context, project, id string, shared []string) error {
	pipe := s.rdb.Pipeline()
	s.queueShared(ctx, pipe, project, id, shared)
	if len(pipe.Cmds()) == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	return err
}

// queueShared queues registerShared's commands on pipe.
func (s *Store) queueShared(ctx context.Context, pipe redis.Pipeliner, project, id string, shared []string) {
	for _, t := range ledger.SharedInto(project, shared) {
		pipe.SAdd(ctx, s.k.sharers(t), project)
		pipe.HSet(ctx, s.k.sharedIn(t), id, project)
	}
}

// nextDocs reserves n document ids of project.
func (s *Store) nextDocs(ctx context.Context, project string, n int) (uint64, error) {
	last, err := s.rdb.HIncrBy(ctx, s.k.stats(project), "seq", int64(n)).Result()
	if err != nil {
		return 0, err
	}
	return s.docsUpTo(ctx, project, n, last)
}

// docsUpTo returns the first of the n document ids of project whose
// reservation (HINCRBY of the stats' "seq" by n) answered last.
func (s *Store) docsUpTo(ctx context.Context, project string, n int, last int64) (uint64, error) {
	if last >= 1<<32 {
		return 0, fmt.Errorf("project %s has used all document ids: %w", project, core.ErrTooLarge)
	}
	if last == int64(n) {
		// The project's first QAs: its statistics hold every QA it has.
		if err := s.markFresh(ctx, project); err != nil {
			return 0, err
		}
	}
	return uint64(last) - uint64(n) + 1, nil
}
