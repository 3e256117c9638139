package core

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits and defaults of the wire contract (SPEC §7).
const (
	DefaultSearchLimit = 6
	MaxSearchLimit     = 50
	DefaultMinScore    = 0.2
	MaxProjectIDLen    = 64
	MaxQAIDLen         = 128
	MaxQuestionBytes   = 16 << 10
	MaxAnswerBytes     = 64 << 10
	MaxQueryBytes      = 16 << 10
	MaxReferences      = 256
	MaxTags            = 32
	MaxTagBytes        = 64
)

// validChars reports whether s is 1..max bytes, each accepted by ok.
func validChars(s string, max int, ok func(c byte) bool) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func projectIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func qaIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-'
}

// GlobalProject is readable by every project a key may read (SPEC §2).
const GlobalProject = "global"

// ValidateProjectID checks a project_id: 1–64 characters of [a-z0-9_-].
func ValidateProjectID(p string) error {
	if p == "" {
		return Invalid("project_id", "is required")
	}
	if !validChars(p, MaxProjectIDLen, projectIDChar) {
		return Invalid("project_id", "must be 1-64 characters of [a-z0-9_-]")
	}
	return nil
}

// ValidateQAID checks a qa_id: 1–128 characters of [A-Za-z0-9_.:-] (the
// anchor regex of the original accepts [A-Za-z0-9_-]; memex ids fit it).
func ValidateQAID(id string) error {
	if id == "" {
		return Invalid("qa_id", "is required")
	}
	if !validChars(id, MaxQAIDLen, qaIDChar) {
		return Invalid("qa_id", "must be 1-128 characters of [A-Za-z0-9_.:-]")
	}
	return nil
}

func finite01(field string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return Invalid(field, "must be between 0 and 1")
	}
	return nil
}

// SearchRequest is POST /v1/qa/search.
type SearchRequest struct {
	ProjectID string `json:"project_id"`
	Query     string `json:"query"`
	// Limit is 1–50; 0 means DefaultSearchLimit.
	Limit int `json:"limit"`
	// MinScore is the minimum relevance, 0–1. Decoding JSON without the key
	// gives DefaultMinScore; a Go caller's zero value means no threshold.
	MinScore float64 `json:"min_score"`
	Explain  bool    `json:"explain,omitempty"`
	// ReceiptID, when set, asks the store to issue (or reuse) a receipt for
	// this search so later reports can quote it (SPEC §5.4).
	ReceiptID string `json:"receipt_id,omitempty"`
}

// UnmarshalJSON applies the wire defaults (min_score 0.2 when absent).
func (r *SearchRequest) UnmarshalJSON(b []byte) error {
	type plain SearchRequest
	aux := struct {
		*plain
		MinScore *float64 `json:"min_score"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return decodeError(err)
	}
	r.MinScore = DefaultMinScore
	if aux.MinScore != nil {
		r.MinScore = *aux.MinScore
	}
	return nil
}

// Normalize fills defaults in place (limit 0 → 6) and validates.
func (r *SearchRequest) Normalize() error {
	if r.Limit == 0 {
		r.Limit = DefaultSearchLimit
	}
	return r.Validate()
}

// Validate checks ranges; the error names the field.
func (r SearchRequest) Validate() error {
	if err := ValidateProjectID(r.ProjectID); err != nil {
		return err
	}
	if len(r.Query) > MaxQueryBytes {
		return Invalid("query", "longer than %d bytes", MaxQueryBytes)
	}
	if r.Limit < 0 || r.Limit > MaxSearchLimit {
		return Invalid("limit", "must be between 1 and %d", MaxSearchLimit)
	}
	return finite01("min_score", r.MinScore)
}

// HitRef is one reference of a hit report.
type HitRef struct {
	QAID      string `json:"qa_id"`
	Shown     bool   `json:"shown"`
	Used      bool   `json:"used"`
	MessageID string `json:"message_id,omitempty"`
	Context   string `json:"context,omitempty"`
}

// UnmarshalJSON applies the wire default shown=true.
func (h *HitRef) UnmarshalJSON(b []byte) error {
	type plain HitRef
	aux := struct {
		*plain
		Shown *bool `json:"shown"`
	}{plain: (*plain)(h)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return decodeError(err)
	}
	h.Shown = aux.Shown == nil || *aux.Shown
	return nil
}

// HitRequest is POST /v1/qa/hit: "these QAs were shown / used in a run".
// Hits change usage counters, never trust.
type HitRequest struct {
	ProjectID  string   `json:"project_id"`
	References []HitRef `json:"references"`
	// RunID names the run that produced the report (the embedded store's
	// evidence source); ReceiptID quotes the search receipt.
	RunID     string `json:"run_id,omitempty"`
	ReceiptID string `json:"receipt_id,omitempty"`
	// EventID makes the write idempotent: a store applies an event id once.
	EventID string `json:"event_id,omitempty"`
}

// Validate checks the request; the error names the field.
func (r HitRequest) Validate() error {
	if err := ValidateProjectID(r.ProjectID); err != nil {
		return err
	}
	if len(r.References) > MaxReferences {
		return Invalid("references", "more than %d references", MaxReferences)
	}
	for i, ref := range r.References {
		if err := ValidateQAID(ref.QAID); err != nil {
			return Invalid(indexField("references", i, "qa_id"), "%s", err.(*FieldError).Message)
		}
	}
	return nil
}

// HitResult is the answer to RecordHit: Updated counts the references
// applied. A service that checks receipts may keep some references in its
// audit log only: Ignored counts them and Reason says why (the check that
// refused them, docs/API.md).
//
// NotCovered maps the references a store did not count because the
// principal's project patterns do not cover the QA's own project (a
// global QA, or one shared with the caller's project: SPEC §5.4) to that
// owner project, so the service can refuse and audit each under its
// owner. It is not part of the answer on the wire.
type HitResult struct {
	Updated    int               `json:"updated"`
	Ignored    int               `json:"ignored,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	NotCovered map[string]string `json:"-"`
}

// CandidateRequest is POST /v1/qa/candidates.
type CandidateRequest struct {
	ProjectID  string         `json:"project_id"`
	Question   string         `json:"question"`
	Answer     string         `json:"answer"`
	Summary    string         `json:"summary,omitempty"`
	Tags       []string       `json:"tags,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Source     string         `json:"source,omitempty"`
	Author     string         `json:"author,omitempty"`
	Confidence *float64       `json:"confidence,omitempty"`
	// SharedProjects lists other projects that may read this QA.
	SharedProjects []string `json:"shared_projects,omitempty"`
	// QAID, when set, is kept (import); otherwise the store assigns one.
	QAID string `json:"qa_id,omitempty"`
	// RunID is the run that produced the candidate; with Evidence it lets the
	// embedded store count the creating run's --verify pass (SPEC §3.4).
	RunID    string    `json:"run_id,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
	EventID  string    `json:"event_id,omitempty"`
	// MaxQAs, when > 0, makes a candidate that would add a QA to a project
	// already holding MaxQAs QAs fail with a *QuotaError, checked in the
	// same atomic step as the write (so it holds across server replicas);
	// a duplicate folds in as usual. Set by the service from its quota,
	// never by a client: it is not on the wire.
	MaxQAs int `json:"-"`
}

// Evidence is the creating run's own result, sent with a candidate.
type Evidence struct {
	Result   Result   `json:"result"`
	Strength Strength `json:"strength"`
}

// Validate checks the request; the error names the field.
func (r CandidateRequest) Validate() error {
	if err := ValidateProjectID(r.ProjectID); err != nil {
		return err
	}
	if r.QAID != "" {
		if err := ValidateQAID(r.QAID); err != nil {
			return err
		}
	}
	if strings.TrimSpace(r.Question) == "" {
		return Invalid("question", "is required")
	}
	if strings.TrimSpace(r.Answer) == "" {
		return Invalid("answer", "is required")
	}
	if len(r.Question) > MaxQuestionBytes {
		return Invalid("question", "longer than %d bytes", MaxQuestionBytes)
	}
	if len(r.Answer) > MaxAnswerBytes {
		return Invalid("answer", "longer than %d bytes", MaxAnswerBytes)
	}
	if len(r.Summary) > MaxAnswerBytes {
		return Invalid("summary", "longer than %d bytes", MaxAnswerBytes)
	}
	if len(r.Tags) > MaxTags {
		return Invalid("tags", "more than %d tags", MaxTags)
	}
	for i, t := range r.Tags {
		if t == "" || len(t) > MaxTagBytes {
			return Invalid(indexField("tags", i, ""), "must be 1-%d bytes", MaxTagBytes)
		}
	}
	for i, p := range r.SharedProjects {
		if err := ValidateProjectID(p); err != nil {
			return Invalid(indexField("shared_projects", i, ""), "must be 1-64 characters of [a-z0-9_-]")
		}
	}
	if r.Confidence != nil {
		if err := finite01("confidence", *r.Confidence); err != nil {
			return err
		}
	}
	if r.Evidence != nil {
		if r.Evidence.Result != ResultPass && r.Evidence.Result != ResultFail {
			return Invalid("evidence.result", "must be pass or fail")
		}
	}
	return nil
}

// CandidateResult is the answer to RecordCandidate. When the candidate
// duplicates an existing QA, DeduplicatedInto names it and QAID equals it.
type CandidateResult struct {
	QAID             string `json:"qa_id"`
	Status           Status `json:"status"`
	DeduplicatedInto string `json:"deduplicated_into,omitempty"`
}

// ValidateRequest is POST /v1/qa/validate. Result may be given as result
// ("pass", "success" or "fail") or as the boolean success; strength as
// signal_strength or the boolean strong_signal. Fields the original client
// sends (context, client, ts, payload) are accepted and kept for audit.
type ValidateRequest struct {
	ProjectID      string          `json:"project_id"`
	QAID           string          `json:"qa_id"`
	Result         string          `json:"result,omitempty"`
	SignalStrength string          `json:"signal_strength,omitempty"`
	Success        *bool           `json:"success,omitempty"`
	StrongSignal   bool            `json:"strong_signal,omitempty"`
	Source         string          `json:"source,omitempty"`
	Context        json.RawMessage `json:"context,omitempty"`
	Client         json.RawMessage `json:"client,omitempty"`
	TS             string          `json:"ts,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	RunID          string          `json:"run_id,omitempty"`
	ReceiptID      string          `json:"receipt_id,omitempty"`
	EventID        string          `json:"event_id,omitempty"`
}

// Outcome resolves the result and strength the request reports.
func (r ValidateRequest) Outcome() (Result, Strength, error) {
	var res Result
	switch {
	case r.Result != "":
		var err error
		if res, err = ParseResult(r.Result); err != nil {
			return "", "", err
		}
	case r.Success != nil:
		res = ResultFail
		if *r.Success {
			res = ResultPass
		}
	default:
		return "", "", Invalid("result", "is required (pass or fail)")
	}
	st := NormalizeStrength(r.SignalStrength)
	if r.SignalStrength == "" {
		st = StrengthWeak
		if r.StrongSignal {
			st = StrengthStrong
		}
	}
	return res, st, nil
}

// Validate checks the request; the error names the field.
func (r ValidateRequest) Validate() error {
	if err := ValidateProjectID(r.ProjectID); err != nil {
		return err
	}
	if err := ValidateQAID(r.QAID); err != nil {
		return err
	}
	if r.SignalStrength != "" {
		switch strings.ToLower(strings.TrimSpace(r.SignalStrength)) {
		case "strong", "medium", "weak":
		default:
			return Invalid("signal_strength", "must be strong, medium or weak")
		}
	}
	if r.TS != "" {
		if _, err := time.Parse(time.RFC3339, r.TS); err != nil {
			return Invalid("ts", "must be an RFC 3339 time")
		}
	}
	_, _, err := r.Outcome()
	return err
}

// TaskGradeRequest is POST /v1/task/grade.
type TaskGradeRequest struct {
	Prompt string `json:"prompt"`
}

// TaskGrade is the grade of a prompt (SPEC §3.5).
type TaskGrade struct {
	TaskLevel                string  `json:"task_level"` // "L0".."L3"
	Reason                   string  `json:"reason"`
	RecommendedModel         string  `json:"recommended_model"`
	RecommendedModelProvider string  `json:"recommended_model_provider"`
	Confidence               float64 `json:"confidence"`
}

// ListRequest is GET /v1/qa.
type ListRequest struct {
	ProjectID string `json:"project_id"`
	Status    Status `json:"status,omitempty"`
	MinLevel  int    `json:"min_level,omitempty"`
	// Q filters by a substring of question or answer (case-insensitive).
	Q      string `json:"q,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	// Limit is 1–1000; 0 means 100.
	Limit int `json:"limit,omitempty"`
	// Evidence asks the store for each record's evidence (Record.Evidence):
	// a full export. Never read from a request body.
	Evidence bool `json:"-"`
}

// Validate checks the request; the error names the field.
func (r ListRequest) Validate() error {
	if err := ValidateProjectID(r.ProjectID); err != nil {
		return err
	}
	if r.Status != "" && !r.Status.Valid() {
		return Invalid("status", "unknown status")
	}
	if r.MinLevel < 0 || r.MinLevel > 3 {
		return Invalid("min_level", "must be between 0 and 3")
	}
	if r.Limit < 0 || r.Limit > 1000 {
		return Invalid("limit", "must be between 1 and 1000")
	}
	return nil
}

// ListPage is one page of GET /v1/qa. NextCursor is empty on the last page.
type ListPage struct {
	Items      []Record `json:"items"`
	NextCursor string   `json:"next_cursor"`
}

// PatchRequest is a human verdict or edit (PATCH /admin/v1/qa/{id},
// memex qa deprecate). Nil fields are left alone.
type PatchRequest struct {
	ProjectID string    `json:"project_id"`
	QAID      string    `json:"qa_id"`
	Status    *Status   `json:"status,omitempty"`
	Answer    *string   `json:"answer,omitempty"`
	Summary   *string   `json:"summary,omitempty"`
	Tags      *[]string `json:"tags,omitempty"`
	EventID   string    `json:"event_id,omitempty"`
}

// Validate checks the request; the error names the field.
func (r PatchRequest) Validate() error {
	if err := ValidateProjectID(r.ProjectID); err != nil {
		return err
	}
	if err := ValidateQAID(r.QAID); err != nil {
		return err
	}
	if r.Status != nil && !r.Status.Valid() {
		return Invalid("status", "unknown status")
	}
	if r.Answer != nil && (strings.TrimSpace(*r.Answer) == "" || len(*r.Answer) > MaxAnswerBytes) {
		return Invalid("answer", "must be 1-%d bytes", MaxAnswerBytes)
	}
	return nil
}

func indexField(name string, i int, sub string) string {
	f := name + "[" + strconv.Itoa(i) + "]"
	if sub != "" {
		f += "." + sub
	}
	return f
}

// decodeError turns a JSON type error into a *FieldError naming the field,
// so a 400 says which field was wrong. Syntax errors wrap ErrInvalid.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if ok := asType(err, &te); ok && te.Field != "" {
		return Invalid(strings.TrimPrefix(te.Field, "plain."), "must be %s", jsonType(te.Type.Kind().String()))
	}
	return &FieldError{Field: "body", Message: "malformed JSON: " + err.Error()}
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of type " + kind
}
