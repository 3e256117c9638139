package main

import (
	"net/url"
	"path/filepath"
	"testing"

	"github.com/memex-dev/memex/core"
)

// TestServeOpensTheTeamFlavour: behind memex serve the embedded store
// does not count a creator's own report (SPEC §5.1); for memex run it
// does (the creating run's --verify pass is evidence).
func TestServeOpensTheTeamFlavour(t *testing.T) {
	for _, serving := range []bool{true, false} {
		u, err := url.Parse("file://" + filepath.Join(t.TempDir(), "memex.db"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := openEmbedded(t.Context(), u, Config{serving: serving})
		if err != nil {
			t.Fatal(err)
		}
		ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "key-1"})
		res, err := st.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "p", Question: "How to oil the lynx?", Answer: "lynx oil --light"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.RecordValidation(ctx, core.ValidateRequest{ProjectID: "p", QAID: res.QAID, Result: "pass", SignalStrength: "strong"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int64{true: 0, false: 1}[serving]; r.SuccessCount != want {
			t.Errorf("serving %v: the creator's own pass counted %d times, want %d", serving, r.SuccessCount, want)
		}
		if c, ok := st.(interface{ Close() error }); ok {
			_ = c.Close()
		}
	}
}
