package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

// TestImportSharedRoundTrips: an import chunk writes the sharing pointers
// of its records in one round trip, however many are shared.
func TestImportSharedRoundTrips(t *testing.T) {
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	hook := &tripHook{}
	client.AddHook(hook)
	s := newOnClient(t, client)
	ctx := context.WithValue(t.Context(), tripKey{}, true)
	const p = "imp"
	chunk := func(first int) []core.Record {
		var rs []core.Record
		for i := first; i < first+40; i++ {
			rs = append(rs, core.Record{QAID: fmt.Sprintf("imp-%d", i), ProjectID: p, SharedProjects: []string{"team"},
				Question: fmt.Sprintf("How to import shared record %d", i), Answer: fmt.Sprintf("import %d", i)})
		}
		return rs
	}
	if err := s.Import(ctx, chunk(0)); err != nil { // the project's first: registered, statistics marked
		t.Fatal(err)
	}
	before := hook.trips.Load() + s.batch.sent.Load()
	if err := s.Import(ctx, chunk(40)); err != nil {
		t.Fatal(err)
	}
	// The claims, the sharing pointers, the records read, the document
	// ids, the commit.
	if n := hook.trips.Load() + s.batch.sent.Load() - before; n != 5 {
		t.Errorf("import of 40 shared records: %d round trips, want 5", n)
	}
}
