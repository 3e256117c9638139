package core

import (
	"errors"
	"fmt"
)

// Sentinel errors. Plugins wrap them (fmt.Errorf("redis: get: %w", ErrNotFound))
// and callers test them with errors.Is. plugins/http maps HTTP statuses back
// to the same sentinels, so a kind survives the wire.
var (
	// ErrNotFound: the QA (or project) does not exist or is not visible.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request is malformed or a value is out of range.
	// A *FieldError wrapping it names the field.
	ErrInvalid = errors.New("invalid request")
	// ErrUnavailable: the store cannot be reached or is busy right now; the
	// same request may succeed later. Callers fail open on it.
	ErrUnavailable = errors.New("memory unavailable")
	// ErrUnauthorized: no or unknown credentials.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the credentials may not touch that project or action.
	ErrForbidden = errors.New("forbidden")
	// ErrConflict: the write conflicts with the current state (for example a
	// human lock, or an idempotency key reused with another body).
	ErrConflict = errors.New("conflict")
	// ErrTooLarge: a quota or size limit would be exceeded.
	ErrTooLarge = errors.New("too large")
	// ErrSecret: the payload holds a secret and the policy is to block it.
	ErrSecret = errors.New("secret detected")
	// ErrNotApplied: the store kept a report (a validation) in its audit log
	// but did not apply it — a service's receipt check refused it. The
	// error says which check (docs/API.md); resending it changes nothing.
	ErrNotApplied = errors.New("not applied")
)

// FieldError reports which field of a request is invalid. It wraps ErrInvalid.
// Message must never contain the field's value (it may be a secret).
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s", e.Field, e.Message)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Invalid returns a *FieldError for field.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}
