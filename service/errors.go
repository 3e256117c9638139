package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// rateLimitedError is a 429 with the seconds to wait.
type rateLimitedError struct{ retryAfter time.Duration }

func (e *rateLimitedError) Error() string { return "rate limit exceeded" }

// headersTooLargeError is a 431: the request's headers exceed MaxHeaderBytes.
type headersTooLargeError struct{}

func (e *headersTooLargeError) Error() string {
	return "request headers larger than " + strconv.Itoa(MaxHeaderBytes) + " bytes"
}

// notImplementedError is a 501: the store or the server lacks a capability.
type notImplementedError struct{ what string }

func (e *notImplementedError) Error() string { return e.what + " is not available on this server" }

// errorStatus maps an error to its status, code and message. Unknown errors
// are 500 "internal" and their text is not shown to the client.
func errorStatus(err error) (status int, code, msg, field string) {
	var fe *core.FieldError
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	var rl *rateLimitedError
	var ni *notImplementedError
	var qe *core.QuotaError
	var hl *headersTooLargeError
	switch {
	case errors.As(err, &hl):
		return http.StatusRequestHeaderFieldsTooLarge, "headers_too_large", err.Error(), ""
	case errors.As(err, &fe):
		return http.StatusBadRequest, "invalid_request", fe.Error(), fe.Field
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "too_large", "request body larger than " + strconv.FormatInt(mbe.Limit, 10) + " bytes", ""
	case errors.As(err, &rl):
		return http.StatusTooManyRequests, "rate_limited", err.Error(), ""
	case errors.As(err, &ni):
		return http.StatusNotImplemented, "not_implemented", err.Error(), ""
	case errors.As(err, &he):
		return echoStatus(he)
	case errors.As(err, &qe):
		return http.StatusRequestEntityTooLarge, "quota_exceeded", qe.Error(), ""
	case errors.Is(err, core.ErrInvalid):
		return http.StatusBadRequest, "invalid_request", safeMessage(err), ""
	case errors.Is(err, core.ErrUnauthorized):
		return http.StatusUnauthorized, "unauthorized", "missing or unknown API key", ""
	case errors.Is(err, core.ErrForbidden):
		return http.StatusForbidden, "forbidden", safeMessage(err), ""
	case errors.Is(err, core.ErrNotFound):
		return http.StatusNotFound, "not_found", safeMessage(err), ""
	case errors.Is(err, core.ErrConflict):
		return http.StatusConflict, "conflict", safeMessage(err), ""
	case errors.Is(err, core.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large", safeMessage(err), ""
	case errors.Is(err, core.ErrSecret):
		return http.StatusUnprocessableEntity, "secret_detected", "the payload holds a secret and was not stored", ""
	case errors.Is(err, core.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, "unavailable", "the memory store cannot answer now; retry later", ""
	default:
		return http.StatusInternalServerError, "internal", "internal error", ""
	}
}

// safeMessage is the error text: core and the stores never put request text
// in errors (core.MemoryPlugin contract), so ids and counts are all it holds.
func safeMessage(err error) string {
	return err.Error()
}

func echoStatus(he *echo.HTTPError) (int, string, string, string) {
	msg := http.StatusText(he.Code)
	if s, ok := he.Message.(string); ok && s != "" {
		msg = s
	}
	switch he.Code {
	case http.StatusNotFound:
		return he.Code, "not_found", "no such route", ""
	case http.StatusMethodNotAllowed:
		return he.Code, "method_not_allowed", "method not allowed on this route", ""
	case http.StatusRequestEntityTooLarge:
		return he.Code, "too_large", msg, ""
	case http.StatusUnauthorized:
		return he.Code, "unauthorized", msg, ""
	case http.StatusForbidden:
		return he.Code, "forbidden", msg, ""
	case http.StatusServiceUnavailable:
		return he.Code, "unavailable", msg, ""
	}
	if he.Code >= 400 && he.Code < 500 {
		return he.Code, "invalid_request", msg, ""
	}
	return http.StatusInternalServerError, "internal", "internal error", ""
}

// handleError is the server's one echo.HTTPErrorHandler.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, code, msg, field := errorStatus(err)
	h := c.Response().Header()
	switch status {
	case http.StatusServiceUnavailable:
		h.Set("Retry-After", "1")
	case http.StatusTooManyRequests:
		var rl *rateLimitedError
		if errors.As(err, &rl) {
			h.Set("Retry-After", strconv.Itoa(max(1, int((rl.retryAfter+time.Second-1)/time.Second))))
		}
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="memex"`)
	}
	if status >= 500 && status != http.StatusServiceUnavailable && status != http.StatusNotImplemented {
		s.log.Error("request failed", "route", c.Path(), "request_id", h.Get(echo.HeaderXRequestID), "error", err)
		msg += " (request id " + h.Get(echo.HeaderXRequestID) + ")"
	} else if status == http.StatusServiceUnavailable {
		s.log.Warn("store unavailable", "route", c.Path(), "request_id", h.Get(echo.HeaderXRequestID), "error", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = writeJSON(c, status, wire.ErrorResponse{Error: wire.APIError{Code: code, Message: msg, Field: field}})
}

// writeJSON writes v as JSON with status.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

// decodeJSON decodes a request body into dst. Unknown fields are accepted
// (the original clients send extra fields); a type error names the field.
func decodeJSON(body []byte, dst any, emptyOK bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return core.Invalid("body", "a JSON object is required")
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return decodeError(err)
	}
	return nil
}

// decodeError turns a JSON error into a *core.FieldError naming the field
// (never its value).
func decodeError(err error) error {
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return fe
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := strings.TrimPrefix(te.Field, "plain.")
		if field == "" {
			return core.Invalid("body", "must be a JSON object")
		}
		return core.Invalid(field, "has the wrong type (%s)", jsonKind(te.Type.Kind().String()))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return core.Invalid("body", "malformed JSON at byte %d", se.Offset)
	}
	return core.Invalid("body", "malformed JSON")
}

func jsonKind(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "want a number"
	case "string":
		return "want a string"
	case "bool":
		return "want true or false"
	case "slice", "array":
		return "want an array"
	case "map", "struct", "ptr":
		return "want an object"
	}
	return "want " + kind
}
