package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
)

// runAudit is what one run of memex run or a host's turn wrote, as audit
// entries of the same shape memex serve writes for the same writes (the
// dashboard's Runs and QA pages read them): a hit per QA shown (shown,
// used), a validation per QA the run proved something about (before →
// after), the candidate it learned. Ids and numbers only, never text.
func runAudit(keyID string, pre engine.PreResult, post engine.PostResult) []core.AuditEntry {
	var out []core.AuditEntry
	entry := func(qa, action string, weight float64, after map[string]any) core.AuditEntry {
		return core.AuditEntry{KeyID: keyID, ProjectID: pre.ProjectID, QAID: qa, Action: action, RunID: pre.RunID, Weight: weight, After: after}
	}
	if post.Hit != nil && post.HitResult != nil {
		for _, ref := range post.Hit.References {
			out = append(out, entry(ref.QAID, "hit", 1, map[string]any{"shown": ref.Shown, "used": ref.Used}))
		}
	}
	before := map[string]core.Match{}
	for _, m := range pre.Matches {
		before[m.QAID] = m
	}
	for i, v := range post.Validations {
		if i >= len(post.Records) || post.Records[i].QAID != v.QAID {
			continue // not stored
		}
		rec := post.Records[i]
		res, strength, _ := v.Outcome()
		e := entry(v.QAID, "validate", strength.Weight(), map[string]any{
			"status": string(rec.Status), "level": rec.Level, "trust": rec.TrustScore, "result": string(res), "strength": string(strength)})
		if m, ok := before[v.QAID]; ok {
			e.Before = map[string]any{"status": string(m.Status), "level": m.Level, "trust": m.Trust}
		}
		out = append(out, e)
	}
	if c := post.Candidate.Result; c != nil {
		outcome := "created"
		if c.DeduplicatedInto != "" {
			outcome = "deduplicated"
		}
		out = append(out, entry(c.QAID, "candidate", 1, map[string]any{"status": string(c.Status), "outcome": outcome}))
	}
	return out
}

// recordRun appends the run's entries (runAudit, as the local user) to
// the session store's audit log, in one write when the store batches them
// (the embedded store: one transaction), through the store's redaction
// like every write, within the memory timeout. A store without an audit
// log (memex serve's HTTP API audits its own writes) records nothing here.
func (a *app) recordRun(ctx context.Context, s *session, pre engine.PreResult, post engine.PostResult) error {
	store := s.store
	es := runAudit("local:"+a.scopeUser(s.cfg), pre, post)
	if len(es) == 0 || store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Engine.MemoryTimeout)
	defer cancel()
	if b, ok := core.As[core.AuditBatcher](store); ok {
		return b.AppendAudits(ctx, es)
	}
	au, ok := core.As[core.Auditor](store)
	if !ok {
		return nil
	}
	var errs []error
	for _, e := range es {
		errs = append(errs, au.AppendAudit(ctx, e))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}
