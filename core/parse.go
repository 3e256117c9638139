package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSearchResponse decodes a search response leniently, as the original
// client did: the body must be a top-level JSON array; each item needs only
// qa_id; numbers may be numbers or numeric strings and default to 0; status
// defaults to "active"; "meta" is accepted for "metadata"; expiry_at may be
// RFC 3339 or a naive ISO time (read as UTC). Items that fail to parse are
// skipped; skipped counts them. An object body with an "error" (memex) or a
// non-zero "code" (the original envelope) is returned as an error.
func ParseSearchResponse(body []byte) (matches []Match, skipped int, err error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, 0, fmt.Errorf("search response: empty body: %w", ErrInvalid)
	}
	if body[0] == '{' {
		return nil, 0, ParseErrorBody(body)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, 0, fmt.Errorf("search response: must be a top-level array: %w", ErrInvalid)
	}
	matches = make([]Match, 0, len(items))
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
	var env struct {
		Error  json.RawMessage `json:"error"`
		Code   json.RawMessage `json:"code"`
		Msg    string          `json:"msg"`
		Detail json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("response: malformed JSON: %w", ErrInvalid)
	}
	if len(env.Error) > 0 {
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(env.Error, &e) == nil && e.Code != "" {
			return &RemoteError{Code: e.Code, Message: e.Message}
		}
		var s string
		if json.Unmarshal(env.Error, &s) == nil {
			return &RemoteError{Code: "error", Message: s}
		}
	}
	if len(env.Code) > 0 {
		if n, ok := number(env.Code); ok && n != 0 {
			return &RemoteError{Code: strconv.Itoa(int(n)), Message: env.Msg, Status: int(n)}
		}
	}
	if len(env.Detail) > 0 {
		return &RemoteError{Code: "validation_error", Message: truncate(string(env.Detail), 200), Status: 422}
	}
	return fmt.Errorf("response: expected a top-level array, got an object: %w", ErrInvalid)
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
		return ErrNotFound
	case "invalid", "invalid_request", "validation_error":
		return ErrInvalid
	case "unauthorized":
		return ErrUnauthorized
	case "forbidden":
		return ErrForbidden
	case "conflict":
		return ErrConflict
	case "too_large", "quota_exceeded":
		return ErrTooLarge
	case "unavailable":
		return ErrUnavailable
	}
	switch {
	case status == 400 || status == 422:
		return ErrInvalid
	case status == 401:
		return ErrUnauthorized
	case status == 403:
		return ErrForbidden
	case status == 404:
		return ErrNotFound
	case status == 409:
		return ErrConflict
	case status == 413:
		return ErrTooLarge
	case status == 429 || status >= 500:
		return ErrUnavailable
	}
	return nil
}

func parseMatch(raw json.RawMessage) (Match, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Match{}, false
	}
	var m Match
	if !str(obj["qa_id"], &m.QAID) || m.QAID == "" {
		return Match{}, false
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
		if l, err := ParseLevel(m.Level); err == nil {
			m.ValidationLevel = l
		}
	}
	m.Level = LevelName(m.ValidationLevel)
	var status string
	str(obj["status"], &status)
	m.Status = Status(strings.ToLower(status))
	if m.Status == "" {
		m.Status = StatusActive
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
