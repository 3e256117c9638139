// Package wire is memex's HTTP API on the wire: the routes, the headers,
// the request and response bodies that exist only on the wire (the
// envelopes around core's request and record types), and the lenient
// parsing of what a service answers — memex serve's own shapes and the
// original memory service's (bare arrays, {"code","msg","data"} envelopes,
// FastAPI's 422 detail, naive ISO times). The server (package service) and
// the client (plugins/http) both use it, so the two cannot drift; the golden
// files in testdata/ pin every encoding (docs/WIRE.md).
//
// The bodies whose meaning is the domain's — core.SearchRequest,
// core.HitRequest, core.CandidateRequest, core.ValidateRequest,
// core.PatchRequest, core.Record, core.Match — stay in core, since every
// store takes them; they are pinned here too.
//
// wire imports only core and the standard library.
package wire

import (
	"net/url"
	"time"

	"github.com/memex-dev/memex/core"
)

// Routes of SPEC §7.
const (
	RouteSearch     = "/v1/qa/search"
	RouteInject     = "/v1/qa/inject"
	RouteHit        = "/v1/qa/hit"
	RouteCandidates = "/v1/qa/candidates"
	RouteValidate   = "/v1/qa/validate"
	RouteExpire     = "/v1/qa/expire"
	RouteQA         = "/v1/qa"
	RouteGrade      = "/v1/task/grade"
	RouteHealth     = "/healthz"
	RouteReady      = "/readyz"
	RouteMetrics    = "/metrics"
	RouteAdminQA    = "/admin/v1/qa"
	RouteProjects   = "/admin/v1/projects"
	RouteAudit      = "/admin/v1/audit"
	// RouteExport is a full export page of a project (records with their
	// evidence); RouteImport stores full records, evidence included. Both
	// are admin routes: evidence is votes, and writing it is voting.
	RouteExport = "/admin/v1/export"
	RouteImport = "/admin/v1/import"
)

// Headers.
const (
	// HeaderReceipt carries the receipt of a search (SPEC §5.4): a hit
	// report quotes it; a validation quotes the match's own receipt_id.
	HeaderReceipt = "X-Memex-Receipt"
	// HeaderRequestID names a request in the service's logs.
	HeaderRequestID = "X-Request-Id"
	// HeaderIdempotencyKey makes a write apply once.
	HeaderIdempotencyKey = "Idempotency-Key"
)

// MaxBlockChars is the largest max_block_chars of an inject request.
const MaxBlockChars = 100000

// InjectRequest is POST /v1/qa/inject: a search and the gatekeeper's
// selection in one call. MinScore (absent: core.DefaultMinScore) is the
// relevance floor of both; Seed (optional) makes the probation draw
// reproducible.
type InjectRequest struct {
	ProjectID     string   `json:"project_id"`
	Query         string   `json:"query"`
	Limit         int      `json:"limit,omitempty"`
	MinScore      *float64 `json:"min_score,omitempty"`
	MaxBlockChars int      `json:"max_block_chars,omitempty"`
	Explain       bool     `json:"explain,omitempty"`
	Seed          *uint64  `json:"seed,omitempty"`
}

// Validate checks the request; the error names the field.
func (r InjectRequest) Validate() error {
	sr := r.Search()
	if err := sr.Validate(); err != nil {
		return err
	}
	if r.MaxBlockChars < 0 || r.MaxBlockChars > MaxBlockChars {
		return core.Invalid("max_block_chars", "must be between 0 and %d", MaxBlockChars)
	}
	return nil
}

// Search is the search an inject request makes.
func (r InjectRequest) Search() core.SearchRequest {
	sr := core.SearchRequest{ProjectID: r.ProjectID, Query: r.Query, Limit: r.Limit, MinScore: r.MinScoreOrDefault(), Explain: r.Explain}
	if sr.Limit == 0 {
		sr.Limit = core.DefaultSearchLimit
	}
	return sr
}

// MinScoreOrDefault is min_score, or core.DefaultMinScore when absent.
func (r InjectRequest) MinScoreOrDefault() float64 {
	if r.MinScore != nil {
		return *r.MinScore
	}
	return core.DefaultMinScore
}

// InjectItem is a match the gatekeeper chose, with its probation flag.
type InjectItem struct {
	core.Match
	Probation bool   `json:"probation"`
	Why       string `json:"why,omitempty"`
}

// InjectReason is one machine-readable decision note of the gatekeeper.
type InjectReason struct {
	Code   string `json:"code"`
	QAID   string `json:"qa_id,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// InjectResponse is the answer of POST /v1/qa/inject: the selection memex
// run would make and the rendered memory block.
type InjectResponse struct {
	ReceiptID string         `json:"receipt_id"`
	Items     []InjectItem   `json:"items"`
	Block     string         `json:"block"`
	Shown     []string       `json:"shown"`
	Reasons   []InjectReason `json:"reasons"`
}

// HitResponse is the answer of POST /v1/qa/hit: updated counts the
// references applied, ignored those stored in the audit log only, and
// reason says why (one of the Reason constants).
type HitResponse = core.HitResult

// RecordResponse wraps a record: validate, get, patch, a verdict. Applied is false
// when a validation was stored in the audit log only; Reason says why (one
// of the Reason constants). Get and patch leave both out.
type RecordResponse struct {
	Record  core.Record `json:"record"`
	Applied *bool       `json:"applied,omitempty"`
	Reason  string      `json:"reason,omitempty"`
}

// VerdictRequest is the optional body of POST /admin/v1/qa/{qa_id}/{verdict}
// (project_id may come as a query parameter instead).
type VerdictRequest struct {
	ProjectID string `json:"project_id,omitempty"`
}

// VerdictPath is the route of a human verdict on a QA:
// /admin/v1/qa/{qa_id}/{verdict}, the id path-escaped.
func VerdictPath(qaID string, v core.Verdict) string {
	return RouteAdminQA + "/" + url.PathEscape(qaID) + "/" + string(v)
}

// Why a report (hit or validation) was stored in the audit log only: the
// receipt check that refused it (SPEC §5.4).
const (
	// ReasonReceiptMissing: the report quoted no receipt.
	ReasonReceiptMissing = "receipt_missing"
	// ReasonReceiptUnknown: no such receipt (never issued, or removed after
	// its window).
	ReasonReceiptUnknown = "receipt_unknown"
	// ReasonReceiptExpired: the receipt's window has passed.
	ReasonReceiptExpired = "receipt_expired"
	// ReasonReceiptUsed: the receipt already backed a report of this kind.
	ReasonReceiptUsed = "receipt_used"
	// ReasonReceiptOtherKey: the receipt was issued to another API key.
	ReasonReceiptOtherKey = "receipt_other_key"
	// ReasonReceiptOtherProject: the receipt was issued for another project.
	ReasonReceiptOtherProject = "receipt_other_project"
	// ReasonNotServed: the receipt's search did not serve that QA (a
	// validation must quote the match's own receipt_id).
	ReasonNotServed = "qa_not_served_by_receipt"
	// ReasonOtherOwner: the key's project patterns do not cover the QA's
	// own project (a global QA, or one another project shares with the
	// key's): it may read the QA but not vote on it, nor count a hit.
	ReasonOtherOwner = "qa_owner_not_covered"
	// ReasonNotCounted: the store counted nothing — the creator's own
	// report on its QA (SPEC §5.1), or any report on a frozen QA.
	ReasonNotCounted = "not_counted"
	// ReasonOwnReport: a candidate's evidence, its creator's own report,
	// which never counts in the service (audit only).
	ReasonOwnReport = "own_report"
)

// ExpireRequest is POST /v1/qa/expire. Now (RFC 3339, optional) is the
// time the expiry is judged at instead of the server's clock: an admin's
// "expire as of" (the route is admin-only), which lets a remote client run
// the same expiry as a local store.
type ExpireRequest struct {
	BatchSize int    `json:"batch_size"`
	Now       string `json:"now,omitempty"`
}

// Validate checks the request; the error names the field.
func (r ExpireRequest) Validate() error {
	if r.BatchSize < 0 || r.BatchSize > 1000 {
		return core.Invalid("batch_size", "must be between 1 and 1000")
	}
	if _, err := r.At(time.Time{}); err != nil {
		return err
	}
	return nil
}

// At is Now parsed, or def when Now is empty.
func (r ExpireRequest) At(def time.Time) (time.Time, error) {
	if r.Now == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, r.Now)
	if err != nil {
		return time.Time{}, core.Invalid("now", "must be an RFC 3339 time")
	}
	return t.UTC(), nil
}

// ExpireResponse is the answer of POST /v1/qa/expire.
type ExpireResponse struct {
	Expired int `json:"expired"`
}

// DeleteResponse is the answer of DELETE /v1/qa/{qa_id}.
type DeleteResponse struct {
	Deleted bool `json:"deleted"`
}

// ProjectsResponse is GET /admin/v1/projects.
type ProjectsResponse struct {
	Projects []core.ProjectSummary `json:"projects"`
}

// ImportRequest is POST /admin/v1/import: full records (core.Record, as a
// full export writes them, evidence included), stored as they are. A
// record with an empty answer is refused unless QuestionsOnly: then it is
// kept as a question-only QA, which search finds and nothing injects
// (`memex qa import --questions-only`).
type ImportRequest struct {
	Records       []core.Record `json:"records"`
	QuestionsOnly bool          `json:"questions_only,omitempty"`
}

// ImportResponse is POST /admin/v1/import's answer.
type ImportResponse struct {
	Imported int `json:"imported"`
}

// AuditResponse is GET /admin/v1/audit.
type AuditResponse struct {
	Entries []core.AuditEntry `json:"entries"`
}

// StatusResponse is GET /healthz and /readyz.
type StatusResponse struct {
	Status string `json:"status"`
	Store  string `json:"store,omitempty"`
}

// ErrorResponse is the one error shape of memex serve:
// {"error": {"code", "message", "field"?}}.
type ErrorResponse struct {
	Error APIError `json:"error"`
}

// APIError is the body of an ErrorResponse. Message never quotes request
// text.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the invalid field of a 400.
	Field string `json:"field,omitempty"`
}

// Routes of the namespaced store (docs/SCOPES.md). Its request bodies are
// core's (core.PutRequest, core.SearchItemsRequest); its answers below,
// core.PutResult and core.ItemPage.
const (
	RouteStoreItems  = "/v1/store/items"
	RouteStoreList   = "/v1/store/list"
	RouteStoreSearch = "/v1/store/search"
	RouteStoreClear  = "/v1/store/clear"
)

// ItemResponse is GET /v1/store/items: the item, or null when there is none
// (not an error).
type ItemResponse struct {
	Item *core.Item `json:"item"`
}

// DeleteItemResponse is DELETE /v1/store/items.
type DeleteItemResponse struct {
	Deleted bool       `json:"deleted"`
	Item    *core.Item `json:"item,omitempty"`
}

// SearchItemsResponse is POST /v1/store/search.
type SearchItemsResponse struct {
	Items []core.Item `json:"items"`
}

// ClearItemsRequest is POST /v1/store/clear.
type ClearItemsRequest struct {
	Prefix core.Namespace `json:"prefix"`
}

// ClearItemsResponse is POST /v1/store/clear.
type ClearItemsResponse struct {
	Deleted int `json:"deleted"`
}
