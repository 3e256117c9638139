package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
)

// IssueReceipt stores a receipt until its expiry; idempotent per id.
func (s *Store) IssueReceipt(ctx context.Context, r core.Receipt) error {
	return s.IssueReceipts(ctx, []core.Receipt{r})[0]
}

// IssueReceipts stores several receipts in one round trip (a search issues
// one per match and one for the whole result). errs[i] is receipt i's
// error; each receipt is stored on its own (idempotent per id: a plain
// SET NX, so a retried write never resets a receipt already redeemed).
func (s *Store) IssueReceipts(ctx context.Context, rs []core.Receipt) (errs []error) {
	const op = "issue receipt"
	errs = make([]error, len(rs))
	type queued struct {
		i   int
		cmd *redis.Cmd
	}
	var qs []queued
	pipe := s.rdb.Pipeline()
	for i, r := range rs {
		if err := core.ValidateProjectID(r.ProjectID); err != nil {
			errs[i] = fmt.Errorf("redis: %s: %w", op, err)
			continue
		}
		if r.ID == "" || len(r.ID) > core.MaxQAIDLen {
			errs[i] = fmt.Errorf("redis: %s: %w", op, core.Invalid("receipt_id", "must be 1-%d bytes", core.MaxQAIDLen))
			continue
		}
		if !r.ExpiresAt.After(r.IssuedAt) {
			errs[i] = fmt.Errorf("redis: %s: %w", op, core.Invalid("expires_at", "must be after issued_at"))
			continue
		}
		body, err := json.Marshal(r)
		if err != nil {
			errs[i] = fmt.Errorf("redis: %s: %w", op, err)
			continue
		}
		cmd := pipe.Do(ctx, "set", s.k.receipt(r.ProjectID, r.ID), receiptValue(r.Source, body), "nx", "pxat", r.ExpiresAt.UnixMilli())
		qs = append(qs, queued{i: i, cmd: cmd})
	}
	if len(qs) == 0 {
		return errs
	}
	var gone *abandonedError
	if err := s.batch.exec(ctx, pipe); errors.As(err, &gone) {
		for _, q := range qs {
			errs[q.i] = s.wrap(ctx, op, err)
		}
		return errs
	}
	// Else each command carries its own error.
	for _, q := range qs {
		// redis.Nil: the receipt was stored already (a retry).
		if err := q.cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			errs[q.i] = s.wrap(ctx, op, err)
		}
	}
	return errs
}

// receiptValue is a new receipt as stored: the state byte 'n' (redeeming
// turns it to 'u'), the source, NUL, the JSON (which has no raw NUL).
func receiptValue(source string, body []byte) string {
	return "n" + source + "\x00" + string(body)
}

// RedeemReceipt marks a receipt used by source, once.
func (s *Store) RedeemReceipt(ctx context.Context, projectID, receiptID, source string, now time.Time) (core.Receipt, error) {
	const op = "redeem receipt"
	if err := core.ValidateProjectID(projectID); err != nil {
		return core.Receipt{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	if receiptID == "" || len(receiptID) > core.MaxQAIDLen {
		return core.Receipt{}, fmt.Errorf("redis: %s: %w", op, core.ErrNotFound)
	}
	v, err := s.eval(ctx, redeemReceiptScript.get(), []string{s.k.receipt(projectID, receiptID)}, source).Slice()
	if err != nil {
		return core.Receipt{}, s.wrap(ctx, op, err)
	}
	code, _ := v[0].(int64)
	switch code {
	case 0:
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s: %w", op, receiptID, core.ErrNotFound)
	case 1:
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s was issued to another source: %w", op, receiptID, core.ErrConflict)
	case 2:
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s already used: %w", op, receiptID, core.ErrConflict)
	}
	body, _ := v[1].(string)
	var r core.Receipt
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s is corrupt", op, receiptID)
	}
	if !now.Before(r.ExpiresAt) {
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s expired: %w", op, receiptID, core.ErrNotFound)
	}
	return r, nil
}

// AppendAudit appends an entry to the project's capped audit stream.
// Concurrent appends are written together: one writer goroutine sends
// what has queued up as one pipeline (group commit), and each caller
// returns when its own entry is stored (or its context ends first; the
// entry may then still be stored).
func (s *Store) AppendAudit(ctx context.Context, e core.AuditEntry) error {
	const op = "append audit"
	if err := core.ValidateProjectID(e.ProjectID); err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	if e.Time.IsZero() {
		e.Time = s.cfg.clock().UTC()
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return s.wrap(ctx, op, err)
	}
	it := &auditItem{stream: s.k.audit(e.ProjectID), id: strconv.FormatInt(e.Time.UnixMilli(), 10) + "-*", body: string(body), done: make(chan struct{})}
	it.deadline, _ = ctx.Deadline()
	ch := s.auditQueue()
	if ch == nil {
		return s.wrap(ctx, op, redis.ErrClosed)
	}
	select {
	case ch <- it:
	case <-s.stop:
		return s.wrap(ctx, op, redis.ErrClosed)
	case <-ctx.Done():
		return s.wrap(ctx, op, ctx.Err())
	}
	select {
	case <-it.done:
	case <-ctx.Done():
		return s.wrap(ctx, op, ctx.Err())
	case <-s.stop:
		select {
		case <-it.done: // written while the store closed
		case <-time.After(ReadTimeout + WriteTimeout):
			return s.wrap(ctx, op, redis.ErrClosed)
		}
	}
	if it.err != nil {
		return s.wrap(ctx, op, it.err)
	}
	return nil
}

// auditQueue returns the audit writer's queue, starting the writer on
// first use; nil once the store is closed.
func (s *Store) auditQueue() chan *auditItem {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	if s.auditClosed {
		return nil
	}
	if s.auditCh == nil {
		s.auditCh = make(chan *auditItem, 4*auditBatch)
		s.wg.Add(1)
		go s.auditWriter(s.auditCh)
	}
	return s.auditCh
}

// auditItem is one entry waiting for the audit writer.
type auditItem struct {
	stream, id, body string
	deadline         time.Time // the caller's; zero: none
	err              error
	done             chan struct{}
}

// auditBatch is the most entries one audit pipeline carries.
const auditBatch = 256

// auditWriter writes queued audit entries, a pipeline at a time, until
// the store is closed.
func (s *Store) auditWriter(ch chan *auditItem) {
	defer s.wg.Done()
	for {
		var batch []*auditItem
		select {
		case it := <-ch:
			batch = append(batch, it)
		case <-s.stop:
			for {
				select {
				case it := <-ch:
					it.err = redis.ErrClosed
					close(it.done)
				default:
					return
				}
			}
		}
	more:
		for len(batch) < auditBatch {
			select {
			case it := <-ch:
				batch = append(batch, it)
			default:
				break more
			}
		}
		s.writeAudits(batch)
	}
}

// writeAudits sends batch as one pipeline of XADDs, bounded by the latest
// of its callers' deadlines (ReadTimeout + WriteTimeout when none has one).
func (s *Store) writeAudits(batch []*auditItem) {
	dl := time.Now().Add(ReadTimeout + WriteTimeout)
	for _, it := range batch {
		if !it.deadline.IsZero() && it.deadline.After(dl) {
			dl = it.deadline
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	add := func(items []*auditItem, explicitID bool) []*redis.StringCmd {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(items))
		for i, it := range items {
			a := &redis.XAddArgs{Stream: it.stream, MaxLen: s.cfg.auditCap, Approx: true, Values: []any{"e", it.body}}
			if explicitID {
				a.ID = it.id
			}
			cmds[i] = pipe.XAdd(ctx, a)
		}
		_, _ = pipe.Exec(ctx)
		return cmds
	}
	cmds := add(batch, true)
	var older []*auditItem
	for i, it := range batch {
		if err := cmds[i].Err(); err != nil && isOlderID(err) {
			// The entry's time is behind the stream's last id: let Redis
			// assign one (entries stay in append order).
			older = append(older, it)
			continue
		}
		it.err = cmds[i].Err()
		close(it.done)
	}
	if len(older) > 0 {
		for i, c := range add(older, false) {
			older[i].err = c.Err()
			close(older[i].done)
		}
	}
}

func isOlderID(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && len(re.Error()) > 3 && re.Error()[:3] == "ERR"
}

// Audit returns up to limit entries (0: 100) of the project at or after
// since, oldest first.
func (s *Store) Audit(ctx context.Context, projectID string, since time.Time, limit int) ([]core.AuditEntry, error) {
	const op = "audit"
	if err := core.ValidateProjectID(projectID); err != nil {
		return nil, fmt.Errorf("redis: %s: %w", op, err)
	}
	if limit <= 0 {
		limit = 100
	}
	start := "-"
	if !since.IsZero() {
		start = strconv.FormatInt(max(since.UnixMilli(), 0), 10)
	}
	out := []core.AuditEntry{}
	for len(out) < limit {
		msgs, err := s.rdb.XRangeN(ctx, s.k.audit(projectID), start, "+", int64(limit-len(out))).Result()
		if err != nil {
			return nil, s.wrap(ctx, op, err)
		}
		for _, m := range msgs {
			body, _ := m.Values["e"].(string)
			var e core.AuditEntry
			if json.Unmarshal([]byte(body), &e) != nil {
				continue
			}
			if !since.IsZero() && e.Time.Before(since) {
				continue
			}
			out = append(out, e)
		}
		if len(msgs) < limit-len(out)+len(msgs) || len(msgs) == 0 {
			break
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
	return out, nil
}
