package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/extract/redact"
)

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "How to check the TLS certificate expiry?", "openssl s_client -connect host:443 | openssl x509 -noout -dates")
	e.addQA(keyAgentA, "a-proj", "How to check the TLS certificate expiry?", "openssl s_client -connect host:443 | openssl x509 -noout -dates")
	e.must(200, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "tls certificate expiry"})
	e.must(200, keyAdmin, "POST", "/v1/qa/hit", map[string]any{"project_id": "a-proj", "references": []map[string]any{{"qa_id": id, "used": true}}})
	e.must(200, keyAdmin, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id, "result": "pass", "signal_strength": "medium"})
	e.must(200, keyAgentA, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id, "result": "fail"})
	e.must(401, Key{}, "POST", "/v1/qa/search", "{}")

	m := e.srv.metrics
	checks := []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"created", m.candidates.WithLabelValues("created"), 1},
		{"deduplicated", m.candidates.WithLabelValues("deduplicated"), 1},
		{"hits", m.hits, 1},
		{"uses", m.uses, 1},
		{"applied pass", m.validations.WithLabelValues("pass", "medium", "true"), 1},
		{"audit-only fail", m.validations.WithLabelValues("fail", "weak", "false"), 1},
		{"receipts issued (search + per QA)", m.receipts.WithLabelValues("issued"), 2},
		{"receipts missing", m.receipts.WithLabelValues("missing"), 1},
		{"auth failures", m.authFailures, 1},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			if got := testutil.ToFloat64(tc.c); got != tc.want {
				t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
	t.Run("search histograms", func(t *testing.T) {
		if n := testutil.CollectAndCount(m.searchSeconds); n != 1 {
			t.Errorf("search latency series %d", n)
		}
		want := `
# HELP memex_search_matches Matches returned per search.
# TYPE memex_search_matches histogram
memex_search_matches_bucket{le="0"} 0
memex_search_matches_bucket{le="1"} 1
memex_search_matches_bucket{le="2"} 1
memex_search_matches_bucket{le="3"} 1
memex_search_matches_bucket{le="4"} 1
memex_search_matches_bucket{le="6"} 1
memex_search_matches_bucket{le="10"} 1
memex_search_matches_bucket{le="20"} 1
memex_search_matches_bucket{le="50"} 1
memex_search_matches_bucket{le="+Inf"} 1
memex_search_matches_sum 1
memex_search_matches_count 1
`
		if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), "memex_search_matches"); err != nil {
			t.Error(err)
		}
	})
	t.Run("request latency by route and code", func(t *testing.T) {
		if n := testutil.CollectAndCount(m.requests); n < 4 {
			t.Errorf("request series %d, want one per route and code", n)
		}
		mfs, err := e.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, mf := range mfs {
			if mf.GetName() != "memex_http_request_duration_seconds" {
				continue
			}
			for _, mt := range mf.GetMetric() {
				var l []string
				for _, lp := range mt.GetLabel() {
					l = append(l, lp.GetName()+"="+lp.GetValue())
				}
				labels = append(labels, strings.Join(l, ","))
			}
		}
		sort.Strings(labels)
		joined := strings.Join(labels, "\n")
		for _, want := range []string{"code=201,method=POST,route=/v1/qa/candidates", "code=401,method=POST,route=/v1/qa/search", "code=200,method=POST,route=/v1/qa/validate"} {
			if !strings.Contains(joined, want) {
				t.Errorf("no series %s in\n%s", want, joined)
			}
		}
	})
	t.Run("project gauges", func(t *testing.T) {
		want := `
# HELP memex_project_qas QAs per project by status.
# TYPE memex_project_qas gauge
memex_project_qas{project="a-proj",status="active"} 1
memex_project_qas{project="a-proj",status="candidate"} 0
memex_project_qas{project="a-proj",status="deprecated"} 0
memex_project_qas{project="a-proj",status="frozen"} 0
memex_project_qas{project="a-proj",status="stale"} 0
memex_project_qas{project="a-proj",status="verified"} 0
memex_project_qas{project="b-proj",status="active"} 0
memex_project_qas{project="b-proj",status="candidate"} 0
memex_project_qas{project="b-proj",status="deprecated"} 0
memex_project_qas{project="b-proj",status="frozen"} 0
memex_project_qas{project="b-proj",status="stale"} 0
memex_project_qas{project="b-proj",status="verified"} 0
memex_project_qas{project="global",status="active"} 0
memex_project_qas{project="global",status="candidate"} 0
memex_project_qas{project="global",status="deprecated"} 0
memex_project_qas{project="global",status="frozen"} 0
memex_project_qas{project="global",status="stale"} 0
memex_project_qas{project="global",status="verified"} 0
`
		if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), "memex_project_qas"); err != nil {
			t.Error(err)
		}
	})
	t.Run("store errors by op", func(t *testing.T) {
		pe := newEnvFor(t, errStore{err: errUnavailable})
		pe.must(503, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "x"})
		pe.must(503, keyAgentA, "POST", "/v1/qa/candidates", map[string]any{"project_id": "a-proj", "question": "q?", "answer": "a!"})
		if got := testutil.ToFloat64(pe.srv.metrics.storeErrors.WithLabelValues("search")); got != 1 {
			t.Errorf("search errors %v", got)
		}
		if got := testutil.ToFloat64(pe.srv.metrics.storeErrors.WithLabelValues("candidate")); got != 1 {
			t.Errorf("candidate errors %v", got)
		}
	})
	t.Run("served at /metrics", func(t *testing.T) {
		r := e.must(http.StatusOK, keyAdmin, "GET", "/metrics", nil)
		if !strings.Contains(string(r.body), "memex_candidates_total") {
			t.Errorf("exposition lacks memex_candidates_total")
		}
	})
	t.Run("own registry by default", func(t *testing.T) {
		// Two servers in one process must not collide on a global registry.
		for range 2 {
			if _, err := New(newEmbedded(t), defaultTestConfig()); err != nil {
				t.Fatal(err)
			}
		}
		pe := newEnvFor(t, newEmbedded(t), withConfig(func(c *Config) { c.PublicMetrics = true }))
		pe.must(200, Key{}, "GET", "/metrics", nil)
	})
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r := e.must(200, Key{}, "GET", "/openapi.json", nil)
	r.decode(t, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	inDoc := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			inDoc[strings.ToUpper(m)+" "+p] = true
		}
	}
	routed := map[string]bool{}
	for _, rt := range e.srv.e.Routes() {
		if rt.Method == echo.RouteNotFound || strings.HasSuffix(rt.Path, "*") {
			continue // echo's group catch-alls
		}
		p := rt.Path
		for _, seg := range strings.Split(p, "/") {
			if strings.HasPrefix(seg, ":") {
				p = strings.Replace(p, seg, "{"+seg[1:]+"}", 1)
			}
		}
		routed[rt.Method+" "+p] = true
	}
	for k := range routed {
		if !inDoc[k] {
			t.Errorf("route %s is not in openapi.json", k)
		}
	}
	for k := range inDoc {
		if !routed[k] {
			t.Errorf("openapi.json documents %s, which is not routed", k)
		}
	}
	if len(routed) < 18 {
		t.Errorf("only %d routes", len(routed))
	}
}

func TestUnknownPathsShareOneRouteLabel(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/x1", "/x2/y", "/v1/zz1", "/v1/zz2", "/admin/v1/q1", "/admin/v1/q2"} {
		e.must(404, keyAdmin, "GET", p, nil)
	}
	if n := testutil.CollectAndCount(e.srv.metrics.requests); n > 3 {
		t.Errorf("%d request series for unknown paths: route labels must not hold raw paths", n)
	}
}

// TestMetricsForPrometheus: what a Prometheus user relies on — no "le"
// label on a gauge of non-cumulative buckets, every series exported from
// the start at zero, the Go and process collectors on the server's own
// registry, and a candidate refused for a secret counted as blocked.
func TestMetricsForPrometheus(t *testing.T) {
	team := newTeamStore(t)
	srv, err := New(secretBlocking{team}, Config{Keys: withHash(keyAgentA, keyAdmin), PublicMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	scrape := func() string {
		res, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	fresh := scrape()
	for _, want := range []string{
		`memex_validations_total{applied="false",result="fail",strength="weak"} 0`,
		`memex_validations_total{applied="true",result="pass",strength="strong"} 0`,
		`memex_candidates_total{outcome="blocked"} 0`,
		`memex_candidates_total{outcome="created"} 0`,
		`memex_receipts_total{outcome="rejected"} 0`,
		`memex_store_errors_total{op="search"} 0`,
		`memex_rate_limited_total{key="agent-a"} 0`,
		"go_goroutines ", "go_memstats_heap_alloc_bytes ", "process_cpu_seconds_total ", "process_open_fds ",
	} {
		if !strings.Contains(fresh, want) {
			t.Errorf("a fresh server's /metrics lacks %s", want)
		}
	}

	post := func(path, body string) int {
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secretOf(keyAgentA))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("/v1/qa/candidates", `{"project_id":"a-proj","question":"How do I log in to the registry?","answer":"docker login -p ghp_0123456789abcdefghijABCDEFGHIJ012345 ghcr.io"}`); code != 422 {
		t.Errorf("candidate with a secret: %d, want 422", code)
	}
	if code := post("/v1/qa/candidates", `{"project_id":"a-proj","question":"How do I list the registry's tags?","answer":"crane ls ghcr.io/acme/app"}`); code != 201 {
		t.Errorf("candidate: %d, want 201", code)
	}
	after := scrape()
	for _, want := range []string{`memex_candidates_total{outcome="blocked"} 1`, `memex_candidates_total{outcome="created"} 1`} {
		if !strings.Contains(after, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var trustLines []string
	for _, l := range strings.Split(after, "\n") {
		if strings.HasPrefix(l, "memex_project_trust_qas{") && strings.Contains(l, `project="a-proj"`) {
			trustLines = append(trustLines, l)
		}
	}
	if len(trustLines) != 10 {
		t.Errorf("memex_project_trust_qas: %d series, want 10 (every bucket, zero included):\n%s", len(trustLines), strings.Join(trustLines, "\n"))
	}
	for _, l := range trustLines {
		if strings.Contains(l, "le=") || !strings.Contains(l, `bucket="`) {
			t.Errorf("trust gauge series %s: want a bucket label, never le (it is not a histogram)", l)
		}
	}
	if !strings.Contains(after, `memex_project_level_qas{level="L3",project="a-proj"} 0`) {
		t.Errorf("no zero series for level L3")
	}
}

// secretBlocking refuses a candidate whose text holds a secret with
// core.ErrSecret, as a store under strict_secret_block does.
type secretBlocking struct{ *teamStore }

func (s secretBlocking) RecordCandidate(ctx context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	if _, findings := redact.New().Redact(req.Question + "\n" + req.Answer); len(findings) > 0 {
		return core.CandidateResult{}, fmt.Errorf("candidate holds a secret (%s): %w", findings[0].Rule, core.ErrSecret)
	}
	return s.teamStore.RecordCandidate(ctx, req)
}
