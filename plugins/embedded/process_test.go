package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// helperEnv selects the role of a re-executed test binary.
const helperEnv = "MEMEX_EMBEDDED_HELPER"

// TestHelperProcess is not a test: it is the body of the child processes
// the multi-process tests start (os.Args[0] -test.run=TestHelperProcess).
// Roles:
//
//	import <path> <project> <n> <batch>: import Corpus(n, project) in batches,
//	    printing "ack <last id>" after each acknowledged batch;
//	search <path> <project> <stopfile>: search until stopfile exists, then
//	    print "searches <n>";
//	open <path>: open (upgrading an older schema), print "opened";
//	hold <path>: open in keep-open mode, print "ready", wait for stdin EOF.
func TestHelperProcess(t *testing.T) {
	args := strings.Fields(os.Getenv(helperEnv))
	if len(args) == 0 {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	// A generous lock timeout: these children prove that processes take
	// turns without errors or lost writes; on a loaded CI machine under
	// -race one import batch can take seconds. TestLockedStore covers the
	// timeout itself.
	wait := WithLockTimeout(time.Minute)
	switch args[0] {
	case "import":
		s, err := Open(args[1], wait)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(args[3])
		batch, _ := strconv.Atoi(args[4])
		recs := coretest.Corpus(n, args[2], 42)
		for i := 0; i < n; i += batch {
			b := recs[i:min(i+batch, n)]
			if err := s.Import(ctx, b); err != nil {
				t.Fatalf("import batch at %d: %v", i, err)
			}
			fmt.Printf("ack %s\n", b[len(b)-1].QAID)
		}
	case "search":
		s, err := Open(args[1], wait)
		if err != nil {
			t.Fatal(err)
		}
		queries := coretest.Queries(coretest.Corpus(200, args[2], 42), 20)
		n := 0
		for {
			if _, err := os.Stat(args[3]); err == nil {
				break
			}
			if _, err := s.Search(ctx, core.SearchRequest{ProjectID: args[2], Query: queries[n%len(queries)]}); err != nil {
				t.Fatalf("search %d: %v", n, err)
			}
			n++
		}
		fmt.Printf("searches %d\n", n)
	case "open":
		if len(args) > 2 { // a smaller upgrade chunk, so a small store upgrades in several transactions
			upgradeChunk, _ = strconv.Atoi(args[2])
		}
		s, err := Open(args[1], wait)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		fmt.Println("opened")
	case "hold":
		s, err := Open(args[1], WithKeepOpen())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = s.Close()
	default:
		t.Fatalf("unknown helper role %q", args[0])
	}
}

// helper starts a child process in role args.
func helper(t *testing.T, args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join(args, " "))
	cmd.Stderr = &strings.Builder{}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The child reads stdin until EOF: it exits when the parent does.
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, bufio.NewScanner(out)
}

func waitHelper(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Wait(); err != nil {
		t.Errorf("helper %v: %v\n%s", cmd.Env[len(cmd.Env)-1], err, cmd.Stderr)
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

func TestLockedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	path := filepath.Join(t.TempDir(), "memex.db")
	before := newTestStoreAt(t, path, WithLockTimeout(300*time.Millisecond))
	cmd, out := helper(t, "hold", path)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("holder did not start: %q %s", out.Text(), cmd.Stderr)
	}
	check := func(name string, err error, took time.Duration) {
		t.Helper()
		if !errors.Is(err, core.ErrUnavailable) {
			t.Errorf("%s: err = %v, want ErrUnavailable", name, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "locked by another process") || !strings.Contains(err.Error(), path)) {
			t.Errorf("%s: error %q should say the store is locked and name %s", name, err, path)
		}
		if took > 2*time.Second {
			t.Errorf("%s: took %v, want within the 300ms lock timeout", name, took)
		}
	}
	start := time.Now()
	_, err := Open(path, WithLockTimeout(300*time.Millisecond))
	check("Open", err, time.Since(start))
	start = time.Now()
	_, err = before.Search(t.Context(), core.SearchRequest{ProjectID: "p", Query: "x"})
	check("Search", err, time.Since(start))
	start = time.Now()
	_, err = before.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p", Question: "q", Answer: "a"})
	check("RecordCandidate", err, time.Since(start))

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := before.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p", Question: "q", Answer: "a"}); err != nil {
		t.Errorf("after the holder exited: %v", err)
	}
}

func newTestStoreAt(tb testing.TB, path string, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(path, opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
