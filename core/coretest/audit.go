package coretest

import (
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// testAuditor: the audit log keeps each project's entries apart, oldest
// first from since, at most limit, every field round-tripped (the
// dashboard's Runs and QA pages read run ids and before → after from it).
func testAuditor(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	a, ok := core.As[core.Auditor](p)
	if !ok {
		t.Skip("plugin does not implement core.Auditor")
	}
	ctx := t.Context()
	t0 := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Minute)
	want := []core.AuditEntry{
		{Time: t0, KeyID: "local:alice", ProjectID: projA, QAID: "qa-1", Action: "hit", RunID: "run-1", Weight: 1,
			After: map[string]any{"shown": true, "used": true}},
		{Time: t0.Add(time.Second), KeyID: "local:alice", ProjectID: projA, QAID: "qa-1", Action: "validate", RunID: "run-1", Weight: 1,
			Before: map[string]any{"trust": 0.5}, After: map[string]any{"trust": 0.75, "result": "pass", "strength": "strong"}},
		{Time: t0.Add(2 * time.Second), KeyID: "local:alice", ProjectID: projA, QAID: "qa-2", Action: "candidate", RunID: "run-1", Weight: 1},
	}
	// Another project's entry, dated in another zone: read back in UTC.
	for _, e := range append([]core.AuditEntry{{Time: t0.In(time.FixedZone("UTC+2", 2*3600)), KeyID: "k", ProjectID: projB, Action: "hit"}}, want...) {
		if err := a.AppendAudit(ctx, e); err != nil {
			t.Fatalf("AppendAudit: %v", err)
		}
	}
	got, err := a.Audit(ctx, projA, time.Time{}, 10)
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Audit(%s) = %d entries, want %d: %+v", projA, len(got), len(want), got)
	}
	for i, e := range got {
		w := want[i]
		if !e.Time.Equal(w.Time) || e.KeyID != w.KeyID || e.QAID != w.QAID || e.Action != w.Action || e.RunID != w.RunID || e.Weight != w.Weight {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
		for k, v := range w.After {
			if e.After[k] != v {
				t.Errorf("entry %d after[%s] = %v, want %v", i, k, e.After[k], v)
			}
		}
		for k, v := range w.Before {
			if e.Before[k] != v {
				t.Errorf("entry %d before[%s] = %v, want %v", i, k, e.Before[k], v)
			}
		}
	}
	if got, err := a.Audit(ctx, projA, t0.Add(time.Second), 10); err != nil || len(got) != 2 || got[0].Action != "validate" {
		t.Errorf("Audit since the second entry = %+v, %v; want the last two", got, err)
	}
	if got, err := a.Audit(ctx, projA, time.Time{}, 1); err != nil || len(got) != 1 || got[0].Action != "hit" {
		t.Errorf("Audit limit 1 = %+v, %v; want the oldest", got, err)
	}
	if got, err := a.Audit(ctx, projB, time.Time{}, 10); err != nil || len(got) != 1 || got[0].KeyID != "k" ||
		!got[0].Time.Equal(t0) || got[0].Time.Location() != time.UTC {
		t.Errorf("Audit(%s) = %+v, %v; want its one entry, at %v in UTC", projB, got, err, t0)
	}
	// An entry without a time is dated when it is appended.
	before := time.Now()
	if err := a.AppendAudit(ctx, core.AuditEntry{KeyID: "undated", ProjectID: projB, Action: "hit"}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	after := time.Now()
	if got, err := a.Audit(ctx, projB, t0.Add(time.Millisecond), 10); err != nil || len(got) != 1 || got[0].KeyID != "undated" ||
		got[0].Time.Before(before.Add(-time.Millisecond)) || got[0].Time.After(after) || got[0].Time.Location() != time.UTC {
		t.Errorf("Audit(%s) after an undated entry = %+v, %v; want it dated between %v and %v, in UTC", projB, got, err, before, after)
	}
	if got, err := a.Audit(ctx, projC, time.Time{}, 10); err != nil || len(got) != 0 {
		t.Errorf("Audit of a project without entries = %+v, %v", got, err)
	}
	if err := a.AppendAudit(ctx, core.AuditEntry{ProjectID: "Bad Project!", Action: "hit"}); err == nil {
		t.Error("AppendAudit accepted an invalid project")
	}
}
