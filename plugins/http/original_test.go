package httpstore

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// original mimics the original aduib-ai memory service (ORIGINAL.md §4):
// success envelopes, errors as HTTP 200 with {"code","msg"}, a bare array
// for search, FastAPI 422s, naive ISO times, asynchronous candidates.
type original struct {
	noContent bool // answer hit/candidates/validate with 204, as in the Rust client's tests

	mu       sync.Mutex
	requests map[string]int
	bodies   map[string][]map[string]any
}

const origRecord = `{"qa_id":"7f1c0e2a-1111-4222-8333-944455556666","project_id":"acme","question":"why does go test -race fail?",
"answer":"guard the map","summary":"","tags":["go"],"metadata":{"stats":{"consecutive_fail":2}},"scope":null,"resource_uri":null,
"evidence_refs":null,"time_sensitivity":null,"status":"active","level":"L1","validation_level":1,"trust_score":0.45,
"confidence":0.5,"usage_count":3,"success_count":1,"failure_count":0,"strong_signal_count":1,
"last_used_at":null,"last_validated_at":"2026-01-27T10:00:00.123456","ttl_expire_at":"2026-02-26T10:00:00",
"created_at":"2026-01-20T08:30:00","updated_at":"2026-01-27T10:00:00.123456"}`

func (o *original) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	if o.requests == nil {
		o.requests, o.bodies = map[string]int{}, map[string][]map[string]any{}
	}
	o.requests[r.URL.Path]++
	var body map[string]any
	if r.Method == http.MethodPost {
		_ = json.NewDecoder(r.Body).Decode(&body)
		o.bodies[r.URL.Path] = append(o.bodies[r.URL.Path], body)
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	ok := func(data string) { _, _ = w.Write([]byte(`{"code":0,"msg":"success","data":` + data + `}`)) }
	inBody := func(code int, msg string) {
		_, _ = w.Write([]byte(`{"code":` + itoa(code) + `,"msg":"` + msg + `","data":{}}`))
	}
	switch {
	case r.URL.Path == "/v1/qa/search":
		if l, _ := body["limit"].(float64); l < 1 || l > 20 {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte(`{"detail":[{"loc":["body","limit"],"msg":"ensure this value is less than or equal to 20","type":"value_error.number.not_le"}]}`))
			return
		}
		if body["query"] == "boom" {
			inBody(500, "internal error")
			return
		}
		_, _ = w.Write([]byte(`[{"qa_id":"7f1c0e2a-1111-4222-8333-944455556666","project_id":"acme","question":"why does go test -race fail?",
"answer":"guard the map","summary":"","score":0.81,"relevance":0.9,"trust":0.45,"freshness":0.5,"validation_level":1,"level":"L1",
"status":"active","metadata":{"stats":{"consecutive_fail":2}},"tags":["go"],"expiry_at":"2026-02-26T10:00:00","source":null,"confidence":0.5},
{"no_qa_id":true}]`))
	case r.URL.Path == "/v1/qa/candidates":
		if o.noContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		ok(`{"task_id":"task-1","status":"pending","message":"queued"}`)
	case r.URL.Path == "/v1/qa/hit":
		if o.noContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		ok(`{}`)
	case r.URL.Path == "/v1/qa/validate":
		if o.noContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if body["qa_id"] != "7f1c0e2a-1111-4222-8333-944455556666" {
			inBody(404, "QA memory not found")
			return
		}
		ok(`{"record":` + origRecord + `}`)
	case r.URL.Path == "/v1/qa/forbidden" && r.Method == http.MethodGet:
		inBody(403, "no access to this project")
	case strings.HasPrefix(r.URL.Path, "/v1/qa/") && r.Method == http.MethodGet:
		if strings.TrimPrefix(r.URL.Path, "/v1/qa/") != "7f1c0e2a-1111-4222-8333-944455556666" || r.URL.Query().Get("project_id") != "acme" {
			inBody(404, "QA memory not found")
			return
		}
		ok(`{"record":` + origRecord + `}`)
	case r.URL.Path == "/v1/task/grade":
		if body["prompt"] == "boom" {
			inBody(500, "model failed")
			return
		}
		_, _ = w.Write([]byte(`{"task_level":"L2","reason":"programming","recommended_model":"m","recommended_model_provider":"p","confidence":0.8}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
	}
}

func (o *original) count(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests[path]
}

func (o *original) lastBody(path string) map[string]any {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.bodies[path]
	if len(b) == 0 {
		return nil
	}
	return b[len(b)-1]
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func newOriginal(t *testing.T, o *original, compat bool) *Store {
	t.Helper()
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	s, err := New(Config{BaseURL: srv.URL, Compat: compat, Retries: 2, Cooldown: -1}, WithSleep((&sleeps{}).sleep))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const origID = "7f1c0e2a-1111-4222-8333-944455556666"

func TestOriginalSearch(t *testing.T) {
	o := &original{}
	s := newOriginal(t, o, true)
	ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "race", Limit: 50})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if len(ms) != 1 {
		t.Fatalf("matches = %d, want 1 (the item without qa_id skipped)", len(ms))
	}
	m := ms[0]
	if m.QAID != origID || m.ValidationLevel != 1 || m.Trust != 0.45 || m.ConsecutiveFail != 2 || m.Status != core.StatusActive {
		t.Errorf("match = %+v", m)
	}
	if m.ExpiryAt == nil || !m.ExpiryAt.Equal(time.Date(2026, 2, 26, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("expiry_at = %v, want the naive time read as UTC", m.ExpiryAt)
	}
	if got := o.lastBody("/v1/qa/search")["limit"]; got != 20.0 {
		t.Errorf("limit sent = %v, want clamped to 20", got)
	}
}

func TestOriginalLimitWithoutCompatIs422(t *testing.T) {
	s := newOriginal(t, &original{}, false)
	_, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "race", Limit: 50})
	var fe *core.FieldError
	if !errors.As(err, &fe) || fe.Field != "limit" {
		t.Fatalf("err = %v, want a FieldError on limit (FastAPI 422 detail)", err)
	}
}

func TestOriginalInBodyErrors(t *testing.T) {
	o := &original{}
	s := newOriginal(t, o, true)
	t.Run("search 500 in body is unavailable and retried", func(t *testing.T) {
		_, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "boom"})
		var se *StatusError
		if !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &se) || !se.InBody || se.Status != 500 {
			t.Fatalf("err = %v, want an in-body 500 → ErrUnavailable", err)
		}
		if n := o.count("/v1/qa/search"); n != 3 {
			t.Errorf("search attempts = %d, want 3", n)
		}
	})
	t.Run("validate 404 in body", func(t *testing.T) {
		_, err := s.RecordValidation(t.Context(), core.ValidateRequest{ProjectID: "acme", QAID: "missing", Result: "pass"})
		if !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if n := o.count("/v1/qa/validate"); n != 1 {
			t.Errorf("validate attempts = %d, want 1 (never retry a 404)", n)
		}
	})
	t.Run("get 404 in body", func(t *testing.T) {
		if _, err := s.Get(t.Context(), "acme", "missing"); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("grade 500 in body", func(t *testing.T) {
		if _, err := s.TaskGrade(t.Context(), core.TaskGradeRequest{Prompt: "boom"}); !errors.Is(err, core.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
	t.Run("get 403 in body", func(t *testing.T) {
		_, err := s.Get(t.Context(), "acme", "forbidden")
		var se *StatusError
		if !errors.Is(err, core.ErrForbidden) || errors.Is(err, core.ErrInvalid) || !errors.As(err, &se) || !se.InBody || se.Status != 403 {
			t.Fatalf("err = %v, want an in-body 403 → ErrForbidden", err)
		}
	})
	t.Run("unknown route", func(t *testing.T) {
		if _, err := s.List(t.Context(), core.ListRequest{ProjectID: "acme"}); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound (the original has no list route)", err)
		}
	})
}

func TestOriginalEnvelopes(t *testing.T) {
	o := &original{}
	s := newOriginal(t, o, true)
	ctx := t.Context()

	hr, err := s.RecordHit(ctx, core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: origID, Shown: true}, {QAID: "b", Used: true}}})
	if err != nil || hr.Updated != 2 {
		t.Fatalf("RecordHit = %+v, %v; want 2 references counted", hr, err)
	}

	cr, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "acme", Question: "q?", Answer: "a."})
	if err != nil || cr.QAID != "" || cr.Status != "pending" {
		t.Fatalf("RecordCandidate = %+v, %v; want no qa_id and status pending", cr, err)
	}

	rec, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "acme", QAID: origID, Result: "success"})
	if err != nil {
		t.Fatalf("RecordValidation: %v", err)
	}
	if got := o.lastBody("/v1/qa/validate")["result"]; got != "pass" {
		t.Errorf("result sent = %v, want pass (the original counts success as a fail)", got)
	}
	checkOrigRecord(t, rec)

	rec, err = s.Get(ctx, "acme", origID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	checkOrigRecord(t, rec)

	g, err := s.TaskGrade(ctx, core.TaskGradeRequest{Prompt: "fix the bug"})
	if err != nil || g.TaskLevel != "L2" || g.RecommendedModelProvider != "p" {
		t.Fatalf("TaskGrade = %+v, %v", g, err)
	}
}

func checkOrigRecord(t *testing.T, rec core.Record) {
	t.Helper()
	if rec.QAID != origID || rec.TrustScore != 0.45 || rec.ValidationLevel != 1 || rec.Level != "L1" || rec.UsageCount != 3 {
		t.Errorf("record = %+v", rec)
	}
	if want := time.Date(2026, 1, 27, 10, 0, 0, 123456000, time.UTC); !rec.LastValidatedAt.Equal(want) {
		t.Errorf("last_validated_at = %v, want %v", rec.LastValidatedAt, want)
	}
	if want := time.Date(2026, 1, 20, 8, 30, 0, 0, time.UTC); !rec.CreatedAt.Equal(want) {
		t.Errorf("created_at = %v, want %v", rec.CreatedAt, want)
	}
	if rec.ConsecutiveFail != 2 {
		t.Errorf("consecutive_fail = %d, want 2 from metadata.stats", rec.ConsecutiveFail)
	}
}

func TestOriginalNoContent(t *testing.T) {
	s := newOriginal(t, &original{noContent: true}, true)
	ctx := t.Context()
	if hr, err := s.RecordHit(ctx, core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "a"}}}); err != nil || hr.Updated != 1 {
		t.Errorf("RecordHit = %+v, %v", hr, err)
	}
	if cr, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "acme", Question: "q", Answer: "a"}); err != nil || cr.Status != "pending" {
		t.Errorf("RecordCandidate = %+v, %v", cr, err)
	}
	rec, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "acme", QAID: "q1", Result: "fail"})
	if err != nil || rec.QAID != "q1" || rec.ProjectID != "acme" {
		t.Errorf("RecordValidation = %+v, %v", rec, err)
	}
}
