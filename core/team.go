package core

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Receipt binds a search made for a run to the source it served and the QAs
// it returned (SPEC §5.4). Reports count only for QAs a receipt served to
// the same source, and each receipt is accepted once within its window.
type Receipt struct {
	ID        string    `json:"receipt_id"`
	ProjectID string    `json:"project_id"`
	Source    string    `json:"source"`
	QAIDs     []string  `json:"qa_ids"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ItemReceiptID is the id of the per-QA receipt for the n-th (from 1) QA
// of the search receipt search: "<search>.<n>". A search issues one
// receipt for its whole result and one per QA it served (SPEC §5.4).
func ItemReceiptID(search string, n int) string { return search + "." + strconv.Itoa(n) }

// SplitReceiptID splits a per-QA receipt id into its search receipt and n
// (ItemReceiptID); for any other id it returns the id and 0.
func SplitReceiptID(id string) (search string, n int) {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 || i == len(id)-1 || len(id)-i > 7 {
		return id, 0
	}
	for _, r := range id[i+1:] {
		if r < '0' || r > '9' {
			return id, 0
		}
		n = 10*n + int(r-'0')
	}
	if n == 0 || id[i+1] == '0' {
		return id, 0 // not written by ItemReceiptID
	}
	return id[:i], n
}

// Why RedeemReceipt refused a receipt. Each wraps ErrNotFound or
// ErrConflict; a store returns an error matching one of them (an unknown
// receipt: plain ErrNotFound), so a service can say which check refused a
// report.
var (
	ErrReceiptExpired     = fmt.Errorf("receipt expired: %w", ErrNotFound)
	ErrReceiptUsed        = fmt.Errorf("receipt already used: %w", ErrConflict)
	ErrReceiptOtherSource = fmt.Errorf("receipt issued to another source: %w", ErrConflict)
)

// Receipts stores receipts. Issue is idempotent per receipt id. Redeem marks
// the receipt used by source and returns it; a second Redeem, a foreign
// source or an expired receipt returns ErrReceiptUsed, ErrReceiptOtherSource
// or ErrReceiptExpired, an unknown one ErrNotFound.
type Receipts interface {
	IssueReceipt(ctx context.Context, r Receipt) error
	RedeemReceipt(ctx context.Context, projectID, receiptID, source string, now time.Time) (Receipt, error)
}

// ReceiptRestorer gives back a receipt redeemed for a write that then did
// not commit: a receipt is spent only when the write it guards commits
// (SPEC §5.4), so a retry of the failed write can quote it again. Only the
// source it was issued to may restore it; restoring an unspent receipt is
// a no-op. Unknown or expired: ErrNotFound; another source's: ErrConflict.
type ReceiptRestorer interface {
	RestoreReceipt(ctx context.Context, projectID, receiptID, source string) error
}

// AuditEntry is one line of the audit log (SPEC §10): who did what to which
// QA, when, from which run, before → after. Before and After hold small
// summaries (status, level, trust), never question or answer text.
type AuditEntry struct {
	Time      time.Time `json:"time"`
	KeyID     string    `json:"key_id"`
	ProjectID string    `json:"project_id"`
	QAID      string    `json:"qa_id,omitempty"`
	Action    string    `json:"action"` // candidate, hit, validate, patch, delete, expire, import, store_put, store_delete, store_clear
	// Namespace and Key name the item of a namespaced-store write.
	Namespace string         `json:"namespace,omitempty"`
	Key       string         `json:"key,omitempty"`
	RunID     string         `json:"run_id,omitempty"`
	ReceiptID string         `json:"receipt_id,omitempty"`
	Weight    float64        `json:"weight"`
	Before    map[string]any `json:"before,omitempty"`
	After     map[string]any `json:"after,omitempty"`
}

// Stamp checks e's project and dates it as every store keeps it: at now
// when it has no time, in UTC.
func (e *AuditEntry) Stamp(now time.Time) error {
	if err := ValidateProjectID(e.ProjectID); err != nil {
		return err
	}
	if e.Time.IsZero() {
		e.Time = now
	}
	e.Time = e.Time.UTC()
	return nil
}

// Auditor appends to and reads the audit log, oldest first from since.
type Auditor interface {
	AppendAudit(ctx context.Context, e AuditEntry) error
	Audit(ctx context.Context, projectID string, since time.Time, limit int) ([]AuditEntry, error)
}

// AuditBatcher appends several entries at once: one transaction on the
// embedded store, for the entries of one run. A decorator implements it
// only over a store that does (core.As), so a caller falls back to
// Auditor one entry at a time.
type AuditBatcher interface {
	AppendAudits(ctx context.Context, es []AuditEntry) error
}

// ProjectSummary is one project in GET /admin/v1/projects.
type ProjectSummary struct {
	ProjectID string         `json:"project_id"`
	Total     int            `json:"total"`
	ByStatus  map[Status]int `json:"by_status"`
	ByLevel   map[string]int `json:"by_level"`
}

// ProjectLister lists the projects a store holds.
type ProjectLister interface {
	Projects(ctx context.Context) ([]ProjectSummary, error)
}
