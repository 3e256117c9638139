package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
)

const (
	// DefaultGrace is how long a cancelled process group gets between
	// SIGTERM and SIGKILL.
	DefaultGrace = 5 * time.Second
	// ExitTimeout is the exit code of a run stopped by its timeout (as
	// timeout(1) reports it).
	ExitTimeout = 124
	// drainDelay is how long stdout and stderr are still read after the
	// backend exits, when a process it left behind keeps them open.
	drainDelay = 2 * time.Second
)

// RunOptions configure one run.
type RunOptions struct {
	Prompt string
	// System is appended to the agent's system prompt with the backend's
	// SystemFlag; a backend without one gets it before Prompt on stdin.
	System string
	// Model is informational: Resolve puts the model on the command line.
	Model string
	// Dir is the working directory; "" means the current one.
	Dir string
	// Env is the backend's environment; nil means the current one.
	Env []string
	// Stdout receives the run rendered live (nil: nothing is rendered).
	Stdout io.Writer
	// Stderr receives the backend's stderr as is (nil: discarded).
	Stderr io.Writer
	// Timeout stops the backend after this long (0: no limit).
	Timeout time.Duration
	// OnEvent, when set, sees every event as it is parsed, in order, from
	// the goroutine that called Run.
	OnEvent func(core.Event)
	// Color renders with ANSI colours (JSON backends; text output is
	// copied through unchanged).
	Color bool
	// Grace is the time between SIGTERM and SIGKILL when the run is
	// cancelled or times out (0: DefaultGrace).
	Grace time.Duration
	// Now stamps events (nil: time.Now).
	Now func() time.Time
}

// RunResult is what a run produced.
type RunResult struct {
	// ExitCode is the backend's own exit code, 128+n when signal n ended
	// it, or ExitTimeout when Timeout stopped it.
	ExitCode  int
	Duration  time.Duration
	Events    []core.Event
	FinalText string
	// TimedOut reports that Timeout stopped the backend.
	TimedOut bool
}

// Run runs b with opts.Prompt on stdin (closed after it), renders its
// output to opts.Stdout as it comes, passes its stderr through, and returns
// its events and exit code. It returns an error, and no exit code, when the
// backend cannot start. When ctx is cancelled the backend's process group is
// stopped (SIGTERM, then SIGKILL after the grace period) and Run returns the
// result so far with ctx's error.
func Run(ctx context.Context, b Backend, opts RunOptions) (RunResult, error) {
	if len(b.Argv) == 0 {
		return RunResult{}, fmt.Errorf("agent: backend %q: %w: empty command", b.Name, ErrBadCommand)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return RunResult{}, fmt.Errorf("agent: backend %q: stdout pipe: %w", b.Name, err)
	}
	defer func() { _ = pr.Close() }()

	argv, prompt := b.Argv, opts.Prompt
	switch {
	case opts.System == "":
	case b.SystemFlag != "":
		argv = append(argv[:len(argv):len(argv)], b.SystemFlag, opts.System)
	default:
		prompt = opts.System + "\n" + prompt
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = opts.Dir, opts.Env
	cmd.Stdin = strings.NewReader(prompt)
	cmd.Stdout, cmd.Stderr = pw, opts.Stderr

	var (
		res RunResult
		p   = NewParser(b.Format)
		r   *Renderer
	)
	if opts.Stdout != nil && b.Format != FormatText {
		r = NewRenderer(opts.Stdout, opts.Color)
		p.delta = r.Delta
	}
	handle := func(evs []core.Event) {
		for _, e := range evs {
			e.Time = now()
			res.Events = append(res.Events, e)
			if opts.OnEvent != nil {
				opts.OnEvent(e)
			}
			if r != nil {
				r.Event(e)
			}
		}
	}
	read := func() {
		if b.Format == FormatText {
			copyText(pr, opts.Stdout, func(line []byte) { handle(p.Line(line)) })
		} else {
			lr := newLineReader(pr, MaxLineBytes)
			for {
				line, err := lr.next()
				if line != nil {
					handle(p.Line(line))
				}
				if err != nil {
					break
				}
			}
		}
		handle(p.Finish())
	}

	start := time.Now()
	sv, err := supervise(ctx, cmd, opts.Timeout, opts.Grace, func() { _ = pw.Close() }, read, func() { _ = pr.Close() })
	_ = pw.Close()
	if err != nil {
		return RunResult{}, fmt.Errorf("agent: backend %q: %w", b.Name, err)
	}
	res.Duration = time.Since(start)
	res.ExitCode, res.TimedOut = sv.code, sv.timedOut
	res.FinalText = finalText(res.Events)
	return res, sv.ctxErr
}

// RunVerify runs a --verify command line with sh -c in dir, its output
// passed through, and returns its exit code (128+n after signal n,
// ExitTimeout when timeout stopped it). It returns an error when the shell
// cannot start, or with the exit code when ctx was cancelled.
func RunVerify(ctx context.Context, command, dir string, stdout, stderr io.Writer, timeout time.Duration) (int, error) {
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stdout, stderr
	sv, err := supervise(ctx, cmd, timeout, 0, nil, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("agent: verify: %w", err)
	}
	return sv.code, sv.ctxErr
}

type supervised struct {
	code     int
	timedOut bool
	ctxErr   error // ctx's error when ctx (not the timeout) stopped the run
}

// supervise starts cmd in its own process group, calls started, then read
// (which consumes the output until EOF), and waits for the process. On
// timeout or cancel the group gets SIGTERM, then SIGKILL after grace. When
// the process has exited but its output stays open (a child it left behind),
// unblock is called after drainDelay so that read can return.
func supervise(ctx context.Context, cmd *exec.Cmd, timeout, grace time.Duration, started, read, unblock func()) (supervised, error) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	setGroup(cmd)
	cmd.WaitDelay = drainDelay
	if err := cmd.Start(); err != nil {
		if started != nil {
			started()
		}
		return supervised{}, fmt.Errorf("start: %w", err)
	}
	if started != nil {
		started()
	}

	runCtx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()

	exited := make(chan struct{}) // the process has been waited for
	readDone := make(chan struct{})
	allDone := make(chan struct{}) // exited and output read
	killed := make(chan bool, 1)
	go func() {
		k := false
		defer func() { killed <- k }()
		select {
		case <-allDone:
			return
		case <-runCtx.Done():
		}
		select {
		case <-allDone:
			return
		default:
		}
		k = true
		signalGroup(cmd, false)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-allDone:
		case <-t.C:
			signalGroup(cmd, true)
		}
	}()

	waitErr := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		close(exited)
		waitErr <- err
	}()
	if read != nil {
		go func() {
			select {
			case <-readDone:
				return
			case <-exited:
			}
			t := time.NewTimer(drainDelay)
			defer t.Stop()
			select {
			case <-readDone:
			case <-t.C:
				if unblock != nil {
					unblock()
				}
			}
		}()
		read()
	}
	close(readDone)
	err := <-waitErr
	close(allDone)
	cancel()
	wasKilled := <-killed

	if cmd.ProcessState == nil {
		return supervised{}, fmt.Errorf("wait: %w", err)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return supervised{}, fmt.Errorf("wait: %w", err)
	}
	sv := supervised{code: exitCode(cmd.ProcessState)}
	switch {
	case wasKilled && ctx.Err() != nil:
		sv.ctxErr = ctx.Err()
	case wasKilled:
		sv.code, sv.timedOut = ExitTimeout, true
	}
	return sv, nil
}

// copyText copies r to w chunk by chunk as it arrives (partial lines
// included) and calls line for each complete line, and for the last
// unterminated one. Lines longer than MaxLineBytes are cut.
func copyText(r io.Reader, w io.Writer, line func([]byte)) {
	buf := make([]byte, 32<<10)
	var cur []byte
	skipping := false // the current line overflowed; drop until newline
	for {
		n, err := r.Read(buf)
		chunk := buf[:n]
		if n > 0 && w != nil {
			_, _ = w.Write(chunk)
		}
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			part := chunk
			if i >= 0 {
				part = chunk[:i]
			}
			if !skipping {
				room := MaxLineBytes - len(cur)
				if len(part) > room {
					cur = append(cur, part[:room]...)
					skipping = true
				} else {
					cur = append(cur, part...)
				}
			}
			if i < 0 {
				break
			}
			line(cur)
			cur, skipping = cur[:0], false
			chunk = chunk[i+1:]
		}
		if err != nil {
			break
		}
	}
	if len(cur) > 0 {
		line(cur)
	}
}

// finalText is the last non-empty result text, else the last agent text.
func finalText(evs []core.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == core.EventResult && strings.TrimSpace(evs[i].Text) != "" {
			return evs[i].Text
		}
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == core.EventText && strings.TrimSpace(evs[i].Text) != "" {
			return evs[i].Text
		}
	}
	return ""
}
