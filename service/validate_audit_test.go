package service

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/wire"
)

// appendCounter is the Redis store counting the service's own audit
// appends.
type appendCounter struct {
	*redisstore.Store
	appends atomic.Int64
}

func (s *appendCounter) AppendAudit(ctx context.Context, e core.AuditEntry) error {
	s.appends.Add(1)
	return s.Store.AppendAudit(ctx, e)
}

// TestValidationAuditedOnRedis: on the Redis store a validation's audit
// entry is appended with its write, not by the service: one entry per
// validation, applied (its weight, before → after) or not counted (the
// creator's own report: weight 0 and the reason).
func TestValidationAuditedOnRedis(t *testing.T) {
	rs, err := redisstore.Open(t.Context(), redistest.URL(t), redisstore.WithPrefix(redistest.Prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	store := &appendCounter{Store: rs}
	voter := Key{ID: "voter", Role: RoleAgent, Projects: []string{"a-*"}}
	e := newEnvFor(t, store, withConfig(func(c *Config) {
		c.Keys = append(c.Keys, withHash(voter)...)
		c.RequireReceipts = false
	}))
	id := e.addQA(keyAgentA, "a-proj", "How to rotate the kiln logs?", "kiln logs --rotate")
	appends := store.appends.Load()
	var rr wire.RecordResponse
	e.must(200, voter, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id, "result": "pass",
		"signal_strength": "strong"}).decode(t, &rr)
	if !*rr.Applied || rr.Record.SuccessCount != 1 {
		t.Fatalf("validation: %+v", rr)
	}
	e.must(200, keyAgentA, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id, "result": "pass",
		"signal_strength": "strong"}).decode(t, &rr)
	if *rr.Applied || rr.Reason != wire.ReasonNotCounted {
		t.Fatalf("the creator's own validation: applied %v, reason %q", *rr.Applied, rr.Reason)
	}
	if n := store.appends.Load() - appends; n != 0 {
		t.Errorf("the service appended %d entries of its own for the validations", n)
	}
	var audit wire.AuditResponse
	e.must(200, keyAdmin, "GET", "/admin/v1/audit?project_id=a-proj", nil).decode(t, &audit)
	var vs []core.AuditEntry
	for _, a := range audit.Entries {
		if a.Action == "validate" {
			vs = append(vs, a)
		}
	}
	if len(vs) != 2 {
		t.Fatalf("%d validate entries, want 2: %+v", len(vs), vs)
	}
	if a := vs[0]; a.KeyID != "voter" || a.QAID != id || a.Weight != core.StrengthStrong.Weight() || a.Before == nil ||
		a.After["result"] != "pass" || a.After["strength"] != "strong" || a.After["level"] == nil || a.Time.IsZero() {
		t.Errorf("applied validation's entry: %+v", a)
	}
	if a := vs[1]; a.KeyID != keyAgentA.ID || a.Weight != 0 || a.After["applied"] != false || a.After["reason"] != wire.ReasonNotCounted || a.Before == nil {
		t.Errorf("not counted validation's entry: %+v", a)
	}
}
