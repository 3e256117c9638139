package ledger

import (
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

func TestCandidateVote(t *testing.T) {
	l := New(trust.New(trust.DefaultParams()))
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, ok := l.CandidateVote(t.Context(), core.CandidateRequest{RunID: "r"}, at); ok {
		t.Fatal("a candidate without evidence has a vote")
	}
	req := core.CandidateRequest{RunID: "r", Evidence: &core.Evidence{Result: core.ResultPass, Strength: "strong"}}
	v, ok := l.CandidateVote(t.Context(), req, at)
	if !ok || v.Source != "r" || v.Result != core.ResultPass || v.Strength != core.StrengthStrong || !v.At.Equal(at) {
		t.Fatalf("CandidateVote = %+v, %v", v, ok)
	}
	human := core.WithPrincipal(t.Context(), core.Principal{ID: "k", Human: true})
	req.Evidence.Strength = "weak"
	if v, _ := l.CandidateVote(human, req, at); v.Source != "k" || v.Strength != core.StrengthStrong || !v.Human {
		t.Fatalf("a human's candidate vote = %+v", v)
	}
}

func TestExpiryCutoff(t *testing.T) {
	p := trust.DefaultParams()
	l := New(trust.New(p))
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := l.ExpiryCutoff(now); !got.Equal(now.Add(-p.CandidateTTL)) {
		t.Fatalf("ExpiryCutoff = %v", got)
	}
}

func TestAuditLimit(t *testing.T) {
	for in, want := range map[int]int{-1: DefaultAuditLimit, 0: DefaultAuditLimit, 1: 1, 500: 500} {
		if got := AuditLimit(in); got != want {
			t.Errorf("AuditLimit(%d) = %d, want %d", in, got, want)
		}
	}
}
