package ledger

import (
	"testing"

	"github.com/memex-dev/memex/core"
)

// TestRankable: a search ranks only QAs visible to its project — its own,
// global ones and those shared with it — whatever the scopes its index
// read (a store's scopes are the first fence, this is the second).
func TestRankable(t *testing.T) {
	rec := core.Record{QAID: "q1", ProjectID: "own", SharedProjects: []string{"friend"}, TrustScore: 0.7, Status: core.StatusActive}
	for _, tc := range []struct {
		owner, project string
		want           bool
	}{
		{"own", "own", true},
		{"own", "friend", true},
		{"own", "stranger", false},
		{core.GlobalProject, "stranger", true},
	} {
		r := rec
		r.ProjectID = tc.owner
		m, ok := Rankable(r, tc.project, 0.5)
		if ok != tc.want {
			t.Errorf("QA of %s searched from %s: rankable %v, want %v", tc.owner, tc.project, ok, tc.want)
		}
		if ok && (m.QAID != "q1" || m.ProjectID != tc.owner || m.Relevance != 0.5 || m.Trust != 0.7 || m.Status != core.StatusActive) {
			t.Errorf("match %+v does not carry the record's fields", m)
		}
	}
	if got := SearchCandidates(5); got != 50 {
		t.Errorf("SearchCandidates(5) = %d, want the floor of 50", got)
	}
	if got := SearchCandidates(20); got != 80 {
		t.Errorf("SearchCandidates(20) = %d, want 4 per match", got)
	}
}
