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
//	compact <path>: compact the store, print "compacted <bool>";
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
	case "compact":
		s, err := Open(args[1], wait)
		if err != nil {
			t.Fatal(err)
		}
		did, err := s.Compact(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("compacted", did)
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
