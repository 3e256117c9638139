package redisstore

// The qa_id index: a qa_id belongs to one project across the store, as on
// the embedded store, so a new QA under an id a QA of another project holds
// is refused (ledger.IDOfAnotherProject) instead of becoming a second QA
// there. A project's keys share one cluster slot and the index cannot (it
// spans projects), so the index is not part of the project's atomic commit:
// a write claims its id in the index first (claimIDs), then commits.
//
// A claim is "<project> <claimed at>". It holds while the owner's QA exists
// or while the owner's commit may still be under way (claimLease after the
// claim); past that, a claim whose QA does not exist is stale and another
// project takes it over (compare-and-set on the old claim). So a crash
// between claim and commit loses nothing (no QA was written; the same
// project's retry finds its own claim) and blocks the id for other projects
// for at most claimLease. A deleted QA's claim is stamped 0 (unclaimScript), so
// another project takes it over at once.
// A claim is never released after the commit, except the one of a
// generated id whose candidate folded into another QA (no other writer
// knows that id).
//
// The index is built once from every project's QAs on the first claim of a
// store that has none (buildIDIndex, marked by idsBuilt). QAs a process
// without the index writes after that are not in it.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/trust/ledger"
)

// claimLease is how long a claim whose QA does not exist holds: longer
// than any commit's retries (maxCommitAttempts) and an import's chunks.
const claimLease = 10 * time.Minute

// claimIDScript sets qa_id ARGV[1] in the index bucket KEYS[1] to the claim
// ARGV[2] when it is unset or still the claim ARGV[3] (a stale claim being
// taken over; "" for none), returning ""; else it returns the claim held.
var claimIDScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and v ~= ARGV[3] then return v end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ''
`)

// releaseIDScript removes qa_id ARGV[1] from the index bucket KEYS[1] if it
// still holds the claim ARGV[2]: a project's claim on a generated id
// whose candidate was not stored under it (run by release: a claim left
// behind on a random id blocks nothing, another project's claim takes it
// over once stale).
var releaseIDScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
`)

func claimValue(project string, at time.Time) string {
	return project + " " + strconv.FormatInt(at.UnixMilli(), 36)
}

func parseClaim(v string) (project string, at time.Time) {
	project, ms, _ := strings.Cut(v, " ")
	n, _ := strconv.ParseInt(ms, 36, 64)
	return project, time.UnixMilli(n)
}

// claimIDs claims every id of ids for project p, as mine
// (claimValue(p, now)), before the write that creates their QAs. An id
// another project holds is an error; bad is its index.
func (s *Store) claimIDs(ctx context.Context, p string, ids []string, now time.Time) (bad int, err error) {
	if err := s.refusal(); err != nil {
		return 0, err
	}
	if err := s.buildIDIndex(ctx); err != nil {
		return 0, err
	}
	mine := claimValue(p, now)
	const perPipe = 1000
	for first := 0; first < len(ids); first += perPipe {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.Cmd, 0, perPipe)
		for _, id := range ids[first:min(first+perPipe, len(ids))] {
			cmds = append(cmds, s.queueClaim(ctx, pipe, id, mine))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
		for i, c := range cmds {
			held, _ := c.Text()
			if err := s.claimHeld(ctx, p, ids[first+i], held, mine, now); err != nil {
				return first + i, err
			}
		}
	}
	return 0, nil
}

// queueClaim queues on pipe the claim mine of id (claimIDScript); its
// answer is the claim held before, "" for none.
func (s *Store) queueClaim(ctx context.Context, pipe redis.Pipeliner, id, mine string) *redis.Cmd {
	return claimIDScript.Eval(ctx, pipe, []string{s.k.ids(id)}, id, mine, "")
}

// claimHeld decides p's claim mine of id, whose claim script (queueClaim)
// answered v, the claim held before: none ("") or p's own keeps mine;
// so does p's own QA under id (from before the index); another project's
// claim that holds (claimLease) refuses the id; a stale one is taken over.
func (s *Store) claimHeld(ctx context.Context, p, id, v, mine string, now time.Time) error {
	for tries := 0; v != ""; tries++ {
		owner, at := parseClaim(v)
		if owner == p {
			return nil
		}
		if tries == 3 {
			return ledger.IDOfAnotherProject(id)
		}
		pipe := s.rdb.Pipeline()
		own := pipe.Exists(ctx, s.k.qa(p, id))
		theirs := pipe.Exists(ctx, s.k.qa(owner, id))
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		if own.Val() > 0 {
			return nil
		}
		if theirs.Val() > 0 || now.Sub(at) < claimLease {
			return ledger.IDOfAnotherProject(id)
		}
		var err error
		if v, err = s.eval(ctx, claimIDScript, []string{s.k.ids(id)}, id, mine, v).Text(); err != nil {
			return err
		}
	}
	return nil
}

// unclaimScript stamps the claim of qa_id ARGV[1] in the index bucket
// KEYS[1] 0 if project ARGV[2] holds it: once that project's QA is
// deleted, another project takes the id over at once, while the
// project's own new QA under the id still finds its claim.
var unclaimScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, #ARGV[2] + 1) == ARGV[2] .. ' ' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' 0')
end
return 1
`)

// release runs sc on key to give back what this store holds there (a
// claim, a lock) once the work it guarded is over, ignoring its outcome.
// It outlives the caller's cancellation but not by more than
// releaseTimeout: when Redis is down the work has already failed, and
// what is left behind lapses (a stale claim, a lock's lifetime), so the
// caller's answer is not held up by dial retries.
func (s *Store) release(ctx context.Context, sc *redis.Script, key string, args ...any) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_ = s.eval(ctx, sc, []string{key}, args...).Err()
}

// releaseTimeout bounds release.
const releaseTimeout = 100 * time.Millisecond

// buildIDIndex fills the qa_id index from every project's QAs, once per
// store (idsBuilt): existing claims are kept (HSETNX), the built ones are
// stamped 0 (they hold while their QA exists). An index in the first
// layout (oldIDBuckets) has its buckets merged into today's first
// (mergeOldIDBuckets) instead.
func (s *Store) buildIDIndex(ctx context.Context) error {
	if s.idsReady.Load() {
		return nil
	}
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	if s.idsReady.Load() {
		return nil
	}
	layout, err := s.rdb.Get(ctx, s.k.idsBuilt()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	switch layout {
	case idsLayout:
	case "":
		if err := s.fillIDIndex(ctx); err != nil {
			return err
		}
	default:
		if err := s.mergeOldIDBuckets(ctx); err != nil {
			return err
		}
	}
	if layout != idsLayout {
		if err := s.rdb.Set(ctx, s.k.idsBuilt(), idsLayout, 0).Err(); err != nil {
			return err
		}
	}
	s.idsReady.Store(true)
	return nil
}

// fillIDIndex claims the id of every QA of every project (buildIDIndex).
func (s *Store) fillIDIndex(ctx context.Context) error {
	projects, err := s.rdb.SMembers(ctx, s.k.projects()).Result()
	if err != nil {
		return err
	}
	total := 0
	for _, p := range projects {
		es, err := s.entries(ctx, p)
		if err != nil {
			return err
		}
		v := claimValue(p, time.UnixMilli(0))
		for first := 0; first < len(es); first += 1000 {
			pipe := s.rdb.Pipeline()
			for _, e := range es[first:min(first+1000, len(es))] {
				pipe.HSetNX(ctx, s.k.ids(e.id), e.id, v)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
		total += len(es)
	}
	if total > 0 {
		s.cfg.logger.InfoContext(ctx, "redis: built the qa_id index", "qas", total, "projects", len(projects))
	}
	return nil
}

// mergeOldIDBuckets moves the claims of the first layout's buckets from
// idBuckets up into bucket n % idBuckets, a chunk of buckets at a time:
// their claims are written (HSETNX: a claim already there stays) before
// the buckets are deleted, so a failure half way loses none (the next
// process merges again). Processes of the first layout must not run on the store
// meanwhile or after: their claims would go to the buckets merged.
func (s *Store) mergeOldIDBuckets(ctx context.Context) error {
	const perPipe = 256
	moved := 0
	for first := idBuckets; first < oldIDBuckets; first += perPipe {
		pipe := s.rdb.Pipeline()
		reads := make([]*redis.MapStringStringCmd, 0, perPipe)
		for n := first; n < first+perPipe; n++ {
			reads = append(reads, pipe.HGetAll(ctx, s.k.idsBucket(n)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		merge, drop := s.rdb.Pipeline(), s.rdb.Pipeline()
		for i, r := range reads {
			claims := r.Val()
			if len(claims) == 0 {
				continue
			}
			for id, v := range claims {
				merge.HSetNX(ctx, s.k.ids(id), id, v)
			}
			drop.Del(ctx, s.k.idsBucket(first+i))
			moved += len(claims)
		}
		if merge.Len() == 0 {
			continue
		}
		if _, err := merge.Exec(ctx); err != nil {
			return err
		}
		if _, err := drop.Exec(ctx); err != nil {
			return err
		}
	}
	if moved > 0 {
		s.cfg.logger.InfoContext(ctx, "redis: merged the qa_id index into fewer buckets", "claims", moved, "buckets", idBuckets)
	}
	return nil
}
