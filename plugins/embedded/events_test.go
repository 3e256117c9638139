package embedded

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
)

// testClock is a store clock that tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock(t time.Time) *testClock { return &testClock{t: t} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// bucketKeys reads the keys of a bucket of the store file at path (none
// when it does not exist).
func bucketKeys(t *testing.T, path string, name []byte) [][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys [][]byte
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(name); b != nil {
			return b.ForEach(func(k, _ []byte) error {
				keys = append(keys, bytes.Clone(k))
				return nil
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func hit(t *testing.T, s *Store, qaID, eventID string) {
	t.Helper()
	if _, err := s.RecordHit(t.Context(), core.HitRequest{ProjectID: "p", EventID: eventID,
		References: []core.HitRef{{QAID: qaID, Shown: true, Used: true}}}); err != nil {
		t.Fatal(err)
	}
}

func usage(t *testing.T, s *Store, qaID string) int64 {
	t.Helper()
	r, err := s.Get(t.Context(), "p", qaID)
	if err != nil {
		t.Fatal(err)
	}
	return r.UsageCount
}

// TestEventsPrunedPastWindow: the events whose slot left the window are
// deleted by the next writes, at most eventPruneMax per write, oldest
// first; an event inside the window is kept and still deduplicated, one
// past it is applied again.
func TestEventsPrunedPastWindow(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clk := newTestClock(t0)
	path := filepath.Join(t.TempDir(), "memex.db")
	s := newTestStoreAt(t, path, WithClock(clk.now))
	reqs := make([]core.CandidateRequest, 300)
	for i := range reqs {
		reqs[i] = core.CandidateRequest{ProjectID: "p", EventID: fmt.Sprintf("old-%d", i),
			Question: fmt.Sprintf("how to tune the pump number %d", i), Answer: fmt.Sprintf("pump-%d tune --fast", i)}
	}
	res, err := s.RecordCandidates(t.Context(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	qa := res[0].QAID
	hit(t, s, qa, "old-hit")
	clk.add(core.EventWindow / 2)
	hit(t, s, qa, "mid-hit")
	if n := len(bucketKeys(t, path, bEvents)); n != 302 {
		t.Fatalf("%d events inside the window, want 302", n)
	}

	clk.add(core.EventWindow/2 + eventSlot) // every slot of t0 is out of the window
	hit(t, s, qa, "new-1")
	if n := len(bucketKeys(t, path, bEvents)); n != 302-eventPruneMax+1 {
		t.Errorf("%d events after one write past the window, want %d (%d pruned)", n, 302-eventPruneMax+1, eventPruneMax)
	}
	hit(t, s, qa, "new-2")
	keys := bucketKeys(t, path, bEvents)
	if len(keys) != 3 {
		t.Fatalf("%d events after two writes past the window, want 3 (mid-hit, new-1, new-2)", len(keys))
	}
	if !bytes.HasSuffix(keys[0], []byte("mid-hit")) {
		t.Errorf("first event kept %q, want mid-hit's", keys[0])
	}
	before := usage(t, s, qa)
	hit(t, s, qa, "mid-hit")
	if got := usage(t, s, qa); got != before {
		t.Errorf("an event inside the window was applied again: usage %d → %d", before, got)
	}
	hit(t, s, qa, "old-hit")
	if got := usage(t, s, qa); got != before+1 {
		t.Errorf("an event past the window (pruned) was not applied: usage %d → %d", before, got)
	}
}

// TestEventsOfOlderStore: a store whose events have no time (bucket
// events, written before events2) opens with every bucket as it was; its
// events are still deduplicated for a window after the first write that
// finds them, then pruned with their bucket.
func TestEventsOfOlderStore(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clk := newTestClock(t0)
	path := filepath.Join(t.TempDir(), "memex.db")
	s := newTestStoreAt(t, path, WithClock(clk.now))
	c, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p", EventID: "ev-c", Question: "how to feed the otter", Answer: "otter feed --fish"})
	if err != nil {
		t.Fatal(err)
	}
	vreq := core.ValidateRequest{ProjectID: "p", QAID: c.QAID, Result: "pass", SignalStrength: "strong", EventID: "ev-v"}
	v, err := s.RecordValidation(core.WithPrincipal(t.Context(), core.Principal{ID: "other"}), vreq)
	if err != nil {
		t.Fatal(err)
	}
	hit(t, s, c.QAID, "ev-h")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The file as an older memex wrote it: the same events, keyed without
	// their slot in the bucket events.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		old, err := tx.CreateBucket(bEventsV2)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bEvents).ForEach(func(k, v []byte) error { return old.Put(k[4:], v) }); err != nil {
			return err
		}
		return tx.DeleteBucket(bEvents)
	})
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	want := dumpBuckets(t, path)

	clk.add(time.Hour)
	s = newTestStoreAt(t, path, WithClock(clk.now))
	got := dumpBuckets(t, path)
	delete(got, string(bEvents))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the open changed the older store (-before +after):\n%s", diff)
	}
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "other"})
	if again, err := s.RecordValidation(ctx, vreq); err != nil || again.SuccessCount != v.SuccessCount {
		t.Fatalf("older validation event repeated: %+v, %v; want success %d", again, err, v.SuccessCount)
	}
	if again, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p", EventID: "ev-c", Question: "x", Answer: "y"}); err != nil || again != c {
		t.Fatalf("older candidate event repeated: %+v, %v; want %+v", again, err, c)
	}
	before := usage(t, s, c.QAID)
	clk.add(core.EventWindow - time.Minute)
	hit(t, s, c.QAID, "ev-h")
	if got := usage(t, s, c.QAID); got != before {
		t.Errorf("older hit event repeated inside the window: usage %d → %d", before, got)
	}
	if n := len(bucketKeys(t, path, bEventsV2)); n != 3 {
		t.Errorf("%d older events inside the window, want 3", n)
	}

	clk.add(time.Minute)
	hit(t, s, c.QAID, "ev-new")
	if _, names := schemaOf(t, path); names[string(bEventsV2)] {
		t.Errorf("the older events bucket is left a window after the first write")
	}
	if v := dumpBuckets(t, path)[string(bMeta)][string(keyEventsV2)]; v != "" {
		t.Errorf("meta %s left: %x", keyEventsV2, v)
	}
	hit(t, s, c.QAID, "ev-h")
	if got := usage(t, s, c.QAID); got != before+2 {
		t.Errorf("older hit event past the window: usage %d → %d, want +2 (ev-new, ev-h again)", before, got)
	}
}

// dumpBuckets reads every top-level bucket of the store file at path.
func dumpBuckets(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string]string{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			m := map[string]string{}
			out[string(name)] = m
			return b.ForEach(func(k, v []byte) error {
				m[string(k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeleteFrom: deleteFrom deletes from the first key at or after from
// (nil: the first key) while the predicate holds, at most limit keys, and
// counts them; pruneAudit keeps exactly the newest keep of a project.
func TestDeleteFrom(t *testing.T) {
	s := newTestStore(t)
	keys := func(b *bolt.Bucket) (out []string) {
		_ = b.ForEach(func(k, _ []byte) error { out = append(out, string(k)); return nil })
		return out
	}
	err := s.update(t.Context(), "test", func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("test"))
		if err != nil {
			return err
		}
		for _, k := range []string{"a1", "a2", "b\x001", "b\x002", "b\x003", "b\x004", "c1"} {
			if err := b.Put([]byte(k), nil); err != nil {
				return err
			}
		}
		under := func(k []byte) bool { return bytes.HasPrefix(k, []byte("b\x00")) }
		if n, err := deleteFrom(b, []byte("b\x00"), 10, under); err != nil || n != 4 {
			t.Errorf("deleted %d, %v; want 4", n, err)
		}
		if got := keys(b); !slices.Equal(got, []string{"a1", "a2", "c1"}) {
			t.Errorf("left %q", got)
		}
		if n, err := deleteFrom(b, nil, 1, func([]byte) bool { return true }); err != nil || n != 1 {
			t.Errorf("deleted %d, %v; want 1", n, err)
		}
		if got := keys(b); !slices.Equal(got, []string{"a2", "c1"}) {
			t.Errorf("left %q", got)
		}
		for i := range 6 {
			if err := b.Put(fmt.Appendf(nil, "p\x00%d", i), nil); err != nil {
				return err
			}
		}
		if err := pruneAudit(b, "p", 2); err != nil {
			return err
		}
		if got := keys(b); !slices.Equal(got, []string{"a2", "c1", "p\x004", "p\x005"}) {
			t.Errorf("after pruneAudit: %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
