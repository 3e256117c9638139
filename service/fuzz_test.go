package service

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// fuzzServer serves the team store with an injector, as the admin key
// (every route reachable), receipts required.
func fuzzServer(f *testing.F) *Server {
	f.Helper()
	store := newTeamStore(f)
	inj := func(_ context.Context, ms []core.Match, _ wire.InjectRequest) (wire.InjectResponse, error) {
		items := make([]wire.InjectItem, 0, len(ms))
		for _, m := range ms {
			items = append(items, wire.InjectItem{Match: m})
		}
		return wire.InjectResponse{Items: items}, nil
	}
	srv, err := New(store, defaultTestConfig(), WithInjector(inj))
	if err != nil {
		f.Fatal(err)
	}
	// Something to find, hit and validate.
	ctx := core.WithPrincipal(context.Background(), core.Principal{ID: "seed"})
	if _, err := store.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "a-proj", QAID: "qa-seed", Question: "how to fuzz", Answer: "go test -fuzz"}); err != nil {
		f.Fatal(err)
	}
	return srv
}

// checkFuzzResponse holds every decoder to the promise of SPEC §10: never
// a panic (the handler would 500) or a 5xx; a 400 names the field.
func checkFuzzResponse(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
	}
	if rec.Header().Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
	if rec.Code >= 400 {
		var eb wire.ErrorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Code == "" {
			t.Fatalf("status %d without the error shape: %s", rec.Code, rec.Body.Bytes())
		}
		if rec.Code == 400 && (eb.Error.Field == "" || !strings.Contains(eb.Error.Message, eb.Error.Field)) {
			t.Fatalf("400 does not name the field: %s", rec.Body.Bytes())
		}
		return
	}
	if !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("status %d with invalid JSON: %s", rec.Code, rec.Body.Bytes())
	}
}

func fuzzBody(f *testing.F, method, path string, seeds ...string) {
	srv := fuzzServer(f)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secretOf(keyAdmin))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		checkFuzzResponse(t, rec)
	})
}

func FuzzSearchHandler(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/qa/search",
		`{"project_id":"a-proj","query":"fuzz","limit":3,"min_score":0}`, `{"project_id":"a-proj","limit":-1}`, `{"min_score":"x"}`, `[]`, `null`, ``)
}

func FuzzInjectHandler(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/qa/inject",
		`{"project_id":"a-proj","query":"fuzz","max_block_chars":100}`, `{"project_id":"a-proj","min_score":1e999}`, `{"limit":1.5}`)
}

func FuzzCandidateHandler(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/qa/candidates",
		`{"project_id":"a-proj","question":"q?","answer":"a!","tags":["x"],"confidence":0.5,"metadata":{"k":1}}`,
		`{"project_id":"a-proj","question":"q","answer":"a","evidence":{"result":"maybe"}}`, `{"tags":[1]}`, `{"shared_projects":["B"]}`)
}

func FuzzHitHandler(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/qa/hit",
		`{"project_id":"a-proj","references":[{"qa_id":"qa-seed","used":true}]}`, `{"project_id":"a-proj","references":[{"shown":"yes"}]}`, `{"references":{}}`)
}

func FuzzValidateHandler(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/qa/validate",
		`{"project_id":"a-proj","qa_id":"qa-seed","result":"pass","signal_strength":"strong"}`,
		`{"project_id":"a-proj","qa_id":"qa-seed","success":true,"strong_signal":true,"client":{"a":1},"ts":"2026-01-01T00:00:00Z"}`,
		`{"project_id":"a-proj","qa_id":"qa-seed","result":"success","ts":"yesterday"}`, `{"success":"no"}`)
}

func FuzzPatchHandler(f *testing.F) {
	fuzzBody(f, http.MethodPatch, "/admin/v1/qa/qa-seed",
		`{"project_id":"a-proj","status":"verified","tags":["ok"]}`, `{"project_id":"a-proj","answer":""}`, `{"project_id":"a-proj","qa_id":"other"}`, `{"tags":"x"}`)
}

func FuzzExpireHandler(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/qa/expire", `{"batch_size":10}`, `{"batch_size":-3}`, ``, `{"batch_size":"ten"}`)
}

func FuzzGradeHandler(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/task/grade", `{"prompt":"fix the failing build"}`, `{"prompt":7}`, `"x"`)
}

func FuzzListQuery(f *testing.F) {
	srv := fuzzServer(f)
	for _, s := range []string{"project_id=a-proj", "project_id=a-proj&status=active&min_level=2&limit=5&q=fuzz", "project_id=A&limit=x", "min_level=9", "project_id=a-proj&cursor=%ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		for _, path := range []string{"/v1/qa", "/v1/qa/qa-seed", "/admin/v1/audit"} {
			req, err := http.NewRequest(http.MethodGet, path, nil)
			if err != nil {
				return
			}
			req.URL.RawQuery = query
			req.Header.Set("Authorization", "Bearer "+secretOf(keyAdmin))
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			checkFuzzResponse(t, rec)
		}
	})
}
