//go:build unix

package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/memex-dev/memex/core"
)

// writeScript writes an executable sh script named name into dir.
func writeScript(tb testing.TB, dir, name, body string) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		tb.Fatal(err)
	}
	return path
}

func shBackend(script string) Backend {
	return Backend{Name: "sh", Argv: []string{"sh", "-c", script}, Format: FormatText}
}

// syncBuffer is a bytes.Buffer safe for the writes of exec's copy goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// nasty is a prompt that any argument escaping or shell would alter.
const nasty = "Fix the bug.\n\n<memory>\n[QA_REF qa-1] use `go test ./...` & check \"$HOME\" \\n 'quotes' $(rm -rf /) 中文 ü\n</memory>\n\ttrailing  "

// TestRunFakeClaude runs a fake claude that checks its arguments, saves its
// stdin and prints a recorded stream-json transcript.
func TestRunFakeClaude(t *testing.T) {
	dir := t.TempDir()
	transcript, err := filepath.Abs(filepath.Join("testdata", "claude", "coding_task.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	writeScript(t, dir, "claude", `
cat > "$MEMEX_TEST_DIR/stdin"
printf '%s\n' "$@" > "$MEMEX_TEST_DIR/args"
pwd > "$MEMEX_TEST_DIR/pwd"
while IFS= read -r line; do printf '%s\n' "$line"; done < "$MEMEX_TEST_TRANSCRIPT"
echo "claude: note on stderr" >&2
`)
	b, err := Resolve("claude", "sonnet", nil, func(name string) (string, error) { return filepath.Join(dir, name), nil })
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	var stdout, stderr syncBuffer
	var seen []core.Event
	res, err := Run(context.Background(), b, RunOptions{
		Prompt:  nasty,
		Dir:     work,
		Env:     append(os.Environ(), "MEMEX_TEST_DIR="+dir, "MEMEX_TEST_TRANSCRIPT="+transcript),
		Stdout:  &stdout,
		Stderr:  &stderr,
		OnEvent: func(e core.Event) { seen = append(seen, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Errorf("exit code %d", res.ExitCode)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "stdin")); string(got) != nasty {
		t.Errorf("stdin = %q, want the prompt byte for byte", got)
	}
	wantArgs := "-p\n--output-format\nstream-json\n--verbose\n--model\nsonnet\n"
	if got, _ := os.ReadFile(filepath.Join(dir, "args")); string(got) != wantArgs {
		t.Errorf("args = %q, want %q", got, wantArgs)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "pwd")); strings.TrimSpace(string(got)) != work {
		t.Errorf("ran in %q, want %q", got, work)
	}
	want := parseFile(t, FormatClaude, transcript)
	if diff := cmp.Diff(want, res.Events, cmpopts.IgnoreFields(core.Event{}, "Time")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(res.Events, seen); diff != "" {
		t.Errorf("OnEvent saw (-events +seen):\n%s", diff)
	}
	for _, e := range res.Events {
		if e.Time.IsZero() {
			t.Fatalf("event %d has no time", e.Seq)
		}
	}
	if !strings.HasPrefix(res.FinalText, "Fixed: `Discount` now rounds half up") {
		t.Errorf("final text = %q", res.FinalText)
	}
	golden, _ := os.ReadFile(filepath.Join("testdata", "render", "claude_coding_task.txt"))
	if stdout.String() != string(golden) {
		t.Errorf("rendered stdout differs from testdata/render/claude_coding_task.txt:\n%s", stdout.String())
	}
	if stderr.String() != "claude: note on stderr\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// TestRunFakeGemini checks that gemini's streamed text is rendered once.
func TestRunFakeGemini(t *testing.T) {
	transcript, _ := filepath.Abs(filepath.Join("testdata", "gemini", "coding_task.jsonl"))
	b := Backend{Name: "gemini", Argv: []string{"sh", "-c", `cat >/dev/null; cat "$0"`, transcript}, Format: FormatGemini}
	var stdout bytes.Buffer
	res, err := Run(context.Background(), b, RunOptions{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	golden, _ := os.ReadFile(filepath.Join("testdata", "render", "gemini_coding_task.txt"))
	if stdout.String() != string(golden) {
		t.Errorf("rendered stdout differs from testdata/render/gemini_coding_task.txt:\n%s", stdout.String())
	}
	if want := "`slug` now strips accents (`Crème Brûlée` → `creme-brulee`). The slug tests pass."; res.FinalText != want {
		t.Errorf("final text = %q", res.FinalText)
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"success", "exit 0", 0},
		{"own code", "exit 3", 3},
		{"high code", "exit 255", 255},
		{"killed", "kill -KILL $$", 128 + int(syscall.SIGKILL)},
		{"terminated", "kill -TERM $$", 128 + int(syscall.SIGTERM)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), shBackend(tt.script), RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.want || res.TimedOut {
				t.Errorf("exit code %d (timed out %v), want %d", res.ExitCode, res.TimedOut, tt.want)
			}
		})
	}
}

func TestRunText(t *testing.T) {
	t.Run("stdout passes through unchanged", func(t *testing.T) {
		script := `printf 'one\n\033[1mbold\033[0m\r\n\n\377 partial'; printf ' end'`
		var stdout bytes.Buffer
		res, err := Run(context.Background(), shBackend(script), RunOptions{Stdout: &stdout})
		if err != nil {
			t.Fatal(err)
		}
		if want := "one\n\x1b[1mbold\x1b[0m\r\n\n\xff partial end"; stdout.String() != want {
			t.Errorf("stdout = %q, want %q", stdout.String(), want)
		}
		want := []core.EventKind{core.EventText, core.EventText, core.EventText, core.EventResult}
		if diff := cmp.Diff(want, kinds(res.Events)); diff != "" {
			t.Errorf("kinds (-want +got):\n%s", diff)
		}
		if res.FinalText != "one\n\x1b[1mbold\x1b[0m\n\n\xff partial end" {
			t.Errorf("final text = %q", res.FinalText)
		}
	})
	t.Run("partial lines are not held back", func(t *testing.T) {
		first := make(chan string, 1)
		w := writerFunc(func(p []byte) (int, error) {
			select {
			case first <- string(p):
			default:
			}
			return len(p), nil
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = Run(context.Background(), shBackend(`printf 'working...'; sleep 3; echo done`), RunOptions{Stdout: w})
		}()
		select {
		case got := <-first:
			if got != "working..." {
				t.Errorf("first write = %q", got)
			}
		case <-time.After(2 * time.Second):
			t.Error("the partial line was not written before the program went on")
		}
		<-done
	})
	t.Run("stderr passes through, apart from stdout", func(t *testing.T) {
		var stdout, stderr syncBuffer
		_, err := Run(context.Background(), shBackend(`echo out; echo err >&2`), RunOptions{Stdout: &stdout, Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		if stdout.String() != "out\n" || stderr.String() != "err\n" {
			t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
		}
	})
	t.Run("env and dir", func(t *testing.T) {
		dir := t.TempDir()
		res, err := Run(context.Background(), shBackend(`echo "$(pwd) $MEMEX_X"`), RunOptions{Dir: dir, Env: []string{"MEMEX_X=42", "PATH=" + os.Getenv("PATH")}})
		if err != nil {
			t.Fatal(err)
		}
		if res.FinalText != dir+" 42" {
			t.Errorf("final text = %q", res.FinalText)
		}
	})
	t.Run("large prompt the program does not read", func(t *testing.T) {
		res, err := Run(context.Background(), shBackend("exit 0"), RunOptions{Prompt: strings.Repeat("x", 4<<20), Timeout: 10 * time.Second})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exit %d, err %v", res.ExitCode, err)
		}
	})
	t.Run("large prompt read whole", func(t *testing.T) {
		res, err := Run(context.Background(), shBackend("wc -c"), RunOptions{Prompt: strings.Repeat("x", 4<<20)})
		if err != nil || strings.TrimSpace(res.FinalText) != strconv.Itoa(4<<20) {
			t.Fatalf("final text %q, err %v", res.FinalText, err)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestRunStartFailure(t *testing.T) {
	_, err := Run(context.Background(), Backend{Name: "ghost", Argv: []string{filepath.Join(t.TempDir(), "ghost")}}, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `backend "ghost"`) {
		t.Fatalf("err = %v, want a start error naming the backend", err)
	}
	if _, err := Run(context.Background(), Backend{Name: "empty"}, RunOptions{}); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("empty argv: err = %v", err)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// waitDead reports whether process pid is gone within limit (the kernel
// reaps a killed process's children asynchronously).
func waitDead(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func readPID(tb testing.TB, path string) int {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// cancelOn returns a context and an OnEvent that cancels it when the
// backend prints line: the test stops the run once the backend is ready,
// whatever the machine's load, instead of after a guessed delay.
func cancelOn(t *testing.T, line string) (context.Context, func(core.Event), *time.Time) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	var at time.Time
	return ctx, func(e core.Event) {
		if strings.TrimSpace(e.Text) == line && at.IsZero() {
			at = time.Now()
			cancel()
		}
	}, &at
}

func TestRunStop(t *testing.T) {
	// The child sleeps 30 s: a run that waited for it would take that long.
	const childLife = 30 * time.Second
	t.Run("timeout kills the process group", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		start := time.Now()
		// The timeout is wall-clock time, so it is long enough for sh to
		// start on a loaded machine; the check is what the timeout does.
		res, err := Run(t.Context(), shBackend(`sleep 30 & echo $! > `+pidFile+`; echo started; wait`), RunOptions{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != ExitTimeout || !res.TimedOut {
			t.Errorf("exit %d timed out %v, want %d", res.ExitCode, res.TimedOut, ExitTimeout)
		}
		if d := time.Since(start); d >= childLife/2 {
			t.Errorf("took %v: the run waited for the backend's child", d)
		}
		if res.FinalText != "started" {
			t.Errorf("output before the timeout lost: %q", res.FinalText)
		}
		pid := readPID(t, pidFile)
		if !waitDead(pid, 10*time.Second) {
			t.Errorf("child %d of the backend survived the timeout", pid)
		}
	})
	t.Run("SIGKILL after the grace period", func(t *testing.T) {
		ctx, onEvent, cancelled := cancelOn(t, "ready")
		const grace = 300 * time.Millisecond
		res, err := Run(ctx, shBackend(`trap '' TERM; echo ready; while :; do sleep 0.05; done`),
			RunOptions{Grace: grace, OnEvent: onEvent})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if res.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d, want %d: a backend that ignores SIGTERM is killed", res.ExitCode, 128+int(syscall.SIGKILL))
		}
		if d := time.Since(*cancelled); d < grace || d >= childLife/2 {
			t.Errorf("killed %v after the cancel, want the %v grace period", d, grace)
		}
	})
	t.Run("cancel returns the signal exit and ctx error", func(t *testing.T) {
		ctx, onEvent, _ := cancelOn(t, "hi")
		res, err := Run(ctx, shBackend(`echo hi; sleep 30`), RunOptions{OnEvent: onEvent})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if res.ExitCode != 128+int(syscall.SIGTERM) || res.TimedOut {
			t.Errorf("exit %d timed out %v, want %d", res.ExitCode, res.TimedOut, 128+int(syscall.SIGTERM))
		}
		if res.FinalText != "hi" {
			t.Errorf("final text = %q", res.FinalText)
		}
	})
	t.Run("a child holding stdout does not block the run", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		start := time.Now()
		res, err := Run(t.Context(), shBackend(`sleep 30 & echo $! > `+pidFile+`; echo bye`), RunOptions{})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exit %d err %v", res.ExitCode, err)
		}
		readPID(t, pidFile)
		if d := time.Since(start); d >= childLife/2 {
			t.Errorf("took %v: the run waited for the child holding its stdout", d)
		}
		if res.FinalText != "bye" {
			t.Errorf("final text = %q", res.FinalText)
		}
	})
}

func TestRunVerify(t *testing.T) {
	tests := []struct {
		name    string
		cmd     string
		timeout time.Duration
		code    int
		out     string
	}{
		{"pass", "echo ok", 0, 0, "ok\n"},
		{"fail", "echo no; exit 1", 0, 1, "no\n"},
		{"shell syntax", "true && test -d . | cat", 0, 0, ""},
		{"timeout", "sleep 30", 200 * time.Millisecond, ExitTimeout, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			code, err := RunVerify(context.Background(), tt.cmd, t.TempDir(), &out, &out, tt.timeout)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || out.String() != tt.out {
				t.Errorf("code %d out %q, want %d %q", code, out.String(), tt.code, tt.out)
			}
		})
	}
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		var out bytes.Buffer
		if _, err := RunVerify(context.Background(), "pwd", dir, &out, nil, 0); err != nil || strings.TrimSpace(out.String()) != dir {
			t.Errorf("pwd = %q, err %v", out.String(), err)
		}
	})
	t.Run("missing dir is an error", func(t *testing.T) {
		if _, err := RunVerify(context.Background(), "true", filepath.Join(t.TempDir(), "nope"), nil, nil, 0); err == nil {
			t.Error("no error")
		}
	})
}
