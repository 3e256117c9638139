package ledger

import (
	"slices"
	"testing"

	"github.com/memex-dev/memex/core"
)

func TestSharedInto(t *testing.T) {
	for _, tc := range []struct {
		owner  string
		shared []string
		want   []string
	}{
		{"a", nil, nil},
		{"a", []string{"b", "c"}, []string{"b", "c"}},
		{"a", []string{"b", "a", "b", core.GlobalProject, "c"}, []string{"b", "c"}},
		{core.GlobalProject, []string{"b"}, nil},
	} {
		if got := SharedInto(tc.owner, tc.shared); !slices.Equal(got, tc.want) {
			t.Errorf("SharedInto(%q, %q) = %q, want %q", tc.owner, tc.shared, got, tc.want)
		}
	}
}

func TestListFilter(t *testing.T) {
	r := core.Record{Question: "How do I Rotate the logs", Answer: "Use LOGROTATE daily", Status: core.StatusActive, ValidationLevel: 2}
	for _, tc := range []struct {
		name string
		req  core.ListRequest
		want bool
	}{
		{"no filter", core.ListRequest{}, true},
		{"status", core.ListRequest{Status: core.StatusActive}, true},
		{"other status", core.ListRequest{Status: core.StatusCandidate}, false},
		{"min level met", core.ListRequest{MinLevel: 2}, true},
		{"min level not met", core.ListRequest{MinLevel: 3}, false},
		{"q in the question, any case", core.ListRequest{Q: "ROTATE THE"}, true},
		{"q in the answer", core.ListRequest{Q: "logrotate"}, true},
		{"q nowhere", core.ListRequest{Q: "cron"}, false},
		{"all filters", core.ListRequest{Status: core.StatusActive, MinLevel: 1, Q: "daily"}, true},
	} {
		if got := ListFilter(tc.req)(r); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
