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
		if k := core.SentinelFor(0, code); k != nil {
			return k
		}
	}
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return core.ErrUnavailable
	case status >= 400 && status < 500:
		if k := core.SentinelFor(status, ""); k != nil {
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
	e := &StatusError{Op: op, Status: status, RequestID: h.Get(headerRequestID)}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		e.RetryAfter = parseRetryAfter(h.Get("Retry-After"), now)
	}
	fillError(e, body)
	return e
}

// errorBody is every error shape the two services use: memex's
// {"error":{"code","message","field"}}, the original's {"code","msg"} and
// FastAPI's {"detail": [...] | "..."}.
type errorBody struct {
	Error  json.RawMessage `json:"error"`
	Code   json.RawMessage `json:"code"`
	Msg    string          `json:"msg"`
	Detail json.RawMessage `json:"detail"`
}

func fillError(e *StatusError, body []byte) {
	var eb errorBody
	if json.Unmarshal(bytes.TrimSpace(body), &eb) != nil {
		return // not JSON (a proxy's HTML page): the status says it all
	}
	switch {
	case len(eb.Error) > 0 && string(eb.Error) != "null":
		var inner struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		}
		var s string
		if json.Unmarshal(eb.Error, &inner) == nil {
			e.Code, e.Message, e.Field = inner.Code, inner.Message, inner.Field
		} else if json.Unmarshal(eb.Error, &s) == nil {
			e.Message = s
		}
	case len(eb.Detail) > 0:
		fillDetail(e, eb.Detail)
	case len(eb.Code) > 0:
		e.Message = eb.Msg
	}
	e.Message = shorten(e.Message, 200)
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

// fillDetail reads FastAPI's validation detail: [{"loc":["body","limit"],
// "msg":"...","type":"..."}] names the field.
func fillDetail(e *StatusError, raw json.RawMessage) {
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &items) == nil && len(items) > 0 {
		e.Message = items[0].Msg
		var parts []string
		for _, l := range items[0].Loc {
			switch v := l.(type) {
			case string:
				if len(parts) == 0 && (v == "body" || v == "query" || v == "path") {
					continue
				}
				parts = append(parts, v)
			case float64:
				if len(parts) > 0 {
					parts[len(parts)-1] += "[" + strconv.Itoa(int(v)) + "]"
				}
			}
		}
		e.Field = strings.Join(parts, ".")
		if e.Code == "" {
			e.Code = "validation_error"
		}
		return
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		e.Message = s
	}
}

// checkBody finds the errors a service reports with a 2xx status: the
// original's {"code": non-zero, "msg": ...} (on every route) and an
// {"error": {...}} object.
func checkBody(op string, r response) error {
	b := bytes.TrimSpace(r.body)
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	var eb errorBody
	if json.Unmarshal(b, &eb) != nil {
		return nil // decoded (and reported) by the route's decoder
	}
	if len(eb.Code) > 0 {
		if n, ok := envelopeCode(eb.Code); ok && n != 0 {
			e := &StatusError{Op: op, Status: n, Message: shorten(eb.Msg, 200), InBody: true, RequestID: r.header.Get(headerRequestID)}
			findField(e)
			return e
		}
	}
	if len(eb.Error) > 0 && string(eb.Error) != "null" && string(eb.Error) != `""` {
		e := &StatusError{Op: op, Status: r.status, InBody: true, RequestID: r.header.Get(headerRequestID)}
		fillError(e, b)
		return e
	}
	return nil
}

// envelopeCode reads the original envelope's code: a number or a numeric
// string. ok is false for anything else (then it is not an envelope).
func envelopeCode(raw json.RawMessage) (int, bool) {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return int(f), true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			return n, true
		}
	}
	return 0, false
}

// payload returns the useful part of a 2xx body: data of the original's
// success envelope {"code":0,"msg":"success","data":...}, else the body.
// A 204 (or empty body) gives nil.
func payload(r response) []byte {
	b := bytes.TrimSpace(r.body)
	if r.status == http.StatusNoContent || len(b) == 0 {
		return nil
	}
	if b[0] != '{' {
		return b
	}
	var env struct {
		Code json.RawMessage `json:"code"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(b, &env) != nil || len(env.Code) == 0 {
		return b
	}
	if n, ok := envelopeCode(env.Code); !ok || n != 0 {
		return b
	}
	d := bytes.TrimSpace(env.Data)
	if len(d) == 0 || string(d) == "null" {
		return []byte("{}")
	}
	return d
}

// errUndecodable reports a 2xx answer memex cannot read: the service is
// not answering as a memory service should, so it counts as unavailable.
func errUndecodable(op string, status int, what string) error {
	return fmt.Errorf("http: %s: undecodable response (status %d): %s: %w", op, status, what, core.ErrUnavailable)
}

// decodeSearch parses a search answer: a top-level array (also inside the
// original's envelope), leniently (core.ParseSearchResponse). The
// X-Memex-Receipt header fills receipt_id on matches without one.
func decodeSearch(op string, r response) ([]core.Match, int, error) {
	b := payload(r)
	if b == nil {
		return []core.Match{}, 0, nil
	}
	ms, skipped, err := core.ParseSearchResponse(b)
	if err != nil {
		var re *core.RemoteError
		if errors.As(err, &re) {
			return nil, 0, &StatusError{Op: op, Status: r.status, Code: re.Code, Message: shorten(re.Message, 200), InBody: true}
		}
		return nil, 0, errUndecodable(op, r.status, "want a top-level array of matches")
	}
	if rid := r.header.Get(headerReceipt); rid != "" {
		for i := range ms {
			if ms[i].ReceiptID == "" {
				ms[i].ReceiptID = rid
			}
		}
	}
	return ms, skipped, nil
}

// decodeHit reads {updated: n}. The original (empty envelope) and a 204 do
// not say: every reference sent counts as applied.
func decodeHit(op string, r response, sent int) (core.HitResult, error) {
	b := payload(r)
	if b == nil {
		return core.HitResult{Updated: sent}, nil
	}
	var v struct {
		Updated *int `json:"updated"`
	}
	if json.Unmarshal(b, &v) != nil {
		return core.HitResult{}, errUndecodable(op, r.status, "want {updated}")
	}
	if v.Updated == nil {
		return core.HitResult{Updated: sent}, nil
	}
	return core.HitResult{Updated: *v.Updated}, nil
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

// decodeRecordAnswer reads {record: {...}} (memex, or data.record in the
// original's envelope) or a bare record.
func decodeRecordAnswer(op string, r response) (core.Record, bool, error) {
	b := payload(r)
	if b == nil {
		return core.Record{}, false, nil
	}
	var v struct {
		Record json.RawMessage `json:"record"`
	}
	if json.Unmarshal(b, &v) != nil {
		return core.Record{}, false, errUndecodable(op, r.status, "want {record}")
	}
	raw := v.Record
	if len(raw) == 0 || string(raw) == "null" {
		if !bytes.Contains(b, []byte(`"qa_id"`)) {
			return core.Record{}, false, nil
		}
		raw = b
	}
	rec, err := DecodeRecord(raw)
	if err != nil {
		return core.Record{}, false, errUndecodable(op, r.status, err.Error())
	}
	return rec, true, nil
}

// recordTimeKeys are the record's time fields; the original sends naive
// ISO times (no zone), which encoding/json cannot read into time.Time.
var recordTimeKeys = []string{"last_used_at", "last_validated_at", "ttl_expire_at", "created_at", "updated_at"}

// DecodeRecord decodes a record leniently: memex's and the original's
// field names, RFC 3339 or naive ISO times (read as UTC), "meta" for
// "metadata", and a field of the wrong type dropped rather than failing the
// whole record. Only qa_id is required.
func DecodeRecord(raw []byte) (core.Record, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return core.Record{}, errors.New("record is not a JSON object")
	}
	for _, k := range recordTimeKeys {
		v, ok := obj[k]
		if !ok || string(v) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			delete(obj, k)
			continue
		}
		t, ok := core.ParseTime(s)
		if !ok {
			delete(obj, k)
			continue
		}
		obj[k], _ = json.Marshal(t.Format(time.RFC3339Nano))
	}
	if md, ok := obj["metadata"]; !ok || string(md) == "null" {
		if m, ok := obj["meta"]; ok {
			obj["metadata"] = m
		}
	}
	var rec core.Record
	for range len(obj) + 1 {
		b, _ := json.Marshal(obj)
		rec = core.Record{}
		err := json.Unmarshal(b, &rec)
		if err == nil {
			break
		}
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field == "" {
			return core.Record{}, errors.New("record: malformed")
		}
		top, _, _ := strings.Cut(te.Field, ".")
		if top == "qa_id" {
			return core.Record{}, errors.New("record: qa_id must be a string")
		}
		if _, ok := obj[top]; !ok {
			return core.Record{}, errors.New("record: malformed")
		}
		delete(obj, top)
	}
	if rec.QAID == "" {
		return core.Record{}, errors.New("record: no qa_id")
	}
	if _, ok := obj["validation_level"]; !ok && rec.Level != "" {
		if l, err := core.ParseLevel(rec.Level); err == nil {
			rec.ValidationLevel = l
		}
	}
	rec.ValidationLevel = min(max(rec.ValidationLevel, 0), 3)
	rec.Level = core.LevelName(rec.ValidationLevel)
	if _, ok := obj["consecutive_fail"]; !ok {
		if st, ok := rec.Metadata["stats"].(map[string]any); ok {
			if n, ok := st["consecutive_fail"].(float64); ok {
				rec.ConsecutiveFail = int(n)
			}
		}
	}
	if rec.Tags == nil {
		rec.Tags = []string{}
	}
	if rec.Metadata == nil {
		rec.Metadata = map[string]any{}
	}
	return rec, nil
}

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
		rec, err := DecodeRecord(raw)
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
