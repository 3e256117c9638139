package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
)

// spoolErr is what a spooling store returns for a write it kept for later.
type spoolErr struct{}

func (spoolErr) Error() string { return "spooled for later delivery" }
func (spoolErr) Unwrap() error { return core.ErrUnavailable }
func (spoolErr) Spooled() bool { return true }

// spoolingStore is a fakeStore with an outbox.
type spoolingStore struct {
	*fakeStore
	on bool
}

func (s spoolingStore) Spools() bool { return s.on }

var _ engine.Spooler = spoolingStore{}

const candidateAnswer = "Run go test -race ./... to find it; the report shows both goroutines. Guard the map with a mutex."

func TestPostSpoolsAfterFailedSearch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spools    bool
		wantCands int
		skipped   string
	}{
		{"store with an outbox", true, 1, "write_failed"},
		{"store without an outbox", false, 0, "memory_unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fakeStore{writeErr: spoolErr{}, search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
				return nil, core.ErrUnavailable
			}}
			e := newEngine(t, spoolingStore{fs, tc.spools}, nil)
			pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query, RunID: "run-1"})
			if err != nil || pre.MemoryErr == nil {
				t.Fatalf("Pre = %v, memory err %v; want a failed search", err, pre.MemoryErr)
			}
			post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun(candidateAnswer)})
			if err != nil {
				t.Fatal(err)
			}
			if len(fs.cands) != tc.wantCands || post.Candidate.Skipped != tc.skipped {
				t.Fatalf("candidates sent %d (skipped %q), want %d (%q)", len(fs.cands), post.Candidate.Skipped, tc.wantCands, tc.skipped)
			}
			if tc.spools && (len(post.Errors) != 1 || !errors.Is(post.Errors[0], core.ErrUnavailable)) {
				t.Errorf("errors = %v; want the spooled candidate reported", post.Errors)
			}
		})
	}
}

func TestPostKeepsWritingToASpoolingStore(t *testing.T) {
	fs := &fakeStore{writeErr: spoolErr{}, search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
		return []core.Match{trustedMatch("qa-1"), trustedMatch("qa-2")}, nil
	}}
	e := newEngine(t, spoolingStore{fs, true}, nil)
	pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query})
	if err != nil {
		t.Fatal(err)
	}
	post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun("Used [QA_REF qa-1] and [QA_REF qa-2]; both worked.")})
	if err != nil {
		t.Fatal(err)
	}
	// The hit spooled; the two validations must still reach the store (and
	// spool) instead of being skipped as after an outage.
	if len(fs.hits) != 1 || len(fs.vals) != 2 {
		t.Fatalf("hits %d validations %d sent; want 1 and 2", len(fs.hits), len(fs.vals))
	}
	for _, err := range post.Errors {
		var s interface{ Spooled() bool }
		if !errors.As(err, &s) {
			t.Errorf("error %v is not the store's spooled error", err)
		}
	}
}
