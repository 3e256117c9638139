package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// TestAuditWindow: an entry's id is the time Redis appends it, so an
// entry whose own time is ahead of Redis's clock (by less than auditSkew)
// and one appended after newer ones are both in the windows they belong
// to; a stream whose entries have ids of their own times (as older
// versions of the store appended them) reads the same.
func TestAuditWindow(t *testing.T) {
	s := newShared(t)
	ctx := t.Context()
	const p = "win"
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Older entries under ids of their own times.
	for i, at := range []time.Time{now.Add(-3 * time.Second), now.Add(-time.Second)} {
		body, err := json.Marshal(core.AuditEntry{Time: at, KeyID: fmt.Sprintf("old%d", i), ProjectID: p, Action: "hit"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.k.audit(p), ID: strconv.FormatInt(at.UnixMilli(), 10) + "-*", Values: []any{"e", string(body)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []core.AuditEntry{
		{Time: now.Add(-2 * time.Second), KeyID: "late"}, // appended after the newer old1
		{Time: now.Add(auditSkew / 2), KeyID: "ahead"},   // written by a process whose clock is ahead
		{Time: now.Add(auditSkew/2 + time.Millisecond), KeyID: "last"},
	} {
		e.ProjectID, e.Action = p, "validate"
		if err := s.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		since time.Time
		limit int
		want  string
	}{
		{time.Time{}, 10, "old0 old1 late ahead last"},
		{now.Add(-3 * time.Second), 10, "old0 old1 late ahead last"},
		{now.Add(-2 * time.Second), 10, "old1 late ahead last"},
		{now.Add(-2 * time.Second), 2, "old1 late"},
		{now.Add(-time.Second), 10, "old1 ahead last"},
		{now.Add(auditSkew / 2), 10, "ahead last"},
		{now.Add(auditSkew/2 + time.Millisecond), 10, "last"},
		{now.Add(auditSkew), 10, ""},
	} {
		got, err := s.Audit(ctx, p, c.since, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range got {
			keys = append(keys, e.KeyID)
		}
		if strings.Join(keys, " ") != c.want {
			t.Errorf("Audit(since %v, limit %d) = %q, want %q", c.since.Sub(now), c.limit, keys, c.want)
		}
	}
}
