package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

// batch is one atomic write of a project: the event key, version checks
// and the operations commitScript applies.
type batch struct {
	keys   []string
	kidx   map[string]int
	checks []any
	nCheck int
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
	b.nCheck++
}

// below requires the counter field f of hash k to be below max; the
// commit answers commitAtMax otherwise.
func (b *batch) below(k, f string, max int) {
	b.checks = append(b.checks, "hlt", b.key(k), strconv.Itoa(max)+":"+f)
	b.nCheck++
}

// absentField requires hash k to have no field f.
func (b *batch) absentField(k, f string) {
	b.checks = append(b.checks, "hnx", b.key(k), f)
	b.nCheck++
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

// commit runs the batch. For a repeated event it returns the stored result.
func (s *Store) commit(ctx context.Context, b *batch, result string) (int, string, error) {
	s.feed(b)
	args := make([]any, 0, 3+len(b.checks)+len(b.ops))
	args = append(args, int64(eventTTL/time.Second), result, b.nCheck)
	args = append(args, b.checks...)
	args = append(args, b.ops...)
	v, err := s.eval(ctx, commitScript.get(), b.keys, args...).Slice()
	if err != nil {
		return 0, "", err
	}
	if len(v) == 0 {
		return 0, "", errors.New("empty commit reply")
	}
	code, _ := v[0].(int64)
	if code == commitRepeated && len(v) > 1 {
		prev, _ := v[1].(string)
		return commitRepeated, prev, nil
	}
	return int(code), "", nil
}

// retry runs attempt until it reports done, backing off with jitter after
// a conflict, at most maxCommitAttempts times.
func (s *Store) retry(ctx context.Context, op string, attempt func() (bool, error)) error {
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
