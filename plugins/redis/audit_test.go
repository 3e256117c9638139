package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// TestAuditGroupCommit: concurrent appends (written together by the audit
// writer) all land, each caller learns its own outcome, entries older than
// the stream's last id still land, and an append after Close fails at once.
func TestAuditGroupCommit(t *testing.T) {
	s := newShared(t)
	const goroutines, each = 64, 20
	base := time.Now().UTC().Add(-time.Hour)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Half the entries are an hour old: behind the stream's
				// last id once the others landed.
				at := time.Now().UTC()
				if i%2 == 1 {
					at = base
				}
				e := core.AuditEntry{Time: at, KeyID: fmt.Sprintf("k%d", g), ProjectID: "grp", Action: "validate", QAID: fmt.Sprintf("q%d", i), Weight: 1}
				if err := s.AppendAudit(t.Context(), e); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	all, err := s.Audit(t.Context(), "grp", time.Time{}, 10000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range all {
		seen[e.KeyID+"/"+e.QAID] = true
	}
	if len(all) != goroutines*each || len(seen) != goroutines*each {
		t.Errorf("%d entries (%d distinct), want %d", len(all), len(seen), goroutines*each)
	}
	// Invalid input is the caller's alone.
	if err := s.AppendAudit(t.Context(), core.AuditEntry{ProjectID: "Bad Project!"}); err == nil {
		t.Error("an invalid project was accepted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.AppendAudit(ctx, core.AuditEntry{ProjectID: "grp", Action: "late"}); err == nil {
		t.Error("an append after Close succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("an append after Close took %s", d)
	}
}
