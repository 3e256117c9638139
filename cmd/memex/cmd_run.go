package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/memex-dev/memex/agent"
	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/extract/redact"
	"github.com/memex-dev/memex/gatekeeper"
)

const runExamples = `  memex run "why does go test -race fail with a data race on the cache map?"
  memex run --backend codex --verify 'go test ./...' "fix the failing test"
  memex run --backend ./my-agent.sh --prompt-file task.md
  echo "explain the retry policy" | memex run --stdin --explain
  memex run --dry-run "how do I add a column with a default?"   # show the prompt, run nothing`

func cmdRun(ctx context.Context, a *app, args []string) error {
	began := time.Now()
	fs, g := a.newFlagSet("run", `run [flags] "query"   (or --prompt-file F, or --stdin)`, runExamples)
	backend := fs.String("backend", "", "agent backend: claude, codex, gemini or a command (default claude)")
	model := fs.String("model", "", "model passed to the backend")
	verify := fs.String("verify", "", "command run after the agent (via sh -c); the run passes iff both exit 0 (strong evidence)")
	noMemory := fs.Bool("no-memory", false, "run without memory: no search, no records")
	dryRun := fs.Bool("dry-run", false, "print the merged prompt and the gatekeeper decision; run nothing")
	explain := fs.Bool("explain", false, "print the task grade, gatekeeper reasons and draws, and the evaluation to stderr")
	events := fs.String("events", "", "write the run's events as JSONL to this file (redacted)")
	timeout := fs.Duration("timeout", 0, "stop the agent after this long (0: no limit)")
	promptFile := fs.String("prompt-file", "", "read the query from this file")
	useStdin := fs.Bool("stdin", false, "read the query from stdin")
	seed := fs.Uint64("seed", 0, "seed the gatekeeper's probation draw, for reproducible runs (0: random)")
	session := fs.String("session", "", "the conversation this run belongs to: its notes are recalled and the run is noted in it (default: MEMEX_SESSION; docs/SCOPES.md)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	s, err := a.setup(g)
	if err != nil {
		return err
	}
	cfg := s.cfg
	flagSet := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { flagSet[f.Name] = true })
	if flagSet["backend"] {
		cfg.Backend = *backend
	}
	if flagSet["model"] {
		cfg.Model = *model
	}
	if flagSet["verify"] {
		cfg.Verify = *verify
	}
	if flagSet["events"] {
		cfg.Events = *events
	}
	if flagSet["timeout"] {
		cfg.Timeout = *timeout
	}

	query, err := a.readQuery(pos, *promptFile, *useStdin)
	if err != nil {
		return err
	}

	var be agent.Backend
	if !*dryRun {
		if be, err = agent.Resolve(cfg.Backend, cfg.Model, nil, nil); err != nil {
			return err // names the backend and --backend
		}
	} else if b, err := agent.Resolve(cfg.Backend, cfg.Model, nil, func(s string) (string, error) { return s, nil }); err == nil {
		be = b // what would run: whether it takes a system prompt
	}

	red := redact.New()
	runID := engine.NewID("run")
	var ev *eventsFile
	if cfg.Events != "" && !*dryRun {
		if ev, err = openEvents(cfg.Events, runID, red); err != nil {
			return err
		}
		defer func() {
			if cerr := ev.close(); cerr != nil {
				fmt.Fprintf(a.stderr, "memex: %v\n", cerr)
			}
		}()
	}

	memoryOn := cfg.Engine.Enabled && !*noMemory
	if memoryOn {
		if err := a.openStore(ctx, s); err != nil {
			// Memory fails open: report and run without it.
			fmt.Fprintf(a.stderr, "memex: memory unavailable, running without it: %v\n", err)
			ev.write("memory.error", map[string]any{"stage": "open", "error": err.Error()})
		}
		defer func() { _ = s.close() }()
		if !*dryRun {
			a.flushOutbox(ctx, s.store, cfg.Engine.MemoryTimeout, ev) // cmd_outbox.go
		}
	}

	hook := func(_ context.Context, se engine.StageEvent) {
		data := map[string]any{"data": se.Data}
		if se.Err != nil {
			data["error"] = se.Err.Error()
		}
		ev.write(string(se.Stage), data)
	}
	opts := []engine.Option{engine.WithRedactor(red), engine.WithHook(hook)}
	if *seed != 0 {
		opts = append(opts, engine.WithRand(rand.New(rand.NewPCG(*seed, *seed))))
	}
	conversation := cmp.Or(*session, cfg.Scopes.Session)
	notes := a.runNotes(s, memoryOn)
	if notes != nil {
		opts = append(opts, engine.WithNotes(a.noteRecaller(s, notes, conversation)))
	}
	store, err := withSemantic(s.store, s.storeURL, cfg.Semantic, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(a.stderr, "memex: semantic search off: %v\n", err)
		store = s.store
	}
	eng := engine.New(store, cfg.Engine, opts...)
	ev.write("run.start", map[string]any{
		"project_id": s.project, "backend": cfg.Backend, "argv": be.Argv, "model": cfg.Model,
		"verify": cfg.Verify, "memory": memoryOn, "query": query,
	})

	preStart := time.Now()
	pre, err := eng.Pre(ctx, engine.Task{ProjectID: s.project, Query: query, RunID: runID, NoMemory: *noMemory, SystemPrompt: be.SystemFlag != ""})
	if err != nil {
		return err
	}
	if pre.MemoryErr != nil {
		fmt.Fprintf(a.stderr, "memex: memory unavailable, running without it: %v\n", pre.MemoryErr)
	}
	if *explain || *dryRun {
		w := a.stderr
		if *dryRun {
			w = a.stdout
		}
		printDecision(w, pre)
	}
	if *dryRun {
		if pre.System != "" {
			fmt.Fprintf(a.stdout, "--- system prompt (%s) ---\n%s\n", be.SystemFlag, pre.System)
		}
		fmt.Fprintf(a.stdout, "--- merged prompt ---\n%s\n", pre.Prompt)
		return nil
	}

	start := time.Now()
	tm := runTimings{setup: preStart.Sub(began), pre: start.Sub(preStart), search: pre.SearchDuration}
	res, runErr := agent.Run(ctx, be, agent.RunOptions{
		Prompt:  pre.Prompt,
		System:  pre.System,
		Dir:     s.cwd,
		Env:     a.runEnv(s, conversation, runID),
		Stdout:  a.stdout,
		Stderr:  a.stderr,
		Timeout: cfg.Timeout,
		OnEvent: func(e core.Event) { ev.write("agent.event", e) },
	})
	if runErr != nil {
		ev.write("run.end", map[string]any{"error": runErr.Error(), "duration_ms": time.Since(start).Milliseconds()})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("--backend %s: %w", cfg.Backend, runErr)
	}

	out := gatekeeper.Outcome{ExitCode: res.ExitCode, Duration: res.Duration, Events: res.Events}
	if cfg.Verify != "" && ctx.Err() == nil {
		code := a.runVerify(ctx, cfg.Verify, s.cwd)
		out.Verify = &gatekeeper.VerifyResult{Command: cfg.Verify, ExitCode: code}
		ev.write("verify", out.Verify)
	}
	if ctx.Err() != nil {
		ev.write("run.end", map[string]any{"exit_code": res.ExitCode, "canceled": true})
		return ctx.Err()
	}

	// Post writes must not be cut short by a Ctrl-C after the agent ended.
	tm.agent = time.Since(start)
	postStart := time.Now()
	post, err := eng.Post(context.WithoutCancel(ctx), engine.PostInput{Pre: pre, Outcome: out})
	tm.post = time.Since(postStart)
	if err != nil {
		fmt.Fprintf(a.stderr, "memex: post: %v\n", err)
	}
	for _, e := range post.Errors {
		fmt.Fprintf(a.stderr, "memex: memory: %v\n", e)
	}
	if err := a.noteRun(context.WithoutCancel(ctx), s, notes, conversation, pre, string(post.Evaluation.Result)); err != nil {
		fmt.Fprintf(a.stderr, "memex: memory: conversation note: %v\n", err)
	}
	if *explain {
		printEvaluation(a.stderr, post)
		tm.print(a.stderr)
	}
	ev.write("run.end", map[string]any{
		"exit_code": res.ExitCode, "duration_ms": res.Duration.Milliseconds(),
		"shown": pre.Shown, "used": post.Evaluation.Used, "result": post.Evaluation.Result,
		"strength": post.Evaluation.Strength, "memory_errors": len(post.Errors),
	})
	if memoryOn {
		a.afterRun(s, g, cfg, runID, query, ev, res.ExitCode, out, post.Evaluation) // cmd_distill.go
	}
	if res.ExitCode != 0 {
		return &exitCodeError{code: res.ExitCode}
	}
	return nil
}

// readQuery takes the query from exactly one of: the arguments,
// --prompt-file, --stdin.
func (a *app) readQuery(pos []string, promptFile string, useStdin bool) (string, error) {
	n := 0
	if len(pos) > 0 {
		n++
	}
	if promptFile != "" {
		n++
	}
	if useStdin {
		n++
	}
	switch {
	case n == 0:
		return "", usagef(`run: no query: pass "query", --prompt-file F or --stdin`)
	case n > 1:
		return "", usagef("run: give the query one way only: an argument, --prompt-file or --stdin")
	}
	var q string
	switch {
	case promptFile != "":
		b, err := os.ReadFile(promptFile)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("--prompt-file %s: no such file", promptFile)
			}
			return "", fmt.Errorf("--prompt-file %s: %w", promptFile, err)
		}
		q = string(b)
	case useStdin:
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return "", fmt.Errorf("--stdin: %w", err)
		}
		q = string(b)
	default:
		q = strings.Join(pos, " ")
	}
	if strings.TrimSpace(q) == "" {
		return "", usagef("run: the query is empty")
	}
	return q, nil
}

// runVerify runs the --verify command (sh -c, in dir); its output goes to
// stderr, memex's diagnostics stream. It returns the exit code (127 when
// it could not start).
func (a *app) runVerify(ctx context.Context, command, dir string) int {
	code, err := agent.RunVerify(ctx, command, dir, a.stderr, a.stderr, 0)
	switch {
	case err != nil:
		fmt.Fprintf(a.stderr, "memex: --verify could not run: %v\n", err)
		return 127
	case code == 0:
		fmt.Fprintln(a.stderr, "memex: --verify passed")
	default:
		fmt.Fprintf(a.stderr, "memex: --verify failed (exit %d)\n", code)
	}
	return code
}

// printDecision writes the grade, the search outcome and the gatekeeper's
// reasons and draws.
func printDecision(w io.Writer, pre engine.PreResult) {
	fmt.Fprintf(w, "--- memex decision (run %s, project %s) ---\n", pre.RunID, pre.ProjectID)
	fmt.Fprintf(w, "task grade: %s (%s)\n", pre.Grade.TaskLevel, pre.Grade.Reason)
	switch {
	case pre.Skipped != "":
		fmt.Fprintf(w, "memory: skipped (%s)\n", pre.Skipped)
		return
	case pre.MemoryErr != nil:
		fmt.Fprintf(w, "memory: unavailable (%v)\n", pre.MemoryErr)
		return
	}
	fmt.Fprintf(w, "search: %d matches in %s\n", len(pre.Matches), pre.SearchDuration.Round(time.Microsecond))
	for _, it := range pre.Decision.Items {
		kind := "trusted"
		if it.Probation {
			kind = "probation"
		}
		fmt.Fprintf(w, "inject: %s [%s] level %d trust %.2f relevance %.2f %s\n", it.QAID, kind, it.ValidationLevel, it.Trust, it.Relevance, it.Why)
	}
	for _, r := range pre.Decision.Reasons {
		fmt.Fprintf(w, "reason: %s %s %s\n", r.Code, r.QAID, r.Detail)
	}
	for _, d := range pre.Decision.Draws {
		fmt.Fprintf(w, "draw: %s theta %.3f value %.3f took %v\n", d.QAID, d.Theta, d.Value, d.Took)
	}
	fmt.Fprintf(w, "shown: %s\n", strings.Join(pre.Shown, ", "))
}

func printEvaluation(w io.Writer, post engine.PostResult) {
	e := post.Evaluation
	fmt.Fprintf(w, "--- memex evaluation ---\nresult: %s (%s), used: [%s]\n", e.Result, e.Strength, strings.Join(e.Used, ", "))
	for _, r := range e.Reasons {
		fmt.Fprintf(w, "reason: %s %s %s\n", r.Code, r.QAID, r.Detail)
	}
	for _, rec := range post.Records {
		fmt.Fprintf(w, "validated: %s → trust %.2f level %d status %s\n", rec.QAID, rec.TrustScore, rec.ValidationLevel, rec.Status)
	}
	c := post.Candidate
	switch {
	case c.Result != nil && c.Result.DeduplicatedInto != "":
		fmt.Fprintf(w, "candidate: duplicate of %s (recorded as its validation)\n", c.Result.DeduplicatedInto)
	case c.Result != nil:
		fmt.Fprintf(w, "candidate: stored %s (%s)\n", c.Result.QAID, c.Result.Status)
	default:
		fmt.Fprintf(w, "candidate: none (%s)\n", c.Skipped)
	}
}

// runTimings are the wall times of a run's phases, for --explain. setup
// is from the start of the command (after the Go runtime started) to the
// search: config, flags, opening the store.
type runTimings struct {
	setup, pre, search, agent, post time.Duration
}

func (t runTimings) print(w io.Writer) {
	r := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	fmt.Fprintf(w, "timing: setup %s, pre %s (search %s), agent %s (verify included), post %s; memex's own %s\n",
		r(t.setup), r(t.pre), r(t.search), r(t.agent), r(t.post), r(t.setup+t.pre+t.post))
}

// jsonOut writes v as one line of JSON.
func jsonOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
