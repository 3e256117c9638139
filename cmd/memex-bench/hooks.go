package main

import (
	"bytes"
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
)

// runHooks times `memex hook claude …` as the process Claude Code starts:
// the prompt hook (UserPromptSubmit: search, gatekeeper, block, turn state)
// at each corpus size on the embedded store, and the stop hook (Stop: read
// the turn from a transcript of -transcript-bytes, evaluate, record) at the
// last size. It prints a markdown table.
func runHooks(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hooks", flag.ContinueOnError)
	memex := fs.String("memex", "", "path to the memex binary (build it with go build -o)")
	sizes := fs.String("sizes", "1000,100000", "corpus sizes")
	runs := fs.Int("runs", 200, "timed invocations per measurement")
	transcriptBytes := fs.Int("transcript-bytes", 1<<20, "size of the Claude Code transcript the stop hook reads")
	keep := fs.String("dir", "", "work directory (default: a temporary one, removed; corpora in it are reused)")
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
	dir := *keep
	if dir == "" {
		if dir, err = os.MkdirTemp("", "memex-bench-hooks-"); err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	hook := func(store, event string, input any) (*exec.Cmd, error) {
		b, err := json.Marshal(input)
		if err != nil {
			return nil, err
		}
		c := exec.Command(bin, "hook", "claude", event, "--store", "file://"+store, "--project", "bench")
		c.Dir, c.Env, c.Stdin = dir, env, bytes.NewReader(b)
		return c, nil
	}
	// The process alone, on this machine now: memex started and stopped
	// by MEMEX_DISABLE=1 before it reads its input.
	var base, baseCPU []time.Duration
	for range *runs {
		c := exec.Command(bin, "hook", "claude", "UserPromptSubmit")
		c.Dir, c.Env, c.Stdin = dir, append(env, "MEMEX_DISABLE=1"), strings.NewReader("{}")
		d, err := timeOne(c)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		base, baseCPU = append(base, d), append(baseCPU, cpuTime(c))
	}
	slices.Sort(base)
	slices.Sort(baseCPU)
	fmt.Fprintf(out, "| corpus | prompt hook p50 | p90 | p99 | CPU p50 (user+sys) | turns injected |\n|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(out, "| (process start and exit only, MEMEX_DISABLE=1) | %s | %s | %s | %s | |\n", ms(pct(base, 50)), ms(pct(base, 90)), ms(pct(base, 99)), ms(pct(baseCPU, 50)))
	var last string
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-sizes: %q is not a number", s)
		}
		store := filepath.Join(dir, fmt.Sprintf("memex-%d.db", n))
		if err := importCorpus(bin, store, dir, n); err != nil {
			return err
		}
		if err := warm(store); err != nil {
			return err
		}
		queries, err := syntheticQueries(*runs, uint64(n), "prompt")
		if err != nil {
			return err
		}
		injected := 0
		var lat, cpu []time.Duration
		for i := -3; i < *runs; i++ { // three warm-up runs
			q := queries[(i+*runs)%*runs]
			c, err := hook(store, "UserPromptSubmit", map[string]any{
				"session_id": fmt.Sprintf("bench-%d-%d", n, i), "transcript_path": "", "cwd": dir,
				"permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": q,
			})
			if err != nil {
				return err
			}
			var stdout bytes.Buffer
			c.Stdout = &stdout
			start := time.Now()
			if err := c.Run(); err != nil {
				return fmt.Errorf("prompt hook: %w", err)
			}
			d := time.Since(start)
			if i < 0 {
				continue
			}
			lat, cpu = append(lat, d), append(cpu, cpuTime(c))
			if stdout.Len() > 0 {
				injected++
			}
		}
		slices.Sort(lat)
		slices.Sort(cpu)
		fmt.Fprintf(out, "| %d | %s | %s | %s | %s | %d of %d |\n", n, ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 99)), ms(pct(cpu, 50)), injected, *runs)
		last = store
	}
	if last == "" {
		return nil
	}

	// The stop hook: each run is a turn whose prompt hook ran first
	// (untimed), then Stop with a transcript of transcriptBytes.
	transcript := filepath.Join(dir, "transcript.jsonl")
	if err := writeBenchTranscript(transcript, *transcriptBytes); err != nil {
		return err
	}
	st, err := os.Stat(transcript)
	if err != nil {
		return err
	}
	queries, err := syntheticQueries(*runs, 99, "prompt")
	if err != nil {
		return err
	}
	var stops, stopCPU []time.Duration
	for i := range *runs {
		session := fmt.Sprintf("stop-%d", i)
		c, err := hook(last, "UserPromptSubmit", map[string]any{"session_id": session, "cwd": dir, "hook_event_name": "UserPromptSubmit", "prompt": queries[i]})
		if err != nil {
			return err
		}
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("prompt hook: %v: %s", err, lastLine(out))
		}
		c, err = hook(last, "Stop", map[string]any{"session_id": session, "transcript_path": transcript, "cwd": dir, "hook_event_name": "Stop", "stop_hook_active": false})
		if err != nil {
			return err
		}
		d, err := timeOne(c)
		if err != nil {
			return fmt.Errorf("stop hook: %w", err)
		}
		stops, stopCPU = append(stops, d), append(stopCPU, cpuTime(c))
	}
	slices.Sort(stops)
	slices.Sort(stopCPU)
	fmt.Fprintf(out, "\n| stop hook, %.1f MB transcript, at the last corpus | p50 | p90 | p99 | CPU p50 (user+sys) |\n|---|---:|---:|---:|---:|\n", float64(st.Size())/(1<<20))
	fmt.Fprintf(out, "| evaluate + record | %s | %s | %s | %s |\n", ms(pct(stops, 50)), ms(pct(stops, 90)), ms(pct(stops, 99)), ms(pct(stopCPU, 50)))
	if log, err := os.ReadFile(filepath.Join(dir, "data", "memex", "hooks.log")); err == nil && len(log) > 0 {
		fmt.Fprintf(out, "\nhooks.log (errors during the benchmark):\n%s", log)
	}
	return nil
}

// cpuTime is the user and system CPU time of a finished command: the work
// memex did, whatever the machine's load did to the wall time.
func cpuTime(c *exec.Cmd) time.Duration {
	if c.ProcessState == nil {
		return 0
	}
	return c.ProcessState.UserTime() + c.ProcessState.SystemTime()
}

// writeBenchTranscript writes a Claude Code JSONL transcript of about size
// bytes: earlier turns (prompt, Bash calls with ~1 KB outputs, answers),
// then the turn the stop hook evaluates (an edit, a passing go test, the
// answer).
func writeBenchTranscript(path string, size int) error {
	var b bytes.Buffer
	line := func(v any) {
		j, _ := json.Marshal(v)
		b.Write(j)
		b.WriteByte('\n')
	}
	user := func(content any) map[string]any {
		return map[string]any{"type": "user", "isSidechain": false, "sessionId": "bench", "cwd": "/w", "version": "2.0.14",
			"message": map[string]any{"role": "user", "content": content}, "uuid": "u", "timestamp": "2026-11-20T10:00:00.000Z"}
	}
	assistant := func(blocks ...any) map[string]any {
		return map[string]any{"type": "assistant", "isSidechain": false, "sessionId": "bench", "cwd": "/w", "version": "2.0.14",
			"message": map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks},
			"uuid":    "a", "timestamp": "2026-11-20T10:00:01.000Z"}
	}
	output := strings.Repeat("=== RUN   TestCache\n--- PASS: TestCache (0.00s)\n", 20)
	for t := 0; b.Len() < size-4096; t++ {
		line(user(fmt.Sprintf("earlier task %d: explain the retry policy of the client", t)))
		for k := 0; k < 3 && b.Len() < size-4096; k++ {
			id := fmt.Sprintf("toolu_%d_%d", t, k)
			line(assistant(map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "go test ./client/..."}}))
			line(user([]any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": output, "is_error": false}}))
		}
		line(assistant(map[string]any{"type": "text", "text": "The client retries idempotent requests three times with exponential backoff."}))
	}
	line(user("fix the data race in the cache map"))
	line(assistant(map[string]any{"type": "tool_use", "id": "toolu_edit", "name": "Edit", "input": map[string]any{"file_path": "/w/cache.go", "old_string": "a", "new_string": "b"}}))
	line(user([]any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_edit", "content": "The file /w/cache.go has been updated."}}))
	line(assistant(map[string]any{"type": "tool_use", "id": "toolu_test", "name": "Bash", "input": map[string]any{"command": "go test -race ./cache/..."}}))
	line(user([]any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_test", "content": "ok  \texample.com/app/cache\t1.2s", "is_error": false}}))
	line(assistant(map[string]any{"type": "text", "text": "Guarded the map with a sync.Mutex; go test -race ./cache/... passes."}))
	return os.WriteFile(path, b.Bytes(), 0o600)
}
