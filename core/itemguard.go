package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// GuardedItems is an ItemStore that enforces an ItemPolicy and writes
// every put, delete and clear to an audit log: the one home of the
// namespace policy (seed 000 §9), used by memex serve per key and by the
// CLI with the [store] policy of its config.
type GuardedItems struct {
	inner  ItemStore
	policy ItemPolicy
	audit  Auditor
	now    func() time.Time
}

var _ ItemStore = (*GuardedItems)(nil)

// GuardItems wraps inner with policy. audit may be nil (no audit log); now
// nil means time.Now.
func GuardItems(inner ItemStore, policy ItemPolicy, audit Auditor, now func() time.Time) *GuardedItems {
	if now == nil {
		now = time.Now
	}
	return &GuardedItems{inner: inner, policy: policy, audit: audit, now: now}
}

// Put checks the write prefixes and the value size, lets the store check
// the entry count atomically, then audits the write.
func (g *GuardedItems) Put(ctx context.Context, req PutRequest) (PutResult, error) {
	if err := req.Validate(); err != nil {
		return PutResult{}, err
	}
	if err := g.policy.CheckWrite(req.Namespace); err != nil {
		return PutResult{}, err
	}
	if err := g.policy.CheckValue(req.Value); err != nil {
		return PutResult{}, err
	}
	if g.policy.MaxEntries > 0 && (req.MaxEntries == 0 || req.MaxEntries > g.policy.MaxEntries) {
		req.MaxEntries = g.policy.MaxEntries
	}
	res, err := g.inner.Put(ctx, req)
	if err != nil {
		return PutResult{}, err
	}
	g.record(ctx, AuditEntry{Action: "store_put", Namespace: req.Namespace.String(), Key: req.Key,
		Before: itemSummary(res.Previous), After: itemSummary(&res.Item)}, req.Namespace)
	return res, nil
}

// Get checks the read prefixes.
func (g *GuardedItems) Get(ctx context.Context, ns Namespace, key string) (Item, bool, error) {
	if err := ns.Validate(); err != nil {
		return Item{}, false, err
	}
	if err := g.policy.CheckRead(ns); err != nil {
		return Item{}, false, err
	}
	return g.inner.Get(ctx, ns, key)
}

// List checks the read prefixes.
func (g *GuardedItems) List(ctx context.Context, req ListItemsRequest) (ItemPage, error) {
	if err := req.Validate(); err != nil {
		return ItemPage{}, err
	}
	if err := g.policy.CheckRead(req.Prefix); err != nil {
		return ItemPage{}, err
	}
	return g.inner.List(ctx, req)
}

// Search checks the read prefixes.
func (g *GuardedItems) Search(ctx context.Context, req SearchItemsRequest) ([]Item, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := g.policy.CheckRead(req.Prefix); err != nil {
		return nil, err
	}
	return g.inner.Search(ctx, req)
}

// Delete checks the write prefixes and audits a removal.
func (g *GuardedItems) Delete(ctx context.Context, ns Namespace, key string) (Item, bool, error) {
	if err := ns.Validate(); err != nil {
		return Item{}, false, err
	}
	if err := g.policy.CheckWrite(ns); err != nil {
		return Item{}, false, err
	}
	it, ok, err := g.inner.Delete(ctx, ns, key)
	if err == nil && ok {
		g.record(ctx, AuditEntry{Action: "store_delete", Namespace: ns.String(), Key: key, Before: itemSummary(&it)}, ns)
	}
	return it, ok, err
}

// Clear checks the write prefixes and audits how many items went.
func (g *GuardedItems) Clear(ctx context.Context, prefix Namespace) (int, error) {
	if err := prefix.Validate(); err != nil {
		return 0, err
	}
	if err := g.policy.CheckWrite(prefix); err != nil {
		return 0, err
	}
	n, err := g.inner.Clear(ctx, prefix)
	if err == nil {
		g.record(ctx, AuditEntry{Action: "store_clear", Namespace: prefix.String(),
			Before: map[string]any{"items": n}, After: map[string]any{"items": 0}}, prefix)
	}
	return n, err
}

// record appends e (who and when filled in) to the audit log. The write
// has happened: a failed append is not the caller's error, and the entry
// is written even when ctx was cancelled meanwhile.
func (g *GuardedItems) record(ctx context.Context, e AuditEntry, ns Namespace) {
	if g.audit == nil {
		return
	}
	e.Time = g.now().UTC()
	e.KeyID = "local"
	if p, ok := PrincipalFrom(ctx); ok && p.ID != "" {
		e.KeyID = p.ID
	}
	e.ProjectID = AuditProject(ns)
	e.Weight = 1
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = g.audit.AppendAudit(actx, e)
}

// AuditProject is the project whose audit log holds the writes of ns: the
// project of a project-scope namespace, else the global project.
func AuditProject(ns Namespace) string {
	if len(ns) >= 2 && ns[0] == string(ScopeProject) && ValidateProjectID(ns[1]) == nil {
		return ns[1]
	}
	return GlobalProject
}

// itemSummary is the before/after view of an item in the audit log: its
// size, time and a digest of its value, never the value (it may hold what
// the redaction missed).
func itemSummary(it *Item) map[string]any {
	if it == nil {
		return nil
	}
	sum := sha256.Sum256(it.Value)
	return map[string]any{
		"bytes":      len(it.Value),
		"sha256":     hex.EncodeToString(sum[:6]),
		"updated_at": it.UpdatedAt.UTC().Format(time.RFC3339Nano),
	}
}
