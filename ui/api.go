package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/memex-dev/memex/wire"
)

// apiError is a non-2xx answer of the API, with its JSON error.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("the API answered %d", e.Status)
}

// buffer is an in-memory http.ResponseWriter for in-process API calls.
type buffer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *buffer) Header() http.Header { return b.header }
func (b *buffer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *buffer) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// api calls the memex API in process as the session's key: path with its
// query, body marshalled as JSON, the answer decoded into out. A non-2xx
// answer is an *apiError.
func (h *Handler) api(r *http.Request, s session, method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, rd)
	if err != nil {
		return err
	}
	req.RemoteAddr = r.RemoteAddr
	req.Host = r.Host
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	buf := &buffer{header: http.Header{}}
	h.cfg.API.ServeHTTP(buf, req)
	if buf.status == 0 {
		buf.status = http.StatusOK
	}
	if buf.status < 200 || buf.status > 299 {
		e := &apiError{Status: buf.status}
		var env wire.ErrorResponse
		if json.Unmarshal(buf.body.Bytes(), &env) == nil {
			e.Code, e.Message = env.Error.Code, env.Error.Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(buf.body.Bytes(), out); err != nil {
		return fmt.Errorf("decoding %s %s: %w", method, path, err)
	}
	return nil
}
