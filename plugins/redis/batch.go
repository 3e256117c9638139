package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends the pipelines of concurrent callers together (automatic
// pipelining): a caller's commands join a queue; while fewer than max
// batches are in flight the caller sends the whole queue itself, else the
// batch in flight that finishes first sends what queued up meanwhile. Under
// load one round trip (one write and one read on each side) then carries
// the commands of several searches; alone, a caller sends at once, as
// before. Only reads and idempotent writes go through it: a batch is one
// go-redis pipeline, which retries on a network error like any other.
type batcher struct {
	rdb redis.UniversalClient
	max int // batches in flight at most

	mu    sync.Mutex
	busy  int
	queue []*batchCall

	sent atomic.Int64 // batches sent (tests)
}

// batchesInFlight is how many batches the store has out at once: more
// than one, so that one slow round trip (a large cold posting list) does
// not hold up every search, and few, so that batches form under load.
const batchesInFlight = 2

// batchCall is one caller's commands waiting for a batch.
type batchCall struct {
	ctx  context.Context
	cmds []redis.Cmder
	done chan struct{}
}

func newBatcher(rdb redis.UniversalClient, max int) *batcher {
	return &batcher{rdb: rdb, max: max}
}

// exec sends the commands queued on pipe (which the caller never Execs)
// and returns the first command's error, as pipe.Exec would; the
// commands carry their own results. When ctx ends first it returns at
// once an *abandonedError (wrapping ctx's error): the commands may still
// be sent, and the caller must not read them.
func (b *batcher) exec(ctx context.Context, pipe redis.Pipeliner) error {
	cmds := pipe.Cmds()
	if len(cmds) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return &abandonedError{err}
	}
	c := &batchCall{ctx: ctx, cmds: cmds, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.busy >= b.max {
		b.mu.Unlock()
		select {
		case <-c.done:
			return firstErr(cmds)
		case <-ctx.Done():
			return &abandonedError{ctx.Err()}
		}
	}
	b.busy++
	batch := b.take()
	b.mu.Unlock()
	b.send(batch)
	b.mu.Lock()
	if len(b.queue) > 0 {
		// Callers queued while this batch was out: hand them to a new
		// sender rather than make this caller wait for their round trip.
		go b.drain(b.take())
	} else {
		b.busy--
	}
	b.mu.Unlock()
	return firstErr(cmds)
}

// abandonedError is exec's error when the caller's context ended before
// its commands were answered.
type abandonedError struct{ err error }

func (e *abandonedError) Error() string { return e.err.Error() }
func (e *abandonedError) Unwrap() error { return e.err }

// take empties the queue (b.mu held).
func (b *batcher) take() []*batchCall {
	batch := b.queue
	b.queue = nil
	return batch
}

// drain sends batch, then whatever queued meanwhile, until the queue is
// empty; it holds one of the busy slots.
func (b *batcher) drain(batch []*batchCall) {
	for {
		b.send(batch)
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.busy--
			b.mu.Unlock()
			return
		}
		batch = b.take()
		b.mu.Unlock()
	}
}

// send executes the commands of batch's callers that still wait as one
// pipeline, bounded by the latest of their deadlines (ReadTimeout +
// WriteTimeout for one without), and wakes every caller. A caller that
// sends its own batch is thus held at most until the latest deadline of
// the callers it sends for, not the client's timeouts.
func (b *batcher) send(batch []*batchCall) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	now := time.Now()
	var dl time.Time
	var cmds []redis.Cmder
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			for _, cmd := range c.cmds {
				cmd.SetErr(err) // not sent
			}
			continue
		}
		d, ok := c.ctx.Deadline()
		if !ok {
			d = now.Add(ReadTimeout + WriteTimeout)
		}
		if d.After(dl) {
			dl = d
		}
		cmds = append(cmds, c.cmds...)
	}
	if len(cmds) == 0 {
		return
	}
	b.sent.Add(1)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	pipe := b.rdb.Pipeline()
	_ = pipe.BatchProcess(ctx, cmds...)
	_, err := pipe.Exec(ctx)
	var reply redis.Error
	if err != nil && !errors.As(err, &reply) {
		// No answer at all (no connection, a timeout): go-redis does not
		// always set that on the commands themselves.
		for _, cmd := range cmds {
			if cmd.Err() == nil {
				cmd.SetErr(err)
			}
		}
	}
}

// firstErr is the error of the first failed command, as Pipeliner.Exec
// reports it (redis.Nil included: callers treat it as they did there).
func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return err
		}
	}
	return nil
}

// eval runs a script through the batcher (EVALSHA), falling back to a
// script.Run of its own (EVAL) when the server does not have the script
// yet. The reply is read as from sc.Run.
func (s *Store) eval(ctx context.Context, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	pipe := s.rdb.Pipeline()
	cmd := sc.EvalSha(ctx, pipe, keys, args...)
	err := s.batch.exec(ctx, pipe)
	var gone *abandonedError
	switch {
	case errors.As(err, &gone):
		c := redis.NewCmd(ctx)
		c.SetErr(err)
		return c
	case err != nil && redis.HasErrorPrefix(err, "NOSCRIPT"):
		return sc.Run(ctx, s.rdb, keys, args...)
	}
	return cmd
}
