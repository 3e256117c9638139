package service

import (
	"context"
	"errors"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	httpstore "github.com/memex-dev/memex/plugins/http"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/wire"
)

// TestHTTPPluginAgainstService runs plugins/http against the service over
// the embedded store: client, server, the JSON contract and the error
// mapping end to end, in process.
func TestHTTPPluginAgainstService(t *testing.T) {
	e := newEnv(t)
	client := func(k Key) *httpstore.Store {
		s, err := httpstore.New(httpstore.Config{BaseURL: e.ts.URL, APIKey: secretOf(k), Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, admin, b := client(keyAgentA), client(keyAdmin), client(keyAgentB)
	ctx := t.Context()
	res, err := a.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "a-proj", Question: "How to bump a go module version?", Answer: "go get example.com/mod@v1.2.3 then go mod tidy"})
	if err != nil || res.QAID == "" {
		t.Fatalf("RecordCandidate: %+v %v", res, err)
	}
	ms, err := a.Search(ctx, core.SearchRequest{ProjectID: "a-proj", Query: "bump go module version", Limit: 5, MinScore: 0.2})
	if err != nil || len(ms) != 1 || ms[0].QAID != res.QAID || ms[0].ReceiptID == "" {
		t.Fatalf("Search: %+v %v", ms, err)
	}
	rec, err := admin.RecordValidation(ctx, core.ValidateRequest{ProjectID: "a-proj", QAID: res.QAID, Result: "pass", SignalStrength: "strong"})
	if err != nil || rec.SuccessCount != 1 {
		t.Fatalf("RecordValidation: %+v %v", rec, err)
	}
	if got, err := a.Get(ctx, "a-proj", res.QAID); err != nil || got.SuccessCount != 1 {
		t.Fatalf("Get: %+v %v", got, err)
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"forbidden", func() error { _, err := b.Search(ctx, core.SearchRequest{ProjectID: "a-proj", Query: "x"}); return err }(), core.ErrForbidden},
		{"not found", func() error { _, err := a.Get(ctx, "a-proj", "nope"); return err }(), core.ErrNotFound},
		{"unauthorized", func() error {
			_, err := client(Key{ID: "nobody"}).Search(ctx, core.SearchRequest{ProjectID: "a-proj", Query: "x"})
			return err
		}(), core.ErrUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Errorf("error %v, want %v", tc.err, tc.want)
			}
		})
	}
}

// TestServiceOnRedis runs the receipt and audit paths on the Redis store
// (MEMEX_TEST_REDIS_URL; skipped locally without it, a failure on CI).
func TestServiceOnRedis(t *testing.T) {
	url := redistest.URL(t)
	store, err := redisstore.Open(context.Background(), url, redisstore.WithPrefix(redistest.Prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	voter := Key{ID: "voter", Role: RoleAgent, Projects: []string{"a-*"}}
	e := newEnvFor(t, store, withConfig(func(c *Config) { c.Keys = append(c.Keys, withHash(voter)...) }))
	id := e.addQA(keyAgentA, "a-proj", "How to flush the DNS cache on linux?", "resolvectl flush-caches clears systemd-resolved.")
	r := e.must(200, voter, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "flush dns cache"})
	var ms []core.Match
	r.decode(t, &ms)
	if len(ms) != 1 || ms[0].ReceiptID == "" || r.header.Get(wire.HeaderReceipt) == "" {
		t.Fatalf("search on redis: %s", r.body)
	}
	hit := e.must(200, voter, "POST", "/v1/qa/hit", map[string]any{"project_id": "a-proj", "receipt_id": r.header.Get(wire.HeaderReceipt),
		"references": []map[string]any{{"qa_id": id, "used": true}}})
	var hr wire.HitResponse
	hit.decode(t, &hr)
	if hr.Updated != 1 {
		t.Errorf("hit with the search receipt: %s", hit.body)
	}
	validate := func() wire.RecordResponse {
		var rr wire.RecordResponse
		e.must(200, voter, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id, "result": "pass",
			"signal_strength": "strong", "receipt_id": ms[0].ReceiptID}).decode(t, &rr)
		return rr
	}
	if rr := validate(); !*rr.Applied || rr.Record.SuccessCount != 1 {
		t.Errorf("first validation: %+v", rr)
	}
	if rr := validate(); *rr.Applied || rr.Reason != wire.ReasonReceiptUsed {
		t.Errorf("second validation with the same receipt: applied %v reason %q", *rr.Applied, rr.Reason)
	}
	// plugins/http surfaces what the service refused, and why.
	vc, err := httpstore.New(httpstore.Config{BaseURL: e.ts.URL, APIKey: secretOf(voter), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vc.Close() })
	_, err = vc.RecordValidation(t.Context(), core.ValidateRequest{ProjectID: "a-proj", QAID: id, Result: "pass", SignalStrength: "strong", ReceiptID: ms[0].ReceiptID})
	var na *httpstore.NotAppliedError
	if !errors.Is(err, core.ErrNotApplied) || !errors.As(err, &na) || na.Reason != wire.ReasonReceiptUsed || na.Record.SuccessCount != 1 {
		t.Errorf("client validation with a spent receipt: %v", err)
	}
	hr2, err := vc.RecordHit(t.Context(), core.HitRequest{ProjectID: "a-proj", ReceiptID: r.header.Get(wire.HeaderReceipt), References: []core.HitRef{{QAID: id, Shown: true, Used: true}}})
	if err != nil || hr2.Updated != 0 || hr2.Ignored != 1 || hr2.Reason != wire.ReasonReceiptUsed {
		t.Errorf("client hit with a spent receipt: %+v %v", hr2, err)
	}
	if got := e.record("a-proj", id); got.SuccessCount != 1 || got.UseCount != 1 {
		t.Errorf("counters: success %d use %d", got.SuccessCount, got.UseCount)
	}
	ar := e.must(200, keyAdmin, "GET", "/admin/v1/audit?project_id=a-proj", nil)
	var audit wire.AuditResponse
	ar.decode(t, &audit)
	if len(audit.Entries) < 4 {
		t.Errorf("audit on redis: %s", ar.body)
	}
	e.must(200, keyAdmin, "GET", "/admin/v1/projects", nil)
	e.must(200, Key{}, "GET", "/readyz", nil)
}
