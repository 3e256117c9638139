package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
)

// BenchmarkSearchHandler measures POST /v1/qa/search through the whole
// middleware chain (auth, rate limit off, metrics, receipts) on the team
// store with 1,000 QAs; BenchmarkBareEcho is the same request to a bare
// echo JSON handler, the peer of SPEC §9.
func BenchmarkSearchHandler(b *testing.B) {
	team := newTeamStore(b)
	var recs []core.Record
	for i := range 1000 {
		recs = append(recs, core.Record{QAID: fmt.Sprintf("qa-%d", i), ProjectID: "a-proj", Status: core.StatusActive,
			Question: fmt.Sprintf("how to configure service %d with option %d", i, i%17), Answer: fmt.Sprintf("set option %d in file %d", i%17, i)})
	}
	if err := team.Import(b.Context(), recs); err != nil {
		b.Fatal(err)
	}
	srv, err := New(team, defaultTestConfig())
	if err != nil {
		b.Fatal(err)
	}
	body := `{"project_id":"a-proj","query":"configure service option 5","limit":6}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/qa/search", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secretOf(keyAgentA))
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkBareEcho(b *testing.B) {
	e := echo.New()
	e.POST("/v1/qa/search", func(c echo.Context) error {
		var req core.SearchRequest
		if err := c.Bind(&req); err != nil {
			return err
		}
		return c.JSON(200, []core.Match{})
	})
	body := `{"project_id":"a-proj","query":"configure service option 5","limit":6}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/qa/search", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
	}
}

// layerStore answers every search with the same matches and accepts every
// receipt: BenchmarkSearchLayer then measures the HTTP layer alone.
type layerStore struct {
	core.MemoryPlugin
	ms []core.Match
}

func (l layerStore) Name() string { return "layer" }
func (l layerStore) Search(context.Context, core.SearchRequest) ([]core.Match, error) {
	return append([]core.Match(nil), l.ms...), nil
}
func (l layerStore) IssueReceipts(_ context.Context, rs []core.Receipt) []error {
	return make([]error, len(rs))
}
func (l layerStore) IssueReceipt(context.Context, core.Receipt) error { return nil }
func (l layerStore) RedeemReceipt(context.Context, string, string, string, time.Time) (core.Receipt, error) {
	return core.Receipt{}, core.ErrNotFound
}

func layerMatches() []core.Match {
	ms := make([]core.Match, 6)
	for i := range ms {
		r := core.Record{QAID: fmt.Sprintf("qa-%d", i), ProjectID: "a-proj", Status: core.StatusActive, ValidationLevel: 2,
			Question: fmt.Sprintf("how to configure service %d with option %d", i, i%17),
			Answer:   strings.Repeat(fmt.Sprintf("set option %d in file %d. ", i%17, i), 20), TrustScore: 0.6, Alpha: 3, Beta: 2,
			Tags: []string{"config"}, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
		ms[i] = core.MatchFromRecord(r, 0.5)
		ms[i].Score = 0.55
	}
	return ms
}

// BenchmarkSearchLayer is POST /v1/qa/search through the whole middleware
// chain and handler (decode, auth, metrics, receipts, encode) on a store
// that answers at once; BenchmarkSearchLayerBare is a bare echo handler
// answering the same 6 matches.
func BenchmarkSearchLayer(b *testing.B) {
	srv, err := New(layerStore{ms: layerMatches()}, defaultTestConfig())
	if err != nil {
		b.Fatal(err)
	}
	benchSearchBody(b, srv, "Bearer "+secretOf(keyAgentA))
}

func BenchmarkSearchLayerBare(b *testing.B) {
	ms := layerMatches()
	e := echo.New()
	e.POST("/v1/qa/search", func(c echo.Context) error {
		var req core.SearchRequest
		if err := c.Bind(&req); err != nil {
			return err
		}
		return c.JSON(200, ms)
	})
	benchSearchBody(b, e, "")
}

func benchSearchBody(b *testing.B, h http.Handler, auth string) {
	body := `{"project_id":"a-proj","query":"configure service option 5","limit":6}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/qa/search", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
