package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

// IssueReceipt stores a receipt until its expiry; idempotent per id.
func (s *Store) IssueReceipt(ctx context.Context, r core.Receipt) error {
	return s.IssueReceipts(ctx, []core.Receipt{r})[0]
}

// IssueReceipts stores several receipts in one round trip (a search issues
// one for the whole result and one per match). errs[i] is receipt i's
// error. A search receipt followed by every per-QA receipt of its QAs, as
// a search issues them (isFamily), is stored as one key for all of them;
// any other receipts each on its own. Idempotent per id: a plain SET NX,
// so a retried write never resets a receipt already redeemed.
func (s *Store) IssueReceipts(ctx context.Context, rs []core.Receipt) []error {
	const op = "issue receipt"
	errs := make([]error, len(rs))
	own := rs // the receipts stored under their own keys
	family := isFamily(rs)
	if family {
		own = rs[:1]
	}
	sets := make([]*redis.Cmd, len(own))
	pipe := s.rdb.Pipeline()
	for i, r := range own {
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
		items := -1
		if family {
			items = len(r.QAIDs)
		}
		sets[i] = pipe.Do(ctx, "set", s.k.receipt(r.ProjectID, r.ID), receiptValue(r.Source, body, items), "nx", "pxat", r.ExpiresAt.UnixMilli())
	}
	var gone *abandonedError
	abandoned := errors.As(s.batch.exec(ctx, pipe), &gone)
	for i, set := range sets {
		if set == nil {
			continue
		}
		if abandoned {
			errs[i] = s.wrap(ctx, op, gone)
			continue
		}
		// redis.Nil: the receipt was stored already (a retry).
		if err := set.Err(); err != nil && !errors.Is(err, redis.Nil) {
			errs[i] = s.wrap(ctx, op, err)
		}
	}
	for i := len(own); i < len(rs); i++ {
		errs[i] = errs[0] // stored with its search receipt
	}
	return errs
}

// isFamily tells whether rs is a search receipt and then each of its
// per-QA receipts in order: receipt n (core.ItemReceiptID) naming exactly
// the search receipt's n-th QA, with the same project, source and window.
func isFamily(rs []core.Receipt) bool {
	if len(rs) < 2 || len(rs) != len(rs[0].QAIDs)+1 {
		return false
	}
	b := rs[0]
	for i, r := range rs[1:] {
		if r.ID != core.ItemReceiptID(b.ID, i+1) || len(r.QAIDs) != 1 || r.QAIDs[0] != b.QAIDs[i] || r.ProjectID != b.ProjectID ||
			r.Source != b.Source || !r.IssuedAt.Equal(b.IssuedAt) || !r.ExpiresAt.Equal(b.ExpiresAt) {
			return false
		}
	}
	return true
}

// receiptValue is a new receipt as stored: the state byte 'n' (redeeming
// turns it to 'u'), the source, NUL, the JSON (which has no raw NUL). A
// search receipt stored with its items per-QA receipts (items ≥ 0) starts
// with 'F', the number of items and ':', then one state byte for itself
// and one per item, the source, NUL, the JSON: receipt n is redeemed by
// turning state byte n to 'u'.
func receiptValue(source string, body []byte, items int) string {
	if items < 0 {
		return "n" + source + "\x00" + string(body)
	}
	return "F" + strconv.Itoa(items) + ":" + strings.Repeat("n", items+1) + source + "\x00" + string(body)
}

// RedeemReceipt marks a receipt used by source, once.
func (s *Store) RedeemReceipt(ctx context.Context, projectID, receiptID, source string, now time.Time) (core.Receipt, error) {
	const op = "redeem receipt"
	v, err := s.receiptOp(ctx, op, projectID, receiptID, source, "redeem")
	if err != nil {
		return core.Receipt{}, err
	}
	if code, _ := v[0].(int64); code == 2 {
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s: %w", op, receiptID, core.ErrReceiptUsed)
	}
	body, _ := v[1].(string)
	var r core.Receipt
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s is corrupt", op, receiptID)
	}
	if item, _ := v[2].(int64); item > 0 {
		// A per-QA receipt kept with its search receipt.
		if item > int64(len(r.QAIDs)) {
			return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s is corrupt", op, receiptID)
		}
		r.ID, r.QAIDs = receiptID, []string{r.QAIDs[item-1]}
	}
	if !now.Before(r.ExpiresAt) {
		return core.Receipt{}, fmt.Errorf("redis: %s: receipt %s: %w", op, receiptID, core.ErrReceiptExpired)
	}
	return r, nil
}

// RestoreReceipt gives back a receipt redeemed for a write that did not
// commit (core.ReceiptRestorer), so the write's retry may quote it again.
func (s *Store) RestoreReceipt(ctx context.Context, projectID, receiptID, source string) error {
	_, err := s.receiptOp(ctx, "restore receipt", projectID, receiptID, source, "restore")
	return err
}

// receiptOp runs receiptScript's mode ("redeem" or "restore") on receipt
// receiptID of the project for source. An id no receipt can have, and
// the script's answer 0, are not found; its answer 1 is another source's.
func (s *Store) receiptOp(ctx context.Context, op, projectID, receiptID, source, mode string) ([]any, error) {
	if err := core.ValidateProjectID(projectID); err != nil {
		return nil, fmt.Errorf("redis: %s: %w", op, err)
	}
	if receiptID == "" || len(receiptID) > core.MaxQAIDLen {
		return nil, fmt.Errorf("redis: %s: %w", op, core.ErrNotFound)
	}
	search, n := core.SplitReceiptID(receiptID)
	keys := []string{s.k.receipt(projectID, receiptID), s.k.receipt(projectID, search)}
	v, err := s.eval(ctx, receiptScript, keys, source, n, mode).Slice()
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	switch code, _ := v[0].(int64); code {
	case 0:
		return nil, fmt.Errorf("redis: %s: receipt %s: %w", op, receiptID, core.ErrNotFound)
	case 1:
		return nil, fmt.Errorf("redis: %s: receipt %s: %w", op, receiptID, core.ErrReceiptOtherSource)
	}
	return v, nil
}

// AppendAudit appends an entry to the project's capped audit stream,
// under an id Redis assigns (the entry keeps its own time: auditSkew).
// Concurrent appends are written together (the batcher's pipelines,
// batch.go), and each caller returns when its own entry is stored (or its
// context ends first; the entry may then still be stored). An append
// after Close fails at once.
func (s *Store) AppendAudit(ctx context.Context, e core.AuditEntry) error {
	const op = "append audit"
	if err := e.Stamp(s.cfg.clock()); err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	select {
	case <-s.stop:
		return s.wrap(ctx, op, redis.ErrClosed)
	default:
	}
	return s.wrap(ctx, op, s.xadd(ctx, &redis.XAddArgs{Stream: s.k.audit(e.ProjectID), MaxLen: s.cfg.auditCap, Approx: true,
		Values: []any{"e", string(body)}}))
}

// auditSkew is how far behind the clock of the process that wrote an
// audit entry Redis's clock may be for Audit to find the entry in every
// window it belongs to. An entry's stream id is the time Redis appends it
// (or just after the stream's last id), never refused: an id of the
// entry's own time would be refused whenever a newer entry got there
// first, as concurrent appends do (15-60 % of a busy project's, each then
// sent again). The id is thus at least the entry's time minus the skew
// between the two clocks, and Audit reads from since minus auditSkew.
const auditSkew = time.Second

// auditOp queues on w the append of audit entry e to its project's
// stream, when that stream is under w's hash tag (e names w's project):
// the commit appends it with the write. false: e is not queued.
func (s *Store) auditOp(w *write, e core.AuditEntry) (bool, error) {
	if e.ProjectID != w.p {
		return false, nil
	}
	if err := e.Stamp(s.cfg.clock()); err != nil {
		return false, err
	}
	body, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	w.b.op("xadd", s.k.audit(e.ProjectID), s.cfg.auditCap, string(body))
	return true, nil
}

// xadd sends one XADD through the batcher.
func (s *Store) xadd(ctx context.Context, a *redis.XAddArgs) error {
	pipe := s.rdb.Pipeline()
	pipe.XAdd(ctx, a)
	return s.batch.exec(ctx, pipe)
}

// Audit returns up to limit entries (ledger.AuditLimit) of the project at or after
// since, oldest first (in append order). The stream is read from since
// minus auditSkew, and the entries before since (appended before it, or
// after newer ones) are passed over, until limit entries of the window are
// found or the stream ends.
func (s *Store) Audit(ctx context.Context, projectID string, since time.Time, limit int) ([]core.AuditEntry, error) {
	const op = "audit"
	if err := core.ValidateProjectID(projectID); err != nil {
		return nil, fmt.Errorf("redis: %s: %w", op, err)
	}
	limit = ledger.AuditLimit(limit)
	start := "-"
	if !since.IsZero() {
		start = strconv.FormatInt(max(since.Add(-auditSkew).UnixMilli(), 0), 10)
	}
	out := []core.AuditEntry{}
	for len(out) < limit {
		// At least auditReadChunk at a time: the first read may pass over
		// auditSkew of entries.
		want := int64(max(limit-len(out), auditReadChunk))
		msgs, err := s.rdb.XRangeN(ctx, s.k.audit(projectID), start, "+", want).Result()
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
			if out = append(out, e); len(out) == limit {
				return out, nil
			}
		}
		if int64(len(msgs)) < want {
			break // the end of the stream
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
	return out, nil
}

// auditReadChunk is the fewest entries Audit reads in one XRANGE.
const auditReadChunk = 256
