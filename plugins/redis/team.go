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
	const op = "issue receipt"
	if err := core.ValidateProjectID(r.ProjectID); err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	if r.ID == "" || len(r.ID) > core.MaxQAIDLen {
		return fmt.Errorf("redis: %s: %w", op, core.Invalid("receipt_id", "must be 1-%d bytes", core.MaxQAIDLen))
	}
	if !r.ExpiresAt.After(r.IssuedAt) {
		return fmt.Errorf("redis: %s: %w", op, core.Invalid("expires_at", "must be after issued_at"))
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	err = issueReceiptScript.Run(ctx, s.rdb, []string{s.k.receipt(r.ProjectID, r.ID)}, string(body), r.Source, r.ExpiresAt.UnixMilli()).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return s.wrap(ctx, op, err)
	}
	return nil
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
	v, err := redeemReceiptScript.Run(ctx, s.rdb, []string{s.k.receipt(projectID, receiptID)}, source).Slice()
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
	err = s.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: s.k.audit(e.ProjectID),
		MaxLen: s.cfg.auditCap,
		Approx: true,
		ID:     strconv.FormatInt(e.Time.UnixMilli(), 10) + "-*",
		Values: []any{"e", string(body)},
	}).Err()
	if err != nil && isOlderID(err) {
		// The entry's time is behind the stream's last id: let Redis
		// assign one (entries stay in append order).
		err = s.rdb.XAdd(ctx, &redis.XAddArgs{
			Stream: s.k.audit(e.ProjectID), MaxLen: s.cfg.auditCap, Approx: true, Values: []any{"e", string(body)},
		}).Err()
	}
	if err != nil {
		return s.wrap(ctx, op, err)
	}
	return nil
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
