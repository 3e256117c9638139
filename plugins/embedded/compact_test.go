package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// fileContents reads every key, value and bucket sequence of the file at
// path, nested buckets included, keyed by bucket path and key.
func fileContents(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	var walk func(name string, b *bolt.Bucket) error
	walk = func(name string, b *bolt.Bucket) error {
		out[name+"\x00sequence"] = fmt.Sprint(b.Sequence())
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(name+"/"+string(k), b.Bucket(k))
			}
			out[name+"\x00"+string(k)] = string(v)
			return nil
		})
	}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name), b) })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// usedBytes is the size of the pages of the file at path.
func usedBytes(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	_ = db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	return n
}

// importInBatches imports recs 50 per transaction: each transaction
// copies the index pages it touches, leaving the old copies free.
func importInBatches(t *testing.T, s *Store, recs []core.Record) {
	t.Helper()
	for i := 0; i < len(recs); i += 50 {
		if err := s.Import(t.Context(), recs[i:min(i+50, len(recs))]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompact: a store written in many transactions (a varied history,
// then imports) is rewritten into a smaller file holding the same keys,
// values and bucket sequences (so doc ids go on from where they were),
// which the store then reads and writes; a file with few free pages is
// left as it is; a keep-open store refuses.
func TestCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memex.db")
	s := newTestStoreAt(t, path, WithClock(steppingClock(fixtureStart)))
	fillFixture(t, s)
	importInBatches(t, s, coretest.Corpus(1000, "bulk", 9))
	if _, err := s.Items().Put(t.Context(), core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Key: "k", Value: []byte(`{"text":"kept"}`)}); err != nil {
		t.Fatal(err)
	}
	before, size := fileContents(t, path), fileSize(t, path)
	did, err := s.Compact(t.Context())
	if err != nil || !did {
		t.Fatalf("Compact = %v, %v; want true", did, err)
	}
	after := fileSize(t, path)
	if after*3 > size*2 {
		t.Errorf("file %d bytes after compaction, %d before: want ≤ ⅔", after, size)
	}
	if pages := usedBytes(t, path); after != pages {
		t.Errorf("compacted file of %d bytes, its pages %d", after, pages)
	}
	got := fileContents(t, path)
	if len(got) != len(before) {
		t.Errorf("%d keys after compaction, %d before", len(got), len(before))
	}
	for k, v := range before {
		if got[k] != v {
			t.Errorf("key %q: %q after compaction, %q before", k, got[k], v)
		}
	}
	if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
		t.Errorf("the copy is left beside the store: %v", err)
	}
	res, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "bulk", Question: "after compaction?", Answer: "still written"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "bulk", res.QAID); err != nil {
		t.Errorf("a QA written after compaction: %v", err)
	}
	if did, err := s.Compact(t.Context()); err != nil || did {
		t.Errorf("Compact of a compacted store = %v, %v; want false", did, err)
	}
	ks := newTestStore(t, WithKeepOpen())
	if _, err := ks.Compact(t.Context()); err == nil {
		t.Errorf("Compact in keep-open mode: no error")
	}
}

// TestCompactThroughSymlink: a store opened through a symbolic link is
// compacted in the file the link leads to; the link stays.
func TestCompactThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	file, link := filepath.Join(dir, "real.db"), filepath.Join(dir, "memex.db")
	if err := os.Symlink("real.db", link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	s := newTestStoreAt(t, link)
	importInBatches(t, s, coretest.Corpus(500, "p", 6))
	before, size := fileContents(t, file), fileSize(t, file)
	if did, err := s.Compact(t.Context()); err != nil || !did {
		t.Fatalf("Compact = %v, %v; want true", did, err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symbolic link: %v, %v", link, st, err)
	}
	if got := fileSize(t, file); got >= size {
		t.Errorf("%s: %d bytes after compaction, %d before", file, got, size)
	}
	if got := fileContents(t, file); len(got) != len(before) {
		t.Errorf("%d keys after compaction, %d before", len(got), len(before))
	}
}

// TestCompactWhileAnotherWrites: another Store on the file (its own
// handle and locks, as another process has) writes candidates one by one
// while the file is compacted and put in its place: every write it had
// acknowledged is in the store afterwards.
func TestCompactWhileAnotherWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memex.db")
	s := newTestStoreAt(t, path)
	other := newTestStoreAt(t, path)
	importInBatches(t, s, coretest.Corpus(1500, "p", 4))
	var (
		wg    sync.WaitGroup
		stop  = make(chan struct{})
		acked []string
		werr  error
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			res, err := other.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p",
				Question: fmt.Sprintf("concurrent question %d?", i), Answer: fmt.Sprintf("answer number %d", i)})
			if err != nil {
				werr = err
				return
			}
			acked = append(acked, res.QAID)
		}
	})
	time.Sleep(20 * time.Millisecond)
	did, err := s.Compact(t.Context())
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err != nil || !did {
		t.Fatalf("Compact = %v, %v; want true", did, err)
	}
	if werr != nil {
		t.Fatalf("concurrent write: %v", werr)
	}
	fresh := newTestStoreAt(t, path)
	for _, id := range acked {
		if _, err := fresh.Get(t.Context(), "p", id); err != nil {
			t.Errorf("acknowledged write %s: %v", id, err)
		}
	}
	t.Logf("%d writes acknowledged around the compaction", len(acked))
}
