package redisstore

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
)

func TestStoredRoundTrip(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: "q?", Answer: "a.", Tags: []string{"t"},
		Stats: core.Counters{WeakFail: 2}, CreatedAt: created, UpdatedAt: created, SharedProjects: []string{"o"}}
	voted := trust.NewState("maker", created)
	trust.New(trust.DefaultParams()).Apply(voted, trust.Vote{Source: "agent", Result: core.ResultPass, Strength: core.StrengthStrong, At: created}, nil)
	tests := []struct {
		name      string
		st        *trust.State
		stateKept bool
	}{
		{"pristine state elided, creator kept", trust.NewState("maker", created), false},
		{"state with evidence kept", voted, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := toStored(rec, tc.st, 7)
			v, err := s.encode(3)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeStored("p", "qa-1", v)
			if err != nil {
				t.Fatal(err)
			}
			if got.ver != 3 || got.Doc != 7 || got.ID != "qa-1" || got.project != "p" {
				t.Errorf("ver %d doc %d id %s project %s", got.ver, got.Doc, got.ID, got.project)
			}
			if diff := cmp.Diff(tc.st, got.State); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if r := got.record(true); r.Stats != rec.Stats || !r.CreatedAt.Equal(created) || r.ContentHash != core.ContentHash("q?", "a.") {
				t.Errorf("record fields lost: %+v", r)
			}
			if hasState := contains(v, `"s":`); hasState != tc.stateKept {
				t.Errorf("state stored = %v, want %v: %s", hasState, tc.stateKept, v)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestPostingRoundTrip(t *testing.T) {
	tests := []struct {
		name           string
		doc            uint64
		tf             retrieval.TF
		lens, wantLens [retrieval.NumFields]uint32
		wantTF         retrieval.TF
	}{
		{"small", 1, retrieval.TF{1, 2}, [2]uint32{5, 40}, [2]uint32{5, 40}, retrieval.TF{1, 2}},
		{"saturated", 1<<32 - 1, retrieval.TF{300, 256}, [2]uint32{70000, 65535}, [2]uint32{65535, 65535}, retrieval.TF{255, 255}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list := packPosting(99, retrieval.TF{1, 1}, [2]uint32{1, 1}) + packPosting(tc.doc, tc.tf, tc.lens)
			var n int
			forPostings(list, func(doc uint64, tf retrieval.TF, lens [retrieval.NumFields]uint32) bool {
				if n++; n == 2 && (doc != tc.doc || tf != tc.wantTF || lens != tc.wantLens) {
					t.Errorf("got doc %d tf %v lens %v", doc, tf, lens)
				}
				return true
			})
			if n != 2 {
				t.Errorf("%d postings decoded, want 2", n)
			}
		})
	}
}
