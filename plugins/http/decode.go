package httpstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// StatusError is an error answer of the service: a non-2xx status, or the
// original service's in-body error (HTTP 200 with {"code": non-zero,
// "msg": ...}). It unwraps to the core sentinel of its status or code, and
// for a 400/422 that names a field, to a *core.FieldError naming it, so
// errors.Is and errors.As behave as with a local store.
type StatusError struct {
	Op string
	// Status is the HTTP status, or the in-body code of the original service.
	Status int
	// Code is the service's error code ("not_found", "invalid", ...), if any.
	Code string
	// Message is the service's message, shortened. memex serve never puts
	// request text in it.
	Message string
	// Field is the invalid field, when the service named one.
	Field string
	// RetryAfter is the wait a 429 or 503 asked for.
	RetryAfter time.Duration
	// InBody is true for the original's HTTP-200 errors.
	InBody bool
	// RequestID is the service's X-Request-Id, for its logs.
	RequestID string
}

func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "http: %s: ", e.Op)
	if e.InBody {
		fmt.Fprintf(&b, "service error %d", e.Status)
	} else {
		fmt.Fprintf(&b, "status %d", e.Status)
	}
	if e.Code != "" && e.Code != strconv.Itoa(e.Status) {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	switch {
	case e.Field != "":
		fmt.Fprintf(&b, ": %s: %s", e.Field, e.Message)
	case e.Message != "":
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", shorten(e.RequestID, 64))
	}
	return b.String()
}

// Unwrap returns the sentinel (or the *core.FieldError) of the error.
func (e *StatusError) Unwrap() []error {
	kind := kindFor(e.Status, e.Code)
	if e.Field != "" && kind == core.ErrInvalid {
		return []error{&core.FieldError{Field: e.Field, Message: e.Message}}
	}
	return []error{kind}
}

// kindFor maps a status (and the service's code, which wins when it is
// one of memex's) to a core sentinel: 400/422 invalid (secret_detected:
// core.ErrSecret), 401 unauthorized, 403 forbidden, 404 not found, 409
// conflict, 413 too large, 501 invalid (not implemented: never retried),
// 408/429/5xx unavailable; any other 4xx is invalid, anything else
// unavailable.
func kindFor(status int, code string) error {
	switch {
	case code == "secret_detected":
		return core.ErrSecret
	case status == http.StatusNotImplemented || code == "not_implemented":
		// The service cannot do this at all: retrying or spooling is futile.
		return core.ErrInvalid
	}
	if code != "" {
		if k := wire.SentinelFor(0, code); k != nil {
			return k
		}
	}
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return core.ErrUnavailable
	case status >= 400 && status < 500:
		if k := wire.SentinelFor(status, ""); k != nil {
			return k
		}
		return core.ErrInvalid
	}
	return core.ErrUnavailable
}

// fieldPrefix splits "field: message" (the field [A-Za-z_][A-Za-z0-9_.[\]]*,
// the message one non-empty line) off an error message. Hand-written: a
// regexp would be compiled at every memex start-up.
func fieldPrefix(msg string) (field, rest string, ok bool) {
	if msg == "" || !(msg[0] == '_' || 'a' <= msg[0]|0x20 && msg[0]|0x20 <= 'z') {
		return "", "", false
	}
	i := 1
	for i < len(msg) {
		c := msg[i]
		if c == '_' || c == '.' || c == '[' || c == ']' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z' {
			i++
			continue
		}
		break
	}
	rest, ok = strings.CutPrefix(msg[i:], ": ")
	if !ok || rest == "" || strings.IndexByte(rest, '\n') >= 0 {
		return "", "", false
	}
	return msg[:i], rest, true
}

// statusError builds the error of a non-2xx answer.
func statusError(op string, status int, h http.Header, body []byte, now time.Time) *StatusError {
	e := &StatusError{Op: op, Status: status, RequestID: h.Get(wire.HeaderRequestID)}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		e.RetryAfter = parseRetryAfter(h.Get("Retry-After"), now)
	}
	fillError(e, body)
	return e
}

func fillError(e *StatusError, body []byte) {
	r, ok := wire.ParseErrorReply(body)
	if !ok {
		return // not an error shape (a proxy's HTML page): the status says it all
	}
	e.Code, e.Message, e.Field = r.Code, r.Message, r.Field
	findField(e)
}

// findField takes the field name from an invalid-request message of the
// form "field: message" when the service did not name it separately.
func findField(e *StatusError) {
	if e.Field == "" && kindFor(e.Status, e.Code) == core.ErrInvalid {
		if field, rest, ok := fieldPrefix(e.Message); ok {
			e.Field, e.Message = field, rest
		}
	}
}

// checkBody finds the errors a service reports with a 2xx status: the
// original's {"code": non-zero, "msg": ...} (on every route) and an
// {"error": {...}} object.
func checkBody(op string, r response) error {
	er, ok := wire.ParseErrorReply(r.body)
	if !ok || er.Shape == wire.ShapeDetail {
		return nil // not an error (decoded, and reported, by the route's decoder)
	}
	e := &StatusError{Op: op, Status: r.status, Code: er.Code, Message: er.Message, Field: er.Field, InBody: true, RequestID: r.header.Get(wire.HeaderRequestID)}
	if er.EnvelopeCode != 0 {
		e.Status = er.EnvelopeCode
	}
	findField(e)
	return e
}

// payload returns the useful part of a 2xx body (wire.Payload). A 204
// gives nil.
func payload(r response) []byte {
	if r.status == http.StatusNoContent {
		return nil
	}
	return wire.Payload(r.body)
}

// errUndecodable reports a 2xx answer memex cannot read: the service is
// not answering as a memory service should, so it counts as unavailable.
func errUndecodable(op string, status int, what string) error {
	return fmt.Errorf("http: %s: undecodable response (status %d): %s: %w", op, status, what, core.ErrUnavailable)
}

// decodeSearch parses a search answer: a top-level array (also inside the
// original's envelope), leniently (wire.ParseSearchResponse). The
// X-Memex-Receipt header fills receipt_id on matches without one.
func decodeSearch(op string, r response) ([]core.Match, int, error) {
	b := payload(r)
	if b == nil {
		return []core.Match{}, 0, nil
	}
	ms, skipped, err := wire.ParseSearchResponse(b)
	if err != nil {
		var re *wire.RemoteError
		if errors.As(err, &re) {
			return nil, 0, &StatusError{Op: op, Status: r.status, Code: re.Code, Message: shorten(re.Message, 200), InBody: true}
		}
		return nil, 0, errUndecodable(op, r.status, "want a top-level array of matches")
	}
	if rid := r.header.Get(wire.HeaderReceipt); rid != "" {
		for i := range ms {
			if ms[i].ReceiptID == "" {
				ms[i].ReceiptID = rid
			}
		}
	}
	return ms, skipped, nil
}

// decodeHit reads {updated, ignored, reason} (wire.HitResponse). The
// original (empty envelope) and a 204 do not say: every reference sent
// counts as applied.
func decodeHit(op string, r response, sent int) (core.HitResult, error) {
	b := payload(r)
	if b == nil {
		return core.HitResult{Updated: sent}, nil
	}
	var v struct {
		Updated *int   `json:"updated"`
		Ignored int    `json:"ignored"`
		Reason  string `json:"reason"`
	}
	if json.Unmarshal(b, &v) != nil {
		return core.HitResult{}, errUndecodable(op, r.status, "want {updated}")
	}
	if v.Updated == nil {
		return core.HitResult{Updated: sent - v.Ignored, Ignored: v.Ignored, Reason: v.Reason}, nil
	}
	return core.HitResult{Updated: *v.Updated, Ignored: v.Ignored, Reason: v.Reason}, nil
}

// decodeCandidate reads {qa_id, status, deduplicated_into}. The original
// creates candidates asynchronously ({task_id, status:"pending"}): the
// result then has no qa_id and status "pending", as does a 204.
func decodeCandidate(op string, r response) (core.CandidateResult, error) {
	b := payload(r)
	if b == nil {
		return core.CandidateResult{Status: "pending"}, nil
	}
	var v struct {
		QAID             string `json:"qa_id"`
		Status           string `json:"status"`
		DeduplicatedInto string `json:"deduplicated_into"`
	}
	if json.Unmarshal(b, &v) != nil {
		return core.CandidateResult{}, errUndecodable(op, r.status, "want {qa_id, status}")
	}
	if v.QAID == "" {
		return core.CandidateResult{Status: "pending"}, nil
	}
	st := core.Status(strings.ToLower(v.Status))
	if st == "" {
		st = core.StatusCandidate
	}
	return core.CandidateResult{QAID: v.QAID, Status: st, DeduplicatedInto: v.DeduplicatedInto}, nil
}

// recordAnswer is a decoded {record, applied, reason} (wire.RecordResponse).
type recordAnswer struct {
	rec     core.Record
	ok      bool // a record was sent
	applied *bool
	reason  string
}

// decodeRecordAnswer reads {record: {...}, applied, reason} (memex, or
// data.record in the original's envelope) or a bare record.
func decodeRecordAnswer(op string, r response) (recordAnswer, error) {
	b := payload(r)
	if b == nil {
		return recordAnswer{}, nil
	}
	var v struct {
		Record  json.RawMessage `json:"record"`
		Applied *bool           `json:"applied"`
		Reason  string          `json:"reason"`
	}
	if json.Unmarshal(b, &v) != nil {
		return recordAnswer{}, errUndecodable(op, r.status, "want {record}")
	}
	ans := recordAnswer{applied: v.Applied, reason: v.Reason}
	raw := v.Record
	if len(raw) == 0 || string(raw) == "null" {
		if !bytes.Contains(b, []byte(`"qa_id"`)) {
			return ans, nil
		}
		raw = b
	}
	rec, err := wire.DecodeRecord(raw)
	if err != nil {
		return recordAnswer{}, errUndecodable(op, r.status, err.Error())
	}
	ans.rec, ans.ok = rec, true
	return ans, nil
}

// NotAppliedError is a validation the service stored in its audit log only
// (applied: false): Reason is the receipt check that refused it
// (wire.ReasonReceiptUsed, ...), Record the QA as it stands. It matches
// core.ErrNotApplied.
type NotAppliedError struct {
	Op     string
	QAID   string
	Reason string
	Record core.Record
}

func (e *NotAppliedError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("http: %s: %s: not applied, kept in the audit log only: %s", e.Op, e.QAID, reason)
}

// Unwrap returns core.ErrNotApplied.
func (e *NotAppliedError) Unwrap() error { return core.ErrNotApplied }

func decodeList(op string, r response) (core.ListPage, error) {
	b := payload(r)
	var v struct {
		Items      []json.RawMessage `json:"items"`
		NextCursor string            `json:"next_cursor"`
	}
	if b == nil || json.Unmarshal(b, &v) != nil {
		return core.ListPage{}, errUndecodable(op, r.status, "want {items, next_cursor}")
	}
	page := core.ListPage{Items: make([]core.Record, 0, len(v.Items)), NextCursor: v.NextCursor}
	for _, raw := range v.Items {
		rec, err := wire.DecodeRecord(raw)
		if err != nil {
			continue
		}
		page.Items = append(page.Items, rec)
	}
	return page, nil
}

// decodeObject decodes a plain object answer into dst (also inside the
// original's envelope, or under one wrapping key such as "stats").
func decodeObject(op string, r response, dst any, wrapKey string) error {
	b := payload(r)
	if b == nil {
		return errUndecodable(op, r.status, "empty body")
	}
	if wrapKey != "" {
		var w map[string]json.RawMessage
		if json.Unmarshal(b, &w) == nil {
			if inner, ok := w[wrapKey]; ok && len(w) == 1 {
				b = inner
			}
		}
	}
	if json.Unmarshal(b, dst) != nil {
		return errUndecodable(op, r.status, "want a JSON object")
	}
	return nil
}

// decodeProjects reads a top-level array of projects or {projects|items: [...]}.
func decodeProjects(op string, r response) ([]core.ProjectSummary, error) {
	b := payload(r)
	var out []core.ProjectSummary
	if b != nil && json.Unmarshal(b, &out) == nil {
		return out, nil
	}
	var w struct {
		Projects []core.ProjectSummary `json:"projects"`
		Items    []core.ProjectSummary `json:"items"`
	}
	if b == nil || json.Unmarshal(b, &w) != nil {
		return nil, errUndecodable(op, r.status, "want an array of projects")
	}
	if w.Projects != nil {
		return w.Projects, nil
	}
	if w.Items == nil {
		return []core.ProjectSummary{}, nil
	}
	return w.Items, nil
}

// shorten cuts s to at most n bytes on a UTF-8 boundary.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
