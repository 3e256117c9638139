package embedded

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

// bAudit is the audit log (docs/STORAGE.md): project 0 bigendian time ns
// bigendian sequence → the entry's JSON. Created on the first append.
var bAudit = []byte("audit")

// AuditKeep is how many entries the audit log keeps per project: older
// ones are pruned as new ones come.
const AuditKeep = 20000

// auditPruneEvery is how many appends go between two prune checks.
const auditPruneEvery = 256

var (
	_ core.Auditor      = (*Store)(nil)
	_ core.AuditBatcher = (*Store)(nil)
)

func auditKey(project string, t time.Time, seq uint64) []byte {
	k := make([]byte, 0, len(project)+17)
	k = append(k, project...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(max(t.UnixNano(), 0)))
	return binary.BigEndian.AppendUint64(k, seq)
}

// AppendAudit appends e to its project's audit log (AppendAudits).
func (s *Store) AppendAudit(ctx context.Context, e core.AuditEntry) error {
	return s.AppendAudits(ctx, []core.AuditEntry{e})
}

// AppendAudits appends the entries to their projects' audit logs in one
// transaction, which also prunes a project's oldest entries beyond the
// keep (WithAuditKeep) every auditPruneEvery appends. The entries hold
// what the caller gave (ids, sizes, before → after summaries): the store
// behind extract/redact has them redacted first.
func (s *Store) AppendAudits(ctx context.Context, es []core.AuditEntry) error {
	const op = "append audit"
	bodies := make([][]byte, len(es))
	for i := range es {
		e := &es[i]
		if err := e.Stamp(s.cfg.clock()); err != nil {
			return fmt.Errorf("embedded: %s: %w", op, err)
		}
		body, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("embedded: %s: %w", op, err)
		}
		bodies[i] = body
	}
	if len(es) == 0 {
		return nil
	}
	return s.update(ctx, op, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bAudit)
		if err != nil {
			return err
		}
		for i, e := range es {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put(auditKey(e.ProjectID, e.Time, seq), bodies[i]); err != nil {
				return err
			}
			if seq%auditPruneEvery == 0 {
				if err := pruneAudit(b, e.ProjectID, cmp.Or(s.cfg.auditKeep, AuditKeep)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// pruneAudit deletes the oldest entries of project beyond keep.
func pruneAudit(b *bolt.Bucket, project string, keep int) error {
	prefix := append([]byte(project), 0)
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	_, err := deleteFrom(b, prefix, n-keep, func(k []byte) bool { return bytes.HasPrefix(k, prefix) })
	return err
}

// Audit returns up to limit entries of project at or after since, oldest
// first (ledger.AuditLimit: limit ≤ 0 is its default).
func (s *Store) Audit(ctx context.Context, projectID string, since time.Time, limit int) ([]core.AuditEntry, error) {
	const op = "audit"
	if err := core.ValidateProjectID(projectID); err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	limit = ledger.AuditLimit(limit)
	out := []core.AuditEntry{}
	err := s.view(ctx, op, func(tx *bolt.Tx) error {
		b := tx.Bucket(bAudit)
		if b == nil {
			return nil
		}
		prefix := append([]byte(projectID), 0)
		c := b.Cursor()
		for k, v := c.Seek(auditKey(projectID, since, 0)); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Next() {
			var e core.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			out = append(out, e)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
