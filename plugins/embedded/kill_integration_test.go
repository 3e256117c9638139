//go:build integration

// The integration tier (docs/TESTING.md): processes killed with SIGKILL
// during an upgrade and a write load, and several processes sharing one
// store file.

package embedded

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// TestKilledCompactionLosesNothing kills a process compacting the store
// at several instants: the store then holds the same keys and values
// (compacted or not), and the next Compact completes.
func TestKilledCompactionLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	orig := filepath.Join(t.TempDir(), "orig.db")
	s := newTestStoreAt(t, orig)
	importInBatches(t, s, coretest.Corpus(3000, "p", 5))
	want, size := fileContents(t, orig), fileSize(t, orig)
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "memex.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd, out := helper(t, "compact", path)
	for out.Scan() {
	}
	waitHelper(t, cmd)
	full := time.Since(start)
	states := map[string]int{}
	const kills = 8
	for i := range kills {
		path := filepath.Join(t.TempDir(), "memex.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd, _ := helper(t, "compact", path)
		time.Sleep(full * time.Duration(i+1) / (kills + 1))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		_, staleErr := os.Stat(path + ".compact")
		switch compacted := fileSize(t, path) < size; {
		case compacted:
			states["compacted"]++
		case staleErr == nil:
			states["killed during the copy"]++
		default:
			states["as it was"]++
		}
		got := fileContents(t, path)
		if len(got) != len(want) {
			t.Errorf("kill %d: %d keys, want %d", i, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("kill %d: key %q differs", i, k)
			}
		}
		if _, err := newTestStoreAt(t, path).Compact(t.Context()); err != nil {
			t.Errorf("kill %d: the next Compact: %v", i, err)
		}
		if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
			t.Errorf("kill %d: a stale copy is left after the next Compact: %v", i, err)
		}
	}
	t.Logf("compaction in a child: %v; killed stores found %v", full, states)
	if states["killed during the copy"] == 0 {
		t.Errorf("no kill landed during the copy (%v): the test did not test it", states)
	}
}

// TestKilledUpgradeLosesNothing kills a process upgrading a schema 1
// store at several instants: the store then opens (as schema 1 untouched
// or upgraded: never in between), and the next open completes the upgrade
// with every record readable and searchable.
func TestKilledUpgradeLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	// 2,000 records upgraded 400 per transaction in the child: five
	// transactions, so kills land between and inside chunks.
	const n, chunk = 2_000, "400"
	recs := coretest.Corpus(n, "up", 7)
	orig := filepath.Join(t.TempDir(), "v1.db")
	writeV1Store(t, orig, recs)
	copyFile := func(dst string) {
		b, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// How long a whole upgrade takes in a child process.
	path := filepath.Join(t.TempDir(), "memex.db")
	copyFile(path)
	start := time.Now()
	cmd, out := helper(t, "open", path, chunk)
	for out.Scan() {
	}
	waitHelper(t, cmd)
	full := time.Since(start)
	if v, _ := schemaOf(t, path); v != "2" {
		t.Fatalf("schema after a complete upgrade %q", v)
	}
	states := map[string]int{}
	const kills = 6
	for i := range kills {
		path := filepath.Join(t.TempDir(), "memex.db")
		copyFile(path)
		cmd, _ := helper(t, "open", path, chunk)
		time.Sleep(full * time.Duration(i+1) / (kills + 1))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		v, names := schemaOf(t, path)
		switch {
		case v == "1" && names[string(v1Records)]:
			states["v1"]++
		case v == "2" && !names[string(v1Records)]:
			states["v2"]++
		default:
			t.Fatalf("kill %d: schema %q with buckets %v", i, v, names)
		}
		s := newTestStoreAt(t, path)
		for j := 0; j < n; j += 97 {
			if _, err := s.Get(t.Context(), "up", recs[j].QAID); err != nil {
				t.Fatalf("kill %d: record %s: %v", i, recs[j].QAID, err)
			}
		}
		st, err := s.Stats(t.Context(), "up")
		if err != nil || st.Total != n {
			t.Fatalf("kill %d: stats %+v, %v; want %d records", i, st, err, n)
		}
		for _, j := range []int{0, n / 2, n - 1} {
			ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "up", Query: recs[j].Question, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(fmt.Sprint(ms), recs[j].QAID) {
				t.Errorf("kill %d: search for %s's question misses it: %v", i, recs[j].QAID, ms)
			}
		}
		if v, _ := schemaOf(t, path); v != "2" {
			t.Errorf("kill %d: schema after reopening %q, want 2", i, v)
		}
	}
	t.Logf("full upgrade of %d records in a child: %v; killed stores found as %v", n, full, states)
	if states["v1"] == 0 {
		t.Errorf("no kill landed during the upgrade (%v): the test did not test it", states)
	}
}

func TestMultiProcessImportAndSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "memex.db")
	s := newTestStoreAt(t, path)
	const n = 2000
	stop := filepath.Join(dir, "stop")
	imp1, out1 := helper(t, "import", path, "proj-one", strconv.Itoa(n), "100")
	imp2, out2 := helper(t, "import", path, "proj-two", strconv.Itoa(n), "100")
	srch, out3 := helper(t, "search", path, "proj-one", stop)
	for _, out := range []*bufio.Scanner{out1, out2} {
		for out.Scan() {
			if !strings.HasPrefix(out.Text(), "ack ") {
				t.Log(out.Text())
			}
		}
	}
	waitHelper(t, imp1)
	waitHelper(t, imp2)
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var searches string
	for out3.Scan() {
		searches = out3.Text()
		t.Log(searches)
	}
	waitHelper(t, srch)
	t.Logf("searcher: %s", searches)

	for _, p := range []string{"proj-one", "proj-two"} {
		st, err := s.Stats(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Total != n {
			t.Errorf("%s: %d records, want %d", p, st.Total, n)
		}
		for _, i := range []int{0, n / 2, n - 1} {
			if _, err := s.Get(t.Context(), p, fmt.Sprintf("%s-%d", p, i)); err != nil {
				t.Errorf("Get %s-%d: %v", p, i, err)
			}
		}
	}
	ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "proj-two", Query: coretest.Queries(coretest.Corpus(10, "proj-two", 42), 1)[0]})
	if err != nil || len(ms) == 0 {
		t.Errorf("search after concurrent imports: %d matches, %v", len(ms), err)
	}
}

func TestKilledWriterLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	path := filepath.Join(t.TempDir(), "memex.db")
	if _, err := Open(path); err != nil {
		t.Fatal(err)
	}
	cmd, out := helper(t, "import", path, "proj-kill", "20000", "50")
	var acked []string
	for len(acked) < 5 && out.Scan() {
		if id, ok := strings.CutPrefix(out.Text(), "ack "); ok {
			acked = append(acked, id)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for out.Scan() { // acks printed before the kill landed
		if id, ok := strings.CutPrefix(out.Text(), "ack "); ok {
			acked = append(acked, id)
		}
	}
	_ = cmd.Wait()
	if len(acked) < 5 {
		t.Fatalf("helper acknowledged %d batches before dying: %s", len(acked), cmd.Stderr)
	}
	last, err := strconv.Atoi(strings.TrimPrefix(acked[len(acked)-1], "proj-kill-"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatalf("store does not open after the writer was killed: %v", err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	for i := 0; i <= last; i++ {
		if _, err := s.Get(t.Context(), "proj-kill", fmt.Sprintf("proj-kill-%d", i)); err != nil {
			t.Fatalf("acknowledged record proj-kill-%d (last ack %d): %v", i, last, err)
		}
	}
	// The store still takes writes and stays consistent.
	if _, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "proj-kill", Question: "after the crash", Answer: "still works"}); err != nil {
		t.Errorf("write after crash: %v", err)
	}
}
