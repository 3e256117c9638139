package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// TestOpenReadOnlyWhenInitialized checks that opening an initialized store
// does not write to it (every memex process opens the store: a commit per
// process would cost a freelist load and an fsync), and that a store with a
// missing bucket is repaired by Open.
func TestOpenReadOnlyWhenInitialized(t *testing.T) {
	tests := []struct {
		name      string
		damage    func(tx *bolt.Tx) error
		wantWrite bool
	}{
		{"initialized", nil, false},
		{"missing bucket", func(tx *bolt.Tx) error { return tx.DeleteBucket(bQA) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "memex.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			if tc.damage != nil {
				db, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := db.Update(tc.damage); err != nil {
					t.Fatal(err)
				}
				_ = db.Close()
			}
			old := time.Unix(1_000_000, 0)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			s, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if wrote := !st.ModTime().Equal(old); wrote != tc.wantWrite {
				t.Errorf("Open wrote the file: %v, want %v", wrote, tc.wantWrite)
			}
			if err := s.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := s.view(t.Context(), "check", func(tx *bolt.Tx) error {
				for _, b := range allBuckets {
					if tx.Bucket(b) == nil {
						t.Errorf("bucket %s missing after Open", b)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPackedBuckets checks that the buckets keyed by doc id and the
// audit log fill their pages (imports and runs append to them), and that
// the file grows by growBytes.
func TestPackedBuckets(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "memex.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := coretest.Corpus(500, "p", 5)
	for i := 0; i < len(recs); i += 100 {
		if err := s.Import(t.Context(), recs[i:i+100]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 { // a run's entries, run after run, in two projects
		es := make([]core.AuditEntry, 5)
		for j := range es {
			es[j] = core.AuditEntry{ProjectID: []string{"p", "q"}[i%2], Action: "hit", QAID: recs[i].QAID, RunID: fmt.Sprint("run-", i)}
		}
		if err := s.AppendAudits(t.Context(), es); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.view(t.Context(), "check", func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bDocs, bQA, bTerms, bAudit} {
			st := tx.Bucket(name).Stats()
			if fill := float64(st.LeafInuse) / float64(st.LeafAlloc); fill < 0.8 {
				t.Errorf("bucket %s: pages %.0f%% full, want ≥ 80%%", name, 100*fill)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The file grows by growBytes beyond what its pages need, not by
	// bbolt's default 16 MB.
	if size := fileSize(t, s.path); size > 4<<20 {
		t.Errorf("file of 500 QAs: %d bytes, want ≤ 4 MB", size)
	}
}

// TestCommitsAreSynced: every commit is fsync'd before a write returns
// (an acknowledged write survives a crash of the machine, not only of the
// process): the store never opens bbolt with NoSync.
func TestCommitsAreSynced(t *testing.T) {
	s := newTestStore(t)
	db, err := s.openDB(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.closeDB(db)
	if db.NoSync {
		t.Errorf("a per-operation handle has fsync off")
	}
	if ks := newTestStore(t, WithKeepOpen()); ks.db.NoSync {
		t.Errorf("the keep-open handle has fsync off")
	}
}
