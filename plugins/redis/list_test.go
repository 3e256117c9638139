package redisstore

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
)

// TestProjectsUnbuilt: Projects reads a project's kept counts, and a
// project whose statistics are not kept yet (written before the store
// kept them) is summarised as Stats reads it — its statistics built then.
func TestProjectsUnbuilt(t *testing.T) {
	s := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "c"})
	for i, p := range []string{"kept", "old", "old"} {
		_, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: fmt.Sprintf("question %d about gerbils", i),
			Answer: "answer", Metadata: map[string]any{"quarantined": i == 2}})
		if err != nil {
			t.Fatal(err)
		}
	}
	forgetStats(t, s, "old")
	ps, err := s.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []core.ProjectSummary{
		{ProjectID: "kept", Total: 1, ByStatus: map[core.Status]int{core.StatusCandidate: 1}, ByLevel: map[string]int{"L0": 1}},
		{ProjectID: "old", Total: 2, ByStatus: map[core.Status]int{core.StatusCandidate: 2}, ByLevel: map[string]int{"L0": 2}},
	}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Errorf("Projects (-want +got):\n%s", diff)
	}
	if v, _ := s.rdb.HGet(ctx, s.k.agg("old"), aggBuilt).Result(); v == "" {
		t.Error("the statistics of a project Projects summarised are not built")
	}
}
