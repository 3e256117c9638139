package embedded

import (
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// TestAuditPruned: the audit log keeps the newest entries of each project
// (WithAuditKeep), pruning as it appends; another project's stay.
func TestAuditPruned(t *testing.T) {
	const keep = 10
	s := newTestStore(t, WithKeepOpen(), WithAuditKeep(keep))
	ctx := t.Context()
	t0 := time.Now().UTC().Add(-time.Hour)
	if err := s.AppendAudit(ctx, core.AuditEntry{Time: t0, ProjectID: "other", Action: "hit"}); err != nil {
		t.Fatal(err)
	}
	const n = 2*auditPruneEvery + 7
	for i := range n {
		if err := s.AppendAudit(ctx, core.AuditEntry{Time: t0.Add(time.Duration(i) * time.Second), ProjectID: "p", Action: "hit", Weight: float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Audit(ctx, "p", time.Time{}, 10*n)
	if err != nil {
		t.Fatal(err)
	}
	// Pruned at the last multiple of auditPruneEvery, then appended to.
	if len(got) > keep+auditPruneEvery || len(got) < keep {
		t.Fatalf("%d entries kept, want between %d and %d", len(got), keep, keep+auditPruneEvery)
	}
	if last := got[len(got)-1]; last.Weight != n-1 {
		t.Errorf("the newest entry is %v, want %d", last.Weight, n-1)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Weight != got[i-1].Weight+1 {
			t.Fatalf("entries kept are not the newest in order: %v after %v", got[i].Weight, got[i-1].Weight)
		}
	}
	if other, err := s.Audit(ctx, "other", time.Time{}, 10); err != nil || len(other) != 1 {
		t.Errorf("another project's entries: %v, %v", other, err)
	}
}
