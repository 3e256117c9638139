package coretest

import (
	"testing"

	"github.com/memex-dev/memex/core"
)

// testHumanVerdicts pins what each human verdict does (SPEC §5.1): verify
// is sticky against later fails, freeze ignores every report, deprecate
// hides the QA from search and counts against its creator, and reactivate
// undoes a deprecation — the QA is found again and the creator's debit is
// taken back.
func testHumanVerdicts(t *testing.T, p core.MemoryPlugin, _ Flavour) {
	pt, ok := core.As[core.Patcher](p)
	if !ok {
		t.Skip("plugin does not implement core.Patcher")
	}
	g := mustGetter(t, p)
	human := core.WithPrincipal(t.Context(), asHuman(t))
	verdict := func(id string, v core.Verdict) core.Record {
		t.Helper()
		st, _ := v.Status()
		r, err := pt.Patch(human, core.PatchRequest{ProjectID: projA, QAID: id, Status: &st})
		if err != nil {
			t.Fatalf("%s %s: %v", v, id, err)
		}
		if r.Status != st {
			t.Fatalf("%s %s: status %s, want %s", v, id, r.Status, st)
		}
		return r
	}
	mk := func(creator, q string) string {
		t.Helper()
		res, err := p.RecordCandidate(as(t, creator), core.CandidateRequest{ProjectID: projA, Question: q, Answer: q + ": use the numbat toolchain"})
		if err != nil {
			t.Fatal(err)
		}
		return res.QAID
	}

	// verify: sticky against an independent strong fail.
	v := mk("maker", "How to build the numbat firmware")
	verdict(v, core.VerdictVerify)
	if r := validate(t, p, "critic", projA, v, "fail", "strong"); r.Status != core.StatusVerified {
		t.Errorf("a fail moved a verified QA to %s; a human verdict is sticky", r.Status)
	}

	// freeze: every report is ignored until a human reactivates it.
	f := mk("maker", "How to flash the numbat firmware")
	verdict(f, core.VerdictFreeze)
	validate(t, p, "critic", projA, f, "fail", "strong")
	if r := get(t, g, projA, f); r.FailureCount != 0 || r.Status != core.StatusFrozen {
		t.Errorf("frozen QA after a fail: failures %d status %s, want 0 and frozen", r.FailureCount, r.Status)
	}
	verdict(f, core.VerdictReactivate)
	if r := validate(t, p, "critic", projA, f, "fail", "strong"); r.FailureCount != 1 {
		t.Errorf("reactivated QA: failures %d after a fail, want 1", r.FailureCount)
	}

	// deprecate, then reactivate: searchable again, the creator's debit back.
	const q = "How to sign the numbat firmware"
	d := mk("author", q)
	baseline := get(t, g, projA, mk("stranger", "How to name the numbat firmware")).TrustScore
	verdict(d, core.VerdictDeprecate)
	if _, found := findMatch(search(t, p, projA, q, 10), d); found {
		t.Errorf("a deprecated QA is still found by search")
	}
	if debited := get(t, g, projA, mk("author", "How to test the numbat firmware")).TrustScore; debited >= baseline {
		t.Fatalf("a deprecation did not count against its creator: trust %.4f, a new creator's %.4f", debited, baseline)
	}
	verdict(d, core.VerdictReactivate)
	if m, found := findMatch(search(t, p, projA, q, 10), d); !found || m.Status != core.StatusActive {
		t.Errorf("a reactivated QA: found %t status %q, want it found and active", found, m.Status)
	}
	if after := get(t, g, projA, mk("author", "How to ship the numbat firmware")).TrustScore; after != baseline {
		t.Errorf("a human undid the deprecation, yet the creator's next QA has trust %.4f, want a new creator's %.4f", after, baseline)
	}
}
