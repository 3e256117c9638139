package httpstore

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"empty", ""},
		{"no scheme", "memex.example.com"},
		{"ftp", "ftp://memex.example.com"},
		{"credentials", "https://user:hunter2secret@memex.example.com"},
		{"query", "https://memex.example.com/?x=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{BaseURL: tc.url})
			if !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "hunter2secret") {
				t.Fatalf("error leaks the URL's password: %v", err)
			}
		})
	}
}

func TestRequestShape(t *testing.T) {
	conf := 0.7
	st := core.StatusVerified
	ans := "use a sync.Map"
	tests := []struct {
		name       string
		reply      string
		call       func(ctx context.Context, s *Store) error
		method     string
		path       string
		query      string
		write      bool
		bodyFields map[string]any
	}{
		{"search", `[]`, func(ctx context.Context, s *Store) error {
			_, err := s.Search(ctx, core.SearchRequest{ProjectID: "acme", Query: "race", MinScore: 0.3, ReceiptID: "rc-1"})
			return err
		}, "POST", "/base/v1/qa/search", "", false, map[string]any{"project_id": "acme", "query": "race", "limit": 6.0, "min_score": 0.3, "receipt_id": "rc-1"}},
		{"hit", `{"updated":1}`, func(ctx context.Context, s *Store) error {
			_, err := s.RecordHit(ctx, core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "qa-1", Shown: true}}, EventID: "ev-hit", RunID: "run-1"})
			return err
		}, "POST", "/base/v1/qa/hit", "", true, map[string]any{"project_id": "acme", "event_id": "ev-hit", "run_id": "run-1"}},
		{"candidate", `{"qa_id":"qa-9","status":"candidate"}`, func(ctx context.Context, s *Store) error {
			_, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "acme", Question: "q?", Answer: "a.", Confidence: &conf, EventID: "ev-cand"})
			return err
		}, "POST", "/base/v1/qa/candidates", "", true, map[string]any{"question": "q?", "answer": "a.", "confidence": 0.7, "event_id": "ev-cand"}},
		{"validate", `{"record":{"qa_id":"qa-1"}}`, func(ctx context.Context, s *Store) error {
			_, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "acme", QAID: "qa-1", Result: "success", SignalStrength: "strong", EventID: "ev-val"})
			return err
		}, "POST", "/base/v1/qa/validate", "", true, map[string]any{"qa_id": "qa-1", "result": "pass", "signal_strength": "strong", "event_id": "ev-val"}},
		{"grade", `{"task_level":"L2"}`, func(ctx context.Context, s *Store) error {
			_, err := s.TaskGrade(ctx, core.TaskGradeRequest{Prompt: "fix it"})
			return err
		}, "POST", "/base/v1/task/grade", "", false, map[string]any{"prompt": "fix it"}},
		{"get", `{"record":{"qa_id":"qa/1"}}`, func(ctx context.Context, s *Store) error {
			_, err := s.Get(ctx, "acme", "qa.1")
			return err
		}, "GET", "/base/v1/qa/qa.1", "project_id=acme", false, nil},
		{"list", `{"items":[],"next_cursor":""}`, func(ctx context.Context, s *Store) error {
			_, err := s.List(ctx, core.ListRequest{ProjectID: "acme", Status: core.StatusActive, MinLevel: 2, Q: "cache", Cursor: "c1", Limit: 10})
			return err
		}, "GET", "/base/v1/qa", "cursor=c1&limit=10&min_level=2&project_id=acme&q=cache&status=active", false, nil},
		{"delete", `{"deleted":true}`, func(ctx context.Context, s *Store) error {
			return s.Delete(ctx, "acme", "qa-1")
		}, "DELETE", "/base/v1/qa/qa-1", "project_id=acme", true, nil},
		{"patch", `{"record":{"qa_id":"qa-1","status":"verified"}}`, func(ctx context.Context, s *Store) error {
			_, err := s.Patch(ctx, core.PatchRequest{ProjectID: "acme", QAID: "qa-1", Status: &st, Answer: &ans, EventID: "ev-patch"})
			return err
		}, "PATCH", "/base/admin/v1/qa/qa-1", "project_id=acme", true, map[string]any{"status": "verified", "answer": "use a sync.Map", "event_id": "ev-patch"}},
		{"verdict", `{"record":{"qa_id":"qa-1","status":"active"}}`, func(ctx context.Context, s *Store) error {
			active := core.StatusActive
			_, err := s.Patch(ctx, core.PatchRequest{ProjectID: "acme", QAID: "qa-1", Status: &active, EventID: "ev-verdict"})
			return err
		}, "POST", "/base/admin/v1/qa/qa-1/reactivate", "project_id=acme", true, map[string]any{"project_id": "acme"}},
		{"expire", `{"expired":3}`, func(ctx context.Context, s *Store) error {
			_, err := s.Expire(ctx, time.Now(), 50)
			return err
		}, "POST", "/base/v1/qa/expire", "", true, map[string]any{"batch_size": 50.0}},
		{"stats", `{"project_id":"acme","total":3}`, func(ctx context.Context, s *Store) error {
			_, err := s.Stats(ctx, "acme")
			return err
		}, "GET", "/base/admin/v1/projects/acme/stats", "", false, nil},
		{"projects", `[{"project_id":"acme","total":3}]`, func(ctx context.Context, s *Store) error {
			_, err := s.Projects(ctx)
			return err
		}, "GET", "/base/admin/v1/projects", "", false, nil},
		{"ping", `{"status":"ok"}`, func(ctx context.Context, s *Store) error {
			return s.Ping(ctx)
		}, "GET", "/base/readyz", "", false, nil},
	}
	type ctxKey struct{}
	for _, tc := range tests {
		for _, key := range []string{"", "sk-test-key"} {
			name := tc.name + "/no-key"
			if key != "" {
				name = tc.name + "/key"
			}
			t.Run(name, func(t *testing.T) {
				s, rc, _ := newFake(t, Config{BaseURL: "https://memex.test/base/", APIKey: key}, answer(200, tc.reply))
				ctx := context.WithValue(t.Context(), ctxKey{}, "caller")
				if err := tc.call(ctx, s); err != nil {
					t.Fatalf("call: %v", err)
				}
				reqs := rc.requests()
				if len(reqs) != 1 {
					t.Fatalf("got %d requests, want 1", len(reqs))
				}
				r := reqs[0]
				if r.method != tc.method || r.path != tc.path || r.query != tc.query {
					t.Errorf("request = %s %s?%s, want %s %s?%s", r.method, r.path, r.query, tc.method, tc.path, tc.query)
				}
				if got := r.ctx.Value(ctxKey{}); got != "caller" {
					t.Errorf("request context does not carry the caller's values (got %v)", got)
				}
				if _, ok := r.ctx.Deadline(); !ok {
					t.Errorf("request context has no per-attempt deadline")
				}
				wantAuth := ""
				if key != "" {
					wantAuth = "Bearer " + key
				}
				if got := r.header.Get("Authorization"); got != wantAuth {
					t.Errorf("Authorization = %q, want %q", got, wantAuth)
				}
				if _, has := r.header["Authorization"]; key == "" && has {
					t.Errorf("Authorization header sent without a key")
				}
				if got := r.header.Get("Accept"); got != "application/json" {
					t.Errorf("Accept = %q", got)
				}
				idem := r.header.Get("Idempotency-Key")
				if tc.write != (idem != "") {
					t.Errorf("Idempotency-Key = %q, want one only on writes (write=%v)", idem, tc.write)
				}
				if ev, ok := tc.bodyFields["event_id"]; ok && idem != ev {
					t.Errorf("Idempotency-Key = %q, want the EventID %v", idem, ev)
				}
				if tc.bodyFields != nil {
					if got := r.header.Get("Content-Type"); got != "application/json" {
						t.Errorf("Content-Type = %q", got)
					}
				}
				for k, v := range tc.bodyFields {
					if r.body[k] != v {
						t.Errorf("body[%s] = %v, want %v (body %s)", k, r.body[k], v, r.rawBody)
					}
				}
			})
		}
	}
}

func TestExpireSendsNow(t *testing.T) {
	s, rc, _ := newFake(t, Config{}, answer(200, `{"expired":2}`))
	now := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	n, err := s.Expire(t.Context(), now, 5000)
	if err != nil || n != 2 {
		t.Fatalf("Expire = %d, %v", n, err)
	}
	b := rc.requests()[0].body
	if b["now"] != "2027-01-02T03:04:05Z" || b["batch_size"] != 1000.0 {
		t.Errorf("body = %v; want now and batch_size clamped to 1000", b)
	}
}

func TestGeneratedIdempotencyKeyIsStableAcrossRetries(t *testing.T) {
	s, rc, _ := newFake(t, Config{}, answer(503, ``), answer(502, ``), answer(200, `{"updated":1}`))
	res, err := s.RecordHit(t.Context(), core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "qa-1", Shown: true}}})
	if err != nil || res.Updated != 1 {
		t.Fatalf("RecordHit = %+v, %v", res, err)
	}
	reqs := rc.requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d attempts, want 3", len(reqs))
	}
	key := reqs[0].header.Get("Idempotency-Key")
	if !strings.HasPrefix(key, "ev-") {
		t.Fatalf("generated key %q", key)
	}
	for i, r := range reqs {
		if got := r.header.Get("Idempotency-Key"); got != key {
			t.Errorf("attempt %d: key %q, want %q", i, got, key)
		}
		if r.body["event_id"] != key {
			t.Errorf("attempt %d: body event_id %v, want the key %q", i, r.body["event_id"], key)
		}
	}
	// A second write gets a different key.
	if _, err := s.RecordHit(t.Context(), core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "qa-1"}}}); err != nil {
		t.Fatal(err)
	}
	if got := rc.requests()[3].header.Get("Idempotency-Key"); got == key || got == "" {
		t.Errorf("second write reused key %q", got)
	}
}

func TestPerAttemptTimeout(t *testing.T) {
	hang := func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	s, rc, _ := newFake(t, Config{Timeout: 30 * time.Millisecond, Retries: 2}, hang)
	start := time.Now()
	_, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"})
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err = %v, want it to say it timed out", err)
	}
	if n := len(rc.requests()); n != 3 {
		t.Errorf("attempts = %d, want 3 (1 + 2 retries)", n)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestCallerDeadlineStopsRetries(t *testing.T) {
	hang := func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	s, _, _ := newFake(t, Config{Timeout: time.Minute}, hang)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Search(ctx, core.SearchRequest{ProjectID: "acme", Query: "x"})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err = %v, want DeadlineExceeded and ErrUnavailable", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v, want about the caller's 50ms", d)
	}
}

func TestCancelledContext(t *testing.T) {
	s, rc, _ := newFake(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"search": func() error {
			_, err := s.Search(ctx, core.SearchRequest{ProjectID: "acme", Query: "x"})
			return err
		},
		"hit": func() error {
			_, err := s.RecordHit(ctx, core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "a"}}})
			return err
		},
		"ping": func() error { return s.Ping(ctx) },
		"get": func() error {
			_, err := s.Get(ctx, "acme", "a")
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("%d requests sent with a cancelled context", n)
	}
}

func TestInvalidRequestsFailLocally(t *testing.T) {
	s, rc, _ := newFake(t, Config{})
	_, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "Bad Project", Query: "x"})
	var fe *core.FieldError
	if !errors.As(err, &fe) || fe.Field != "project_id" {
		t.Fatalf("err = %v, want a FieldError on project_id", err)
	}
	_, err = s.RecordValidation(t.Context(), core.ValidateRequest{ProjectID: "acme", QAID: "q1"})
	if !errors.As(err, &fe) || fe.Field != "result" {
		t.Fatalf("err = %v, want a FieldError on result", err)
	}
	_, err = s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "acme", Question: "q", Answer: "a", Metadata: map[string]any{"x": math.NaN()}})
	if !errors.As(err, &fe) || fe.Field != "metadata" {
		t.Fatalf("err = %v, want a FieldError on metadata", err)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("%d requests sent for invalid input", n)
	}
}

func TestSearchEmptyQueryNeedsNoRoundTrip(t *testing.T) {
	s, rc, _ := newFake(t, Config{})
	ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "  "})
	if err != nil || ms == nil || len(ms) != 0 {
		t.Fatalf("Search = %v, %v; want an empty, non-nil slice", ms, err)
	}
	if len(rc.requests()) != 0 {
		t.Errorf("a request was sent for an empty query")
	}
}

func TestSearchLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		compat bool
		limit  int
		want   float64
	}{
		{"default", false, 0, 6},
		{"memex keeps 50", false, 50, 50},
		{"compat default", true, 0, 6},
		{"compat clamps to 20", true, 50, 20},
		{"compat keeps 1", true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rc, _ := newFake(t, Config{Compat: tc.compat}, answer(200, `[]`))
			if _, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x", Limit: tc.limit}); err != nil {
				t.Fatal(err)
			}
			if got := rc.requests()[0].body["limit"]; got != tc.want {
				t.Errorf("limit sent = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSearchReceiptHeaderPassedThrough(t *testing.T) {
	s, _, _ := newFake(t, Config{}, answer(200,
		`[{"qa_id":"a","score":0.9},{"qa_id":"b","receipt_id":"rc-own"}]`, "X-Memex-Receipt", "rc-hdr"))
	ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].ReceiptID != "rc-hdr" || ms[1].ReceiptID != "rc-own" {
		t.Fatalf("receipts = %+v", ms)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	const key = "sk-live-0123456789abcdefSECRET"
	for _, a := range []func(*http.Request) (*http.Response, error){
		answer(401, `{"error":{"code":"unauthorized","message":"unknown key"}}`),
		answer(500, `<html>oops</html>`),
		fail(dialRefused()),
	} {
		s, _, _ := newFake(t, Config{APIKey: key, Retries: -1}, a)
		_, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"})
		if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "SECRET") {
			t.Fatalf("err = %v", err)
		}
	}
}
