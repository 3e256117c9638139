package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/evalset"
)

// runGen writes n synthetic QAs as JSONL ({qa_id, question, answer}) for
// `memex qa import`.
func runGen(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	n := fs.Int("n", 1000, "number of QAs")
	seed := fs.Uint64("seed", 1, "generator seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return writeSynthetic(out, *n, *seed)
}

func writeSynthetic(out io.Writer, n int, seed uint64) error {
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	syn := evalset.NewSynthetic(seed)
	for i := range n {
		r := syn.Record(i)
		if err := enc.Encode(map[string]string{"qa_id": r.ID, "question": r.Question, "answer": r.Answer}); err != nil {
			return err
		}
	}
	return w.Flush()
}

// runProcess times the memex binary as a process: `memex search` at each
// corpus size, and the overhead `memex run` adds to the example agent run
// directly (SPEC §9). It prints a markdown table.
func runProcess(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("process", flag.ContinueOnError)
	memex := fs.String("memex", "", "path to the memex binary (build it with go build -o)")
	sizes := fs.String("sizes", "1000,10000,100000", "corpus sizes")
	runs := fs.Int("runs", 100, "timed invocations per measurement")
	agent := fs.String("agent", "examples/agent/noop.sh", "the no-op agent for the run overhead (SPEC §9); examples/agent/agent.sh does more work when memory is injected")
	overheadAt := fs.Int("overhead-at", 100000, "corpus size at which to measure run overhead (0: skip)")
	keep := fs.String("dir", "", "work directory (default: a temporary one, removed)")
	kind := fs.String("queries", "prompt", "query style: prompt (~200 characters, like an agent prompt) or question (a short question)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *memex == "" {
		return errors.New("-memex is required (go build -o /tmp/memex ./cmd/memex)")
	}
	bin, err := filepath.Abs(*memex)
	if err != nil {
		return err
	}
	agentPath, err := filepath.Abs(*agent)
	if err != nil {
		return err
	}
	dir := *keep
	if dir == "" {
		if dir, err = os.MkdirTemp("", "memex-bench-"); err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
	}
	fmt.Fprintf(out, "| corpus | memex search p50 | p90 | p99 | store bytes | bytes/QA |\n|---:|---:|---:|---:|---:|---:|\n")
	var overheadStore string
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-sizes: %q is not a number", s)
		}
		store := filepath.Join(dir, fmt.Sprintf("memex-%d.db", n))
		if err := importCorpus(bin, store, dir, n); err != nil {
			return err
		}
		queries, err := syntheticQueries(*runs, uint64(n), *kind)
		if err != nil {
			return err
		}
		if err := warm(store); err != nil { // SPEC §9 measures with a warm page cache
			return err
		}
		lat, err := timeCmd(*runs, func(i int) *exec.Cmd {
			return exec.Command(bin, "search", "--store", "file://"+store, "--project", "bench", queries[i])
		})
		if err != nil {
			return err
		}
		st, _ := os.Stat(store)
		var size int64
		if st != nil {
			size = st.Size()
		}
		fmt.Fprintf(out, "| %d | %s | %s | %s | %d | %d |\n", n, ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 99)), size, size/int64(n))
		if n == *overheadAt {
			overheadStore = store
		}
	}
	if overheadStore == "" {
		return nil
	}
	queries, err := syntheticQueries(*runs, 7, *kind)
	if err != nil {
		return err
	}
	if err := warm(overheadStore); err != nil {
		return err
	}
	// Interleaved, so that drift in the machine's load hits both alike.
	direct, viaMemex, err := timePair(*runs, func(i int) *exec.Cmd {
		c := exec.Command(agentPath)
		c.Stdin = strings.NewReader(queries[i])
		return c
	}, func(i int) *exec.Cmd {
		return exec.Command(bin, "run", "--store", "file://"+overheadStore, "--project", "bench", "--backend", agentPath, queries[i])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n| at %d QAs | p50 | p90 | p99 |\n|---|---:|---:|---:|\n", *overheadAt)
	fmt.Fprintf(out, "| agent alone | %s | %s | %s |\n", ms(pct(direct, 50)), ms(pct(direct, 90)), ms(pct(direct, 99)))
	fmt.Fprintf(out, "| memex run + agent | %s | %s | %s |\n", ms(pct(viaMemex, 50)), ms(pct(viaMemex, 90)), ms(pct(viaMemex, 99)))
	fmt.Fprintf(out, "| **overhead (p50 difference)** | **%s** | | |\n", ms(pct(viaMemex, 50)-pct(direct, 50)))
	return nil
}

// warm reads the store file once so the timings start from a warm page
// cache (SPEC §9). Machines that reclaim cold page-cache pages on their own
// (DAMON reclaim on this project's VMs) still drop pages between runs.
func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	_, err = io.Copy(io.Discard, f)
	return err
}

func importCorpus(bin, store, dir string, n int) error {
	if _, err := os.Stat(store); err == nil {
		return nil // reuse a corpus built by an earlier run in -dir
	}
	path := filepath.Join(dir, fmt.Sprintf("corpus-%d.jsonl", n))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeSynthetic(f, n, 1); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	cmd := exec.Command(bin, "qa", "import", "--store", "file://"+store, "--project", "bench", path)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("import %d QAs: %w", n, err)
	}
	return nil
}

func syntheticQueries(n int, seed uint64, kind string) ([]string, error) {
	syn := evalset.NewSynthetic(seed + 1000)
	qs := make([]string, n)
	for i := range qs {
		switch kind {
		case "prompt":
			qs[i] = syn.Query()
		case "question":
			qs[i] = syn.Record(i).Question
		default:
			return nil, fmt.Errorf("-queries: %q is not prompt or question", kind)
		}
	}
	return qs, nil
}

// timePair runs the commands a and b alternately n times each (after
// warm-ups) and returns their sorted wall times.
func timePair(n int, a, b func(i int) *exec.Cmd) (ta, tb []time.Duration, err error) {
	for i := range 3 {
		for _, mk := range []func(int) *exec.Cmd{a, b} {
			if out, err := mk(i % n).CombinedOutput(); err != nil {
				return nil, nil, fmt.Errorf("warm-up: %v: %s", err, lastLine(out))
			}
		}
	}
	ta, tb = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := range n {
		for j, mk := range []func(int) *exec.Cmd{a, b} {
			d, err := timeOne(mk(i))
			if err != nil {
				return nil, nil, fmt.Errorf("run %d: %w", i, err)
			}
			if j == 0 {
				ta = append(ta, d)
			} else {
				tb = append(tb, d)
			}
		}
	}
	slices.Sort(ta)
	slices.Sort(tb)
	return ta, tb, nil
}

func timeOne(c *exec.Cmd) (time.Duration, error) {
	c.Stdout, c.Stderr = io.Discard, io.Discard
	start := time.Now()
	err := c.Run()
	return time.Since(start), err
}

// timeCmd runs the command n times (after 3 warm-up runs) and returns the
// sorted wall times.
func timeCmd(n int, mk func(i int) *exec.Cmd) ([]time.Duration, error) {
	for i := range 3 {
		if out, err := mk(i % n).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("warm-up: %v: %s", err, lastLine(out))
		}
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		d, err := timeOne(mk(i))
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i, err)
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	return lat, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, (len(sorted)*p+99)/100-1)
	return sorted[max(i, 0)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
