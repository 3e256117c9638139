package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/memex-dev/memex/core"
)

// TestImportSharedRoundTrips: an import chunk writes the sharing pointers
// of its records in one round trip, however many are shared.
func TestImportSharedRoundTrips(t *testing.T) {
	s, _, trips := newTripStore(t)
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
	before := trips()
	if err := s.Import(ctx, chunk(40)); err != nil {
		t.Fatal(err)
	}
	// The claims, the sharing pointers, the records read, the document
	// ids, the commit.
	if n := trips() - before; n != 5 {
		t.Errorf("import of 40 shared records: %d round trips, want 5", n)
	}
}
