package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/memex-dev/memex/core"
)

// fileAudit is the audit log of a store that keeps none (the embedded
// store): one JSON line per entry in <data dir>/audit.jsonl, appended with
// O_APPEND (one write per line, so processes sharing the file do not
// interleave lines). Entries hold ids, sizes and digests, never values.
type fileAudit struct {
	path string
	mu   sync.Mutex
}

var _ core.Auditor = (*fileAudit)(nil)

func (f *fileAudit) AppendAudit(ctx context.Context, e core.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	w, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		_ = w.Close()
		return fmt.Errorf("audit: %w", err)
	}
	return w.Close()
}

// Audit returns up to limit entries of project at or after since, oldest
// first (unreadable lines are skipped).
func (f *fileAudit) Audit(ctx context.Context, project string, since time.Time, limit int) ([]core.AuditEntry, error) {
	r, err := os.Open(f.path)
	if os.IsNotExist(err) {
		return []core.AuditEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer func() { _ = r.Close() }() // read only
	if limit <= 0 {
		limit = 100
	}
	out := []core.AuditEntry{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && len(out) < limit {
		var e core.AuditEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ProjectID != project || e.Time.Before(since) {
			continue
		}
		out = append(out, e)
	}
	return out, ctx.Err()
}
