package httpstore

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
)

func searchBody(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"qa_id":"qa-%d","project_id":"acme","question":"why does go test -race fail on map %d?","answer":"guard the map with a mutex; run go test -race ./...","summary":"","score":0.8,"relevance":0.9,"trust":0.7,"freshness":0.9,"validation_level":2,"level":"L2","status":"active","metadata":{"consecutive_fail":0,"stats":{"consecutive_fail":0}},"tags":["go"],"expiry_at":"2026-03-01T00:00:00Z","source":"memex-cli","confidence":0.6}`, i, i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// BenchmarkDecodeSearch decodes a 20-match search answer.
func BenchmarkDecodeSearch(b *testing.B) {
	r := response{status: 200, header: http.Header{}, body: []byte(searchBody(20))}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeSearch("search", r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchRoundTrip is one search through the plugin and a local
// HTTP server answering 6 matches.
func BenchmarkSearchRoundTrip(b *testing.B) {
	body := searchBody(6)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	s, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	req := core.SearchRequest{ProjectID: "acme", Query: "race map"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Search(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
