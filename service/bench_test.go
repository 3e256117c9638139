package service

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
