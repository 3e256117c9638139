package httpstore

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/plugins/embedded"
	"github.com/memex-dev/memex/service"
)

// TestExportImportEvidence: a full export through memex serve carries each
// QA's evidence and an import through it restores trust, status and block
// exactly — with an admin key. An agent key can neither read evidence nor
// import it (writing evidence is voting).
func TestExportImportEvidence(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "memex.db"), embedded.WithKeepOpen())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := service.DefaultConfig()
	cfg.Keys = conformanceKeys()
	cfg.RequireReceipts = false
	cfg.ExpiryInterval = -1
	srv, err := service.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	open := func(key string) *Store {
		s, err := New(Config{BaseURL: ts.URL, APIKey: key, Cooldown: -1},
			WithHTTPClient(&http.Client{Transport: principalKeys{http.DefaultTransport}}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	admin, agent := open("sk-suite"), open("sk-agent-a")
	as := func(id string) *core.Principal { return &core.Principal{ID: id} }
	ctx := t.Context()
	res, err := admin.RecordCandidate(core.WithPrincipal(ctx, *as("creator")),
		core.CandidateRequest{ProjectID: "proj-a", Question: "How do I restart the bandicoot queue?", Answer: "bandicoot queue --restart --force"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.QAID
	// Failed 6 of 10 runs, the last three in a row: blocked, not trusted.
	for i, r := range []string{"fail", "pass", "fail", "pass", "fail", "pass", "pass", "fail", "fail", "fail"} {
		if _, err := admin.RecordValidation(core.WithPrincipal(ctx, *as(fmt.Sprintf("agent-%d", i))),
			core.ValidateRequest{ProjectID: "proj-a", QAID: id, Result: r, SignalStrength: "strong"}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := admin.Get(ctx, "proj-a", id)
	if err != nil {
		t.Fatal(err)
	}
	if before.ConsecutiveFail < 3 {
		t.Fatalf("setup: consecutive_fail %d, want blocked", before.ConsecutiveFail)
	}

	// An agent key: no evidence to read, none to write.
	if _, err := agent.List(ctx, core.ListRequest{ProjectID: "proj-a", Evidence: true}); !errors.Is(err, core.ErrForbidden) {
		t.Errorf("full export with an agent key: err = %v, want ErrForbidden", err)
	}
	page, err := admin.List(ctx, core.ListRequest{ProjectID: "proj-a", Limit: 1000, Evidence: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || len(page.Items[0].Evidence) == 0 {
		t.Fatalf("full export with an admin key: %d records, evidence %q; want 1 with evidence", len(page.Items), page.Items[0].Evidence)
	}
	if plain, err := admin.List(ctx, core.ListRequest{ProjectID: "proj-a"}); err != nil || len(plain.Items) != 1 || len(plain.Items[0].Evidence) != 0 {
		t.Errorf("plain list: %+v, %v; want the record without evidence", plain.Items, err)
	}
	forged := page.Items[0]
	forged.Evidence = nil
	forged.TrustScore, forged.ConsecutiveFail, forged.FailureCount = 1, 0, 0
	if err := agent.Import(ctx, []core.Record{forged}); !errors.Is(err, core.ErrForbidden) {
		t.Errorf("import with an agent key: err = %v, want ErrForbidden", err)
	}
	if r, err := admin.Get(ctx, "proj-a", id); err != nil || r.ConsecutiveFail != before.ConsecutiveFail || math.Abs(r.TrustScore-before.TrustScore) > 0.01 {
		t.Errorf("after the agent's import: %+v, %v; want it unchanged", r, err)
	}

	// The admin's export, deleted, imported again: as it was.
	if err := admin.Delete(ctx, "proj-a", id); err != nil {
		t.Fatal(err)
	}
	if err := admin.Import(ctx, page.Items); err != nil {
		t.Fatal(err)
	}
	after, err := admin.Get(ctx, "proj-a", id)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(after.TrustScore-before.TrustScore) > 0.01 || after.Level != before.Level || after.Status != before.Status || after.ConsecutiveFail != before.ConsecutiveFail {
		t.Errorf("after export → import: trust %.4f level %s status %s consecutive_fail %d; want %.4f %s %s %d",
			after.TrustScore, after.Level, after.Status, after.ConsecutiveFail, before.TrustScore, before.Level, before.Status, before.ConsecutiveFail)
	}
}
