package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// batch is one atomic write of a project: the event key, version checks
// and the operations commitScript applies.
type batch struct {
	keys   []string
	kidx   map[string]int
	checks []any // triples: kind, key index, value
	ops    []any
	// appendAt is the ops index of the pending append value per key index:
	// appends to one key coalesce into one operation (bulk imports), unless
	// a removal from that key came in between.
	appendAt map[int]int
	// premAt is the ops index of the last removal per key index: a
	// removal followed by an append of the same document (a re-indexed
	// QA) becomes a no-op, as the append replaces that document's posting.
	premAt map[int]int
	// ivSet: the project's index version is already set by this batch.
	ivSet bool
	// wrote are the records the batch writes (write.put), kept in
	// Store.last once it is applied.
	wrote []lastValue
	// written are the KEYS indexes of the keys set, deleted or
	// incremented: commit lists the records and reputation among them in
	// the project's change feed.
	written []int
}

func newBatch(eventKey string) *batch {
	return &batch{keys: []string{eventKey}, kidx: map[string]int{eventKey: 1}}
}

// key returns the 1-based KEYS index of k.
func (b *batch) key(k string) int {
	if i, ok := b.kidx[k]; ok {
		return i
	}
	b.keys = append(b.keys, k)
	b.kidx[k] = len(b.keys)
	return len(b.keys)
}

// version requires the record at k to be at ver (0: absent).
func (b *batch) version(k string, ver int64) {
	b.checks = append(b.checks, "v", b.key(k), strconv.FormatInt(ver, 10))
}

// below requires the counter field f of hash k to be below max; the
// commit answers commitAtMax otherwise.
func (b *batch) below(k, f string, max int) {
	b.checks = append(b.checks, "hlt", b.key(k), strconv.Itoa(max)+":"+f)
}

// absentField requires hash k to have no field f.
func (b *batch) absentField(k, f string) {
	b.checks = append(b.checks, "hnx", b.key(k), f)
}

func (b *batch) op(name, k string, args ...any) {
	ki := b.key(k)
	switch name {
	case "padd":
		// args: bucket hash key, term, doc (uint64), posting rest
		// (string). Appends of ascending documents to one list coalesce
		// into one operation: bucket key index, term, first doc, last doc,
		// the first posting's rest followed by gap-coded postings.
		doc, rest := args[2].(uint64), args[3].(string)
		if at, ok := b.premAt[ki]; ok && b.ops[at+4] == doc {
			b.ops[at] = "pnop"
			delete(b.premAt, ki)
		}
		if at, ok := b.appendAt[ki]; ok {
			if last := b.ops[at+1].(uint64); doc > last {
				b.ops[at+1] = doc
				b.ops[at+2] = b.ops[at+2].(string) + uvarintGap(doc-last) + rest
				return
			}
		}
		if b.appendAt == nil {
			b.appendAt = map[int]int{}
		}
		b.appendAt[ki] = len(b.ops) + 4
		args = []any{b.key(args[0].(string)), args[1], doc, doc, rest}
	case "prem":
		// args: bucket hash key, term, doc.
		delete(b.appendAt, ki)
		if b.premAt == nil {
			b.premAt = map[int]int{}
		}
		b.premAt[ki] = len(b.ops)
		args = []any{b.key(args[0].(string)), args[1], args[2]}
	case "set", "del":
		delete(b.appendAt, ki)
		delete(b.premAt, ki)
		b.written = append(b.written, ki)
	case "hincrf":
		b.written = append(b.written, ki)
	}
	b.ops = append(b.ops, name, ki)
	b.ops = append(b.ops, args...)
}

// commit outcomes.
const (
	commitConflict = 0
	commitRepeated = 1
	commitApplied  = 2
	commitAtMax    = 3
)

// errAtMax: a counter the batch required below its max (batch.below) is
// at it; nothing was written.
var errAtMax = errors.New("a counter is at its max")

// feed adds to b, once, the entry of the records and reputation it
// changes to their project's change feed (keys.changes): the script sets
// the project's record version to the next one.
func (s *Store) feed(b *batch) {
	var project string
	var ids []string
	seen := map[string]bool{}
	for _, ki := range b.written {
		p, id, rep := s.k.written(b.keys[ki-1])
		if rep {
			id = "~"
		}
		if id == "" || seen[id] {
			continue
		}
		seen[id], project = true, p
		ids = append(ids, id)
	}
	b.written = nil
	if len(ids) == 0 {
		return
	}
	if len(ids) > maxChangedIDs {
		ids = []string{"*"}
	}
	b.ops = append(b.ops, "chg", b.key(s.k.stats(project)), b.key(s.k.changes(project)), strings.Join(ids, " "), newID(""))
}

// retry runs attempt until it reports done, backing off with jitter after
// a conflict, at most maxCommitAttempts times; never in a store a format
// check refused (a newer memex writes it).
func (s *Store) retry(ctx context.Context, op string, attempt func() (bool, error)) error {
	if err := s.refusal(); err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	for i := range maxCommitAttempts {
		done, err := attempt()
		if err != nil {
			return s.wrap(ctx, op, err)
		}
		if done {
			return nil
		}
		s.cfg.logger.DebugContext(ctx, "redis: write conflict, retrying", "op", op, "attempt", i+1)
		d := time.Duration(rand.Int64N(int64(min(time.Millisecond<<min(i, 10), maxCommitBackoff)) + 1))
		select {
		case <-ctx.Done():
			return s.wrap(ctx, op, ctx.Err())
		case <-time.After(d):
		}
	}
	return fmt.Errorf("redis: %s: %w (write contention: %d attempts)", op, core.ErrUnavailable, maxCommitAttempts)
}

// write is one atomic write of QAs of project p: the records read at
// their versions (recs[i] is the QA ids[i] of load, nil when absent), the
// batch that commits it, and what it needs of the project's book.
type write struct {
	s     *Store
	ctx   context.Context
	p     string
	b     *batch
	recs  []*stored
	extra []string    // sources besides the records' whose reputation the write needs
	rep   *reputation // once read
}

// load reads the QAs ids of p for a write with event key evKey and the
// extra sources' reputation, with the commands also queues (when not nil)
// in the same round trip, after load's own; the caller reads their
// results.
func (s *Store) load(ctx context.Context, p string, ids []string, extra []string, evKey string, also func(redis.Pipeliner)) (*write, error) {
	w := &write{s: s, ctx: ctx, p: p, b: newBatch(evKey), recs: make([]*stored, len(ids)), extra: extra}
	pipe := s.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		gets[i] = pipe.Get(ctx, s.k.qa(p, id))
	}
	if also != nil {
		also(pipe)
	}
	if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, id := range ids {
		v, err := gets[i].Result()
		if errors.Is(err, redis.Nil) {
			continue
		} else if err != nil {
			return nil, err
		}
		if w.recs[i], err = s.last.decode(p, id, v); err != nil {
			return nil, fmt.Errorf("record %s: %w", id, err)
		}
	}
	return w, nil
}

// reputation returns the entries of the book the write's records (their
// sources and creators, as read) and its extra sources need, read once.
func (w *write) reputation() (reputation, error) {
	if w.rep != nil {
		return *w.rep, nil
	}
	var states []*trust.State
	for _, st := range w.recs {
		if st != nil {
			states = append(states, st.State)
		}
	}
	rep, err := w.s.readRep(w.ctx, w.p, states, w.extra...)
	if err != nil {
		return rep, err
	}
	w.rep = &rep
	return rep, nil
}

// put queues the write-back of st, which the ledger changed with ch at
// now: the check that st is still at the version read (0: absent), what
// ch asks besides (changeOps), st's share of the statistics and the
// record at its next version.
func (w *write) put(st *stored, ch ledger.Change, now time.Time) error {
	rep, err := w.reputation()
	if err != nil {
		return err
	}
	key := w.s.k.qa(st.project, st.ID)
	w.b.version(key, st.ver)
	w.s.changeOps(w.b, st.project, st.State.Creator, ch)
	w.s.keepRefreshed(w.b, st, rep, ch.Effects, now)
	val, err := st.encode(st.ver + 1)
	if err != nil {
		return err
	}
	w.b.op("set", key, val)
	next := st.clone()
	next.ver, next.sum = next.ver+1, next.contentHash()
	w.b.wrote = append(w.b.wrote, lastValue{val, next})
	return nil
}

// update runs an event on the QAs ids of project p, deduplicated by its
// event key evKey: it loads them and goes on as updateWith.
func update[T any](s *Store, ctx context.Context, op, p string, ids []string, evKey string, out *T,
	apply func(w *write) (*T, error)) error {
	return updateWith(s, ctx, op, ids, out, func() (*write, error) { return s.load(ctx, p, ids, nil, evKey, nil) }, apply)
}

// updateWith runs an event under the locks of the QAs ids (lockMany):
// load reads the write (its records at their versions), apply queues the
// write on w.b and names its result, and the batch commits, the whole
// retried on a conflict. out gets the result, or the stored result of a
// repeated event. A nil result commits nothing: the event is done.
func updateWith[T any](s *Store, ctx context.Context, op string, ids []string, out *T,
	load func() (*write, error), apply func(w *write) (*T, error)) error {
	unlock, err := s.lockMany(ctx, ids)
	if err != nil {
		return err
	}
	defer unlock()
	return s.retry(ctx, op, func() (bool, error) {
		w, err := load()
		if err != nil {
			return false, err
		}
		res, err := apply(w)
		if err != nil || res == nil {
			return err == nil, err
		}
		return commitResult(s, ctx, w.b, *res, out)
	})
}

// commitResult runs b, with res as the event result; out gets res, or
// the stored result of a repeated event. Not done: a version changed.
func commitResult[T any](s *Store, ctx context.Context, b *batch, res T, out *T) (done bool, err error) {
	body, err := json.Marshal(res)
	if err != nil {
		return false, err
	}
	s.feed(b)
	args := make([]any, 0, 3+len(b.checks)+len(b.ops))
	args = append(args, int64(eventTTL/time.Second), string(body), len(b.checks)/3)
	args = append(args, b.checks...)
	args = append(args, b.ops...)
	v, err := s.eval(ctx, commitScript, b.keys, args...).Slice()
	if err != nil {
		return false, err
	}
	if len(v) == 0 {
		return false, errors.New("empty commit reply")
	}
	switch code, _ := v[0].(int64); code {
	case commitAtMax:
		return false, errAtMax
	case commitRepeated:
		prev, _ := v[1].(string)
		return true, json.Unmarshal([]byte(prev), out)
	case commitApplied:
		for _, lv := range b.wrote {
			s.last.put(lv.v, lv.st)
		}
		*out = res
		return true, nil
	}
	return false, nil
}

func eventID(id string) string {
	if id == "" {
		return newID("gen_")
	}
	return id
}

// changeOps adds to b what a ledger event asks the store to persist
// besides the record: the reputation increments in the owning project's
// book and the day counter.
func (s *Store) changeOps(b *batch, project, creator string, ch ledger.Change) {
	rk := s.k.rep(project)
	eff := ch.Effects
	for _, id := range slices.Sorted(maps.Keys(eff.Sources)) {
		inc := eff.Sources[id]
		if inc.Agree != 0 {
			b.op("hincrf", rk, "sa:"+id, strconv.FormatFloat(inc.Agree, 'g', -1, 64))
		}
		if inc.Disagree != 0 {
			b.op("hincrf", rk, "sd:"+id, strconv.FormatFloat(inc.Disagree, 'g', -1, 64))
		}
	}
	if creator != "" && eff.Creator.Proven != 0 {
		b.op("hincrf", rk, "cp:"+creator, strconv.FormatFloat(eff.Creator.Proven, 'g', -1, 64))
	}
	if creator != "" && eff.Creator.Rejected != 0 {
		b.op("hincrf", rk, "cr:"+creator, strconv.FormatFloat(eff.Creator.Rejected, 'g', -1, 64))
	}
	if ch.Day != nil {
		field := ch.Day.Date + ":f"
		if ch.Day.Pass {
			field = ch.Day.Date + ":p"
		}
		b.op("hincr", s.k.days(project), field, 1)
	}
}
