package ui_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/plugins/embedded"
	"github.com/memex-dev/memex/service"
	"github.com/memex-dev/memex/ui"
)

// BenchmarkPages measures each dashboard page, served as memex ui serves it
// (the API in local mode over the embedded store, the dashboard calling it
// in process), on a project of MEMEX_BENCH_QAS QAs (default 10,000; the
// figure in docs/PERFORMANCE.md is at 100,000). MEMEX_BENCH_DIR keeps the
// store between runs. "stats-api" is GET /admin/v1/projects/{id}/stats
// without max_age: what a cold project page waits for (the store's Stats).
func BenchmarkPages(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("MEMEX_BENCH_QAS")); err == nil && v > 0 {
		n = v
	}
	const project = "bench"
	dir := os.Getenv("MEMEX_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "dashboard-"+strconv.Itoa(n)+".db")
	recs := coretest.Corpus(n, project, 1)
	if _, err := os.Stat(path); err != nil {
		st, err := embedded.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i += 5000 {
			if err := st.Import(b.Context(), recs[i:min(i+5000, n)]); err != nil {
				b.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
	st, err := embedded.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	var api *service.Server
	dash, err := ui.New(ui.Config{API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) }), Local: true, Projects: []string{project}})
	if err != nil {
		b.Fatal(err)
	}
	api, err = service.New(st, service.Config{InsecureLocal: true, ExpiryInterval: -1}, service.WithHandler(ui.Prefix, dash))
	if err != nil {
		b.Fatal(err)
	}
	qa := recs[n/2].QAID
	pages := []struct{ name, path string }{
		{"projects", "/ui/"},
		{"project", "/ui/p/" + project},
		{"qa", "/ui/p/" + project + "/qa/" + qa},
		{"qas", "/ui/p/" + project + "/qas"},
		{"audit", "/ui/audit?project=" + project},
		{"runs", "/ui/runs?project=" + project},
		{"stats-api", "/admin/v1/projects/" + project + "/stats"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			// One load first: the pages then read the stats the API keeps
			// (max_age), as a dashboard in use does; stats-api asks the
			// store every time (the cold load's cost).
			w := httptest.NewRecorder()
			api.ServeHTTP(w, httptest.NewRequest("GET", p.path, nil))
			if w.Code != http.StatusOK {
				b.Fatalf("warming %s: %d %s (a stats scan longer than the request timeout?)", p.path, w.Code, w.Body.String())
			}
			for b.Loop() {
				w := httptest.NewRecorder()
				api.ServeHTTP(w, httptest.NewRequest("GET", p.path, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", p.path, w.Code, w.Body.String())
				}
			}
		})
	}
}
