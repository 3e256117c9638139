package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
)

// ParseSearchResponse decodes a search response leniently, as the original
// client did: the body must be a top-level JSON array; each item needs only
// qa_id; numbers may be numbers or numeric strings and default to 0; status
// defaults to "active"; "meta" is accepted for "metadata"; expiry_at may be
// RFC 3339 or a naive ISO time (read as UTC). Items that fail to parse are
// skipped; skipped counts them. An object body with an "error" (memex) or a
// non-zero "code" (the original envelope) is returned as an error.
func ParseSearchResponse(body []byte) (matches []core.Match, skipped int, err error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, 0, fmt.Errorf("search response: empty body: %w", core.ErrInvalid)
	}
	if body[0] == '{' {
		return nil, 0, ParseErrorBody(body)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, 0, fmt.Errorf("search response: must be a top-level array: %w", core.ErrInvalid)
	}
	matches = make([]core.Match, 0, len(items))
	for _, raw := range items {
		m, ok := parseMatch(raw)
		if !ok {
			skipped++
			continue
		}
		matches = append(matches, m)
	}
	return matches, skipped, nil
}

// ParseErrorBody turns an error body into an error: memex's
// {"error":{"code","message"}}, the original's envelope {"code","msg"}, or
// FastAPI's {"detail": ...}. The message is kept short.
func ParseErrorBody(body []byte) error {
	r, ok := ParseErrorReply(body)
	if !ok {
		if !json.Valid(bytes.TrimSpace(body)) {
			return fmt.Errorf("response: malformed JSON: %w", core.ErrInvalid)
		}
		return fmt.Errorf("response: expected a top-level array, got an object: %w", core.ErrInvalid)
	}
	switch {
	case r.EnvelopeCode != 0:
		return &RemoteError{Code: strconv.Itoa(r.EnvelopeCode), Message: r.Message, Status: r.EnvelopeCode}
	case r.Shape == ShapeDetail:
		return &RemoteError{Code: "validation_error", Message: r.Message, Status: 422}
	}
	if r.Code == "" {
		r.Code = "error"
	}
	return &RemoteError{Code: r.Code, Message: r.Message}
}

// ErrorReply is an error answer in any shape the two services use:
// memex's {"error": {"code", "message", "field"}} (or {"error": "text"}),
// the original's envelope {"code": <non-zero>, "msg"}, and FastAPI's 422
// {"detail": [{"loc": [...], "msg"}] | "text"}.
type ErrorReply struct {
	// Shape is which of the shapes the reply has: ShapeMemex, ShapeEnvelope
	// or ShapeDetail.
	Shape string
	// Code is memex's error code; "validation_error" for FastAPI's list of
	// validation details; empty for the original's envelope, a bare
	// {"error": "text"} and a {"detail": "text"}.
	Code string
	// Message is the reply's message, shortened to 200 bytes.
	Message string
	// Field is the invalid field, when the reply names one (memex's field,
	// FastAPI's loc without its "body"/"query"/"path" head).
	Field string
	// EnvelopeCode is the original's non-zero in-body code (a number or a
	// numeric string), 0 otherwise.
	EnvelopeCode int
}

// The shapes of an ErrorReply.
const (
	ShapeMemex    = "error"  // {"error": {...}} or {"error": "text"}
	ShapeEnvelope = "code"   // the original's {"code": n, "msg": ...}
	ShapeDetail   = "detail" // FastAPI's {"detail": ...}
)

// ParseErrorReply reads an error reply. ok is false when body is not a
// JSON object holding one of the error shapes.
func ParseErrorReply(body []byte) (r ErrorReply, ok bool) {
	var env struct {
		Error  json.RawMessage `json:"error"`
		Code   json.RawMessage `json:"code"`
		Msg    string          `json:"msg"`
		Detail json.RawMessage `json:"detail"`
	}
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &env) != nil {
		return ErrorReply{}, false
	}
	switch {
	case len(env.Error) > 0 && string(env.Error) != "null" && string(env.Error) != `""`:
		var inner struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		}
		var s string
		switch {
		case json.Unmarshal(env.Error, &inner) == nil:
			r = ErrorReply{Shape: ShapeMemex, Code: inner.Code, Message: inner.Message, Field: inner.Field}
		case json.Unmarshal(env.Error, &s) == nil:
			r = ErrorReply{Shape: ShapeMemex, Message: s}
		default:
			return ErrorReply{}, false
		}
	case len(env.Detail) > 0 && string(env.Detail) != "null":
		r = parseDetail(env.Detail)
	case len(env.Code) > 0:
		n, isNum := EnvelopeCode(env.Code)
		if !isNum || n == 0 {
			return ErrorReply{}, false
		}
		r = ErrorReply{Shape: ShapeEnvelope, Message: env.Msg, EnvelopeCode: n}
	default:
		return ErrorReply{}, false
	}
	r.Message = truncate(r.Message, 200)
	return r, true
}

// parseDetail reads FastAPI's validation detail: [{"loc":["body","limit"],
// "msg":"...","type":"..."}] names the field.
func parseDetail(raw json.RawMessage) ErrorReply {
	r := ErrorReply{Shape: ShapeDetail}
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &items) == nil && len(items) > 0 {
		r.Message = items[0].Msg
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
		r.Field = strings.Join(parts, ".")
		r.Code = "validation_error"
		return r
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		r.Message = s
	} else {
		r.Message = string(raw)
	}
	return r
}

// EnvelopeCode reads the original envelope's code: a number or a numeric
// string. ok is false for anything else (then it is not an envelope).
func EnvelopeCode(raw json.RawMessage) (int, bool) {
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

// Payload returns the useful part of a successful body: data of the
// original's success envelope {"code":0,"msg":"success","data":...}
// ({} when data is absent or null), else the body. An empty body gives nil.
func Payload(body []byte) []byte {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
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
	if n, ok := EnvelopeCode(env.Code); !ok || n != 0 {
		return b
	}
	d := bytes.TrimSpace(env.Data)
	if len(d) == 0 || string(d) == "null" {
		return []byte("{}")
	}
	return d
}

// RemoteError is an error reported by a remote memory service. Is maps it
// to the sentinel of its status or code.
type RemoteError struct {
	Code    string
	Message string
	Status  int
}

func (e *RemoteError) Error() string {
	if e.Message == "" {
		return "remote: " + e.Code
	}
	return "remote: " + e.Code + ": " + truncate(e.Message, 200)
}

// Unwrap maps the code or status to a sentinel.
func (e *RemoteError) Unwrap() error { return SentinelFor(e.Status, e.Code) }

// SentinelFor maps an HTTP status (or an error code) to a core sentinel.
func SentinelFor(status int, code string) error {
	switch code {
	case "not_found":
		return core.ErrNotFound
	case "invalid", "invalid_request", "validation_error":
		return core.ErrInvalid
	case "unauthorized":
		return core.ErrUnauthorized
	case "forbidden":
		return core.ErrForbidden
	case "conflict":
		return core.ErrConflict
	case "too_large", "quota_exceeded":
		return core.ErrTooLarge
	case "unavailable":
		return core.ErrUnavailable
	}
	switch {
	case status == 400 || status == 422:
		return core.ErrInvalid
	case status == 401:
		return core.ErrUnauthorized
	case status == 403:
		return core.ErrForbidden
	case status == 404:
		return core.ErrNotFound
	case status == 409:
		return core.ErrConflict
	case status == 413:
		return core.ErrTooLarge
	case status == 429 || status >= 500:
		return core.ErrUnavailable
	}
	return nil
}

func parseMatch(raw json.RawMessage) (core.Match, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return core.Match{}, false
	}
	var m core.Match
	if !str(obj["qa_id"], &m.QAID) || m.QAID == "" {
		return core.Match{}, false
	}
	str(obj["project_id"], &m.ProjectID)
	str(obj["question"], &m.Question)
	str(obj["answer"], &m.Answer)
	str(obj["summary"], &m.Summary)
	str(obj["source"], &m.Source)
	str(obj["level"], &m.Level)
	m.Score, _ = number(obj["score"])
	m.Relevance, _ = number(obj["relevance"])
	m.Trust, _ = number(obj["trust"])
	m.Freshness, _ = number(obj["freshness"])
	m.Confidence, _ = number(obj["confidence"])
	m.Alpha, _ = number(obj["alpha"])
	m.Beta, _ = number(obj["beta"])
	lvl, _ := number(obj["validation_level"])
	m.ValidationLevel = min(max(int(lvl), 0), 3)
	if _, ok := obj["validation_level"]; !ok && m.Level != "" {
		if l, err := core.ParseLevel(m.Level); err == nil {
			m.ValidationLevel = l
		}
	}
	m.Level = core.LevelName(m.ValidationLevel)
	var status string
	str(obj["status"], &status)
	m.Status = core.Status(strings.ToLower(status))
	if m.Status == "" {
		m.Status = core.StatusActive
	}
	md := obj["metadata"]
	if len(md) == 0 || string(md) == "null" {
		md = obj["meta"]
	}
	if len(md) > 0 {
		_ = json.Unmarshal(md, &m.Metadata)
	}
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.ConsecutiveFail = consecutiveFail(m.Metadata)
	if cf, ok := number(obj["consecutive_fail"]); ok {
		m.ConsecutiveFail = int(cf)
	}
	_ = json.Unmarshal(obj["tags"], &m.Tags)
	if m.Tags == nil {
		m.Tags = []string{}
	}
	var b bool
	if json.Unmarshal(obj["quarantined"], &b) == nil {
		m.Quarantined = b
	}
	var s string
	if str(obj["expiry_at"], &s) && s != "" {
		if t, ok := ParseTime(s); ok {
			m.ExpiryAt = &t
		}
	}
	if str(obj["updated_at"], &s) && s != "" {
		if t, ok := ParseTime(s); ok {
			m.UpdatedAt = t
		}
	}
	if str(obj["last_validated_at"], &s) && s != "" {
		if t, ok := ParseTime(s); ok {
			m.LastValidatedAt = t
		}
	}
	str(obj["receipt_id"], &m.ReceiptID)
	return m, true
}

// consecutiveFail reads metadata.consecutive_fail, else
// metadata.stats.consecutive_fail (the original server's path); ints or
// numeric strings.
func consecutiveFail(md map[string]any) int {
	if v, ok := anyNumber(md["consecutive_fail"]); ok {
		return int(v)
	}
	if st, ok := md["stats"].(map[string]any); ok {
		if v, ok := anyNumber(st["consecutive_fail"]); ok {
			return int(v)
		}
	}
	return 0
}

// ParseTime accepts RFC 3339 (with zone) and the original service's naive
// ISO timestamps (no zone, read as UTC).
func ParseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func str(raw json.RawMessage, dst *string) bool {
	if len(raw) == 0 {
		return false
	}
	return json.Unmarshal(raw, dst) == nil
}

func number(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return v, true
		}
	}
	return 0, false
}

func anyNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// recordTimeKeys are the record's time fields; the original sends naive
// ISO times (no zone), which encoding/json cannot read into time.Time.
var recordTimeKeys = [...]string{"last_used_at", "last_validated_at", "ttl_expire_at", "created_at", "updated_at"}

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
		t, ok := ParseTime(s)
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
