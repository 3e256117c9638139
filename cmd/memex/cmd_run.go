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

// cmdRun is the loop of SPEC §1, one step per function: parse the flags
// and the query, open memory (fail-open), search and select (the pre
// step; --dry-run stops there), run the agent and --verify, then record
// what the run proved and hand it to distillation (the post step). The
// backend's exit code is memex's.
func cmdRun(ctx context.Context, a *app, args []string) error {
	began := time.Now()
	r, err := a.newRun(args)
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.openMemory(ctx); err != nil {
		return err
	}
	preStart := time.Now()
	pre, err := r.pre(ctx)
	if err != nil || r.dryRun {
		return err
	}
	r.tm.setup, r.tm.pre = preStart.Sub(began), time.Since(preStart)
	res, out, err := r.runAgent(ctx, pre)
	if err != nil {
		return err
	}
	r.post(ctx, pre, res, out)
	if res.ExitCode != 0 {
		return &exitCodeError{code: res.ExitCode}
	}
	return nil
}

// agentRun is one memex run: its flags, configuration, query and backend, and
// what it opened (the events file, the store, the engine).
type agentRun struct {
	a       *app
	g       *globalFlags
	s       *session
	cfg     Config
	query   string
	be      agent.Backend
	runID   string
	red     *redact.Redactor
	ev      *eventsFile
	eng     *engine.Engine
	tm      runTimings
	memory  bool           // memory is on (config and --no-memory)
	notes   core.ItemStore // the scoped store of notes, nil without one
	session string         // the conversation (--session, MEMEX_SESSION)

	noMemory, dryRun, explain, quiet bool
	seed                             uint64
}

// newRun parses memex run's flags over the configuration, reads the query
// and resolves the backend (for --dry-run, only what would run).
func (a *app) newRun(args []string) (*agentRun, error) {
	fs, g := a.newFlagSet("run", `run [flags] "query"   (or --prompt-file F, or --stdin)`, runExamples)
	backend := fs.String("backend", "", "agent backend: claude, codex, gemini or a command (default claude)")
	model := fs.String("model", "", "model passed to the backend")
	verify := fs.String("verify", "", "command run after the agent (via sh -c); the run passes iff both exit 0 (strong evidence)")
	noMemory := fs.Bool("no-memory", false, "run without memory: no search, no records")
	dryRun := fs.Bool("dry-run", false, "print the merged prompt and the gatekeeper decision; run nothing")
	explain := fs.Bool("explain", false, "print the task grade, gatekeeper reasons and draws, and the evaluation to stderr")
	quiet := fs.Bool("quiet", false, "no line on what memory did after the run, no spinner")
	events := fs.String("events", "", "write the run's events as JSONL to this file (redacted)")
	timeout := fs.Duration("timeout", 0, "stop the agent after this long (0: no limit)")
	promptFile := fs.String("prompt-file", "", "read the query from this file")
	useStdin := fs.Bool("stdin", false, "read the query from stdin")
	seed := fs.Uint64("seed", 0, "seed the gatekeeper's probation draw, for reproducible runs (0: random)")
	conversation := fs.String("session", "", "the conversation this run belongs to: its notes are recalled and the run is noted in it (default: MEMEX_SESSION; docs/SCOPES.md)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	s, err := a.setup(g)
	if err != nil {
		return nil, err
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
	r := &agentRun{a: a, g: g, s: s, cfg: cfg, noMemory: *noMemory, dryRun: *dryRun, explain: *explain, quiet: *quiet, seed: *seed,
		session: cmp.Or(*conversation, cfg.Scopes.Session), red: redact.New(), runID: engine.NewID("run")}
	if r.query, err = a.readQuery(pos, *promptFile, *useStdin); err != nil {
		return nil, err
	}
	if !r.dryRun {
		if r.be, err = agent.Resolve(cfg.Backend, cfg.Model, nil, nil); err != nil {
			return nil, err // names the backend and --backend
		}
	} else if b, err := agent.Resolve(cfg.Backend, cfg.Model, nil, func(s string) (string, error) { return s, nil }); err == nil {
		r.be = b // what would run: whether it takes a system prompt
	}
	return r, nil
}

// openMemory opens the events file and the store — memory fails open: an
// unavailable store is reported and the run goes on without it — replays
// the outbox, and builds the engine.
func (r *agentRun) openMemory(ctx context.Context) error {
	a, s, cfg := r.a, r.s, r.cfg
	if cfg.Events != "" && !r.dryRun {
		ev, err := openEvents(cfg.Events, r.runID, r.red)
		if err != nil {
			return err
		}
		r.ev = ev
	}
	r.memory = cfg.Engine.Enabled && !r.noMemory
	if r.memory {
		if err := a.openStore(ctx, s); err != nil {
			fmt.Fprintf(a.stderr, "memex: memory unavailable, running without it: %v\n", err)
			r.ev.write("memory.error", map[string]any{"stage": "open", "error": err.Error()})
		}
		if !r.dryRun {
			a.flushOutbox(ctx, s.store, cfg.Engine.MemoryTimeout, r.ev) // cmd_outbox.go
		}
	}
	hook := func(_ context.Context, se engine.StageEvent) {
		data := map[string]any{"data": se.Data}
		if se.Err != nil {
			data["error"] = se.Err.Error()
		}
		r.ev.write(string(se.Stage), data)
	}
	opts := []engine.Option{engine.WithRedactor(r.red), engine.WithHook(hook)}
	if r.seed != 0 {
		opts = append(opts, engine.WithRand(rand.New(rand.NewPCG(r.seed, r.seed))))
	}
	r.notes = a.runNotes(s, r.memory)
	if r.notes != nil {
		opts = append(opts, engine.WithNotes(a.noteRecaller(s, r.notes, r.session)))
	}
	store, err := withSemantic(s.store, s.storeURL, cfg.Semantic, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(a.stderr, "memex: semantic search off: %v\n", err)
		store = s.store
	}
	r.eng = engine.New(store, cfg.Engine, opts...)
	return nil
}

// close closes the store and the events file.
func (r *agentRun) close() {
	if r.memory {
		_ = r.s.close()
	}
	if err := r.ev.close(); err != nil {
		fmt.Fprintf(r.a.stderr, "memex: %v\n", err)
	}
}

// pre searches memory and selects what the agent sees; --explain and
// --dry-run print the decision (--dry-run also the prompts, on stdout).
func (r *agentRun) pre(ctx context.Context) (engine.PreResult, error) {
	a, cfg := r.a, r.cfg
	r.ev.write("run.start", map[string]any{
		"project_id": r.s.project, "backend": cfg.Backend, "argv": r.be.Argv, "model": cfg.Model,
		"verify": cfg.Verify, "memory": r.memory, "query": r.query,
	})
	pre, err := r.eng.Pre(ctx, engine.Task{ProjectID: r.s.project, Query: r.query, RunID: r.runID, NoMemory: r.noMemory, SystemPrompt: r.be.SystemFlag != ""})
	if err != nil {
		return pre, err
	}
	r.tm.search = pre.SearchDuration
	if pre.MemoryErr != nil {
		fmt.Fprintf(a.stderr, "memex: memory unavailable, running without it: %v\n", pre.MemoryErr)
	}
	if r.explain || r.dryRun {
		w := a.stderr
		if r.dryRun {
			w = a.stdout
		}
		printDecision(w, pre)
	}
	if r.dryRun {
		if pre.System != "" {
			fmt.Fprintf(a.stdout, "--- system prompt (%s) ---\n%s\n", r.be.SystemFlag, pre.System)
		}
		fmt.Fprintf(a.stdout, "--- merged prompt ---\n%s\n", pre.Prompt)
	}
	return pre, nil
}

// runAgent runs the backend on the merged prompt (a spinner on a terminal
// during its long silences), says so when --timeout stopped it, then runs
// --verify. A backend that could not run, or a cancelled run, is an error
// (after run.end is written); otherwise the outcome goes to the post step.
func (r *agentRun) runAgent(ctx context.Context, pre engine.PreResult) (agent.RunResult, gatekeeper.Outcome, error) {
	a, cfg := r.a, r.cfg
	stdout, stderr := a.stdout, a.stderr
	sp := r.spinner()
	if sp != nil {
		stdout, stderr = sp.wrap(stdout), sp.wrap(stderr)
		sp.run()
	}
	start := time.Now()
	res, err := agent.Run(ctx, r.be, agent.RunOptions{
		Prompt:  pre.Prompt,
		System:  pre.System,
		Dir:     r.s.cwd,
		Env:     a.runEnv(r.s, r.session, r.runID),
		Stdout:  stdout,
		Stderr:  stderr,
		Timeout: cfg.Timeout,
		OnEvent: func(e core.Event) { r.ev.write("agent.event", e) },
	})
	if sp != nil {
		sp.stop()
	}
	if res.TimedOut {
		fmt.Fprintf(a.stderr, "memex: stopped the agent: --timeout %s reached (exit %d)\n", cfg.Timeout, res.ExitCode)
	}
	if err != nil {
		r.ev.write("run.end", map[string]any{"error": err.Error(), "duration_ms": time.Since(start).Milliseconds()})
		if ctx.Err() != nil {
			return res, gatekeeper.Outcome{}, ctx.Err()
		}
		return res, gatekeeper.Outcome{}, fmt.Errorf("--backend %s: %w", cfg.Backend, err)
	}
	out := gatekeeper.Outcome{ExitCode: res.ExitCode, Duration: res.Duration, Events: res.Events}
	if cfg.Verify != "" && ctx.Err() == nil {
		code := a.runVerify(ctx, cfg.Verify, r.s.cwd)
		out.Verify = &gatekeeper.VerifyResult{Command: cfg.Verify, ExitCode: code}
		r.ev.write("verify", out.Verify)
	}
	if ctx.Err() != nil {
		r.ev.write("run.end", map[string]any{"exit_code": res.ExitCode, "canceled": true})
		return res, out, ctx.Err()
	}
	r.tm.agent = time.Since(start)
	return res, out, nil
}

// post records what the run proved (hits, validations, a candidate), notes
// the run in its conversation, writes run.end, and hands the run to
// distillation (afterRun). Its writes are not cut short by a Ctrl-C after
// the agent ended; their errors are reported, never the exit code.
func (r *agentRun) post(ctx context.Context, pre engine.PreResult, res agent.RunResult, out gatekeeper.Outcome) engine.PostResult {
	a := r.a
	ctx = context.WithoutCancel(ctx)
	postStart := time.Now()
	post, err := r.eng.Post(ctx, engine.PostInput{Pre: pre, Outcome: out})
	r.tm.post = time.Since(postStart)
	if err != nil {
		fmt.Fprintf(a.stderr, "memex: post: %v\n", err)
	}
	for _, e := range post.Errors {
		fmt.Fprintf(a.stderr, "memex: memory: %v\n", e)
	}
	if err := a.noteRun(ctx, r.s, r.notes, r.session, pre, string(post.Evaluation.Result)); err != nil {
		fmt.Fprintf(a.stderr, "memex: memory: conversation note: %v\n", err)
	}
	if err := a.recordRun(ctx, r.s, pre, post); err != nil {
		fmt.Fprintf(a.stderr, "memex: memory: run log: %v\n", err)
	}
	if r.explain {
		printEvaluation(a.stderr, post)
		r.tm.print(a.stderr)
	}
	r.ev.write("run.end", map[string]any{
		"exit_code": res.ExitCode, "duration_ms": res.Duration.Milliseconds(),
		"shown": pre.Shown, "used": post.Evaluation.Used, "result": post.Evaluation.Result,
		"strength": post.Evaluation.Strength, "memory_errors": len(post.Errors), "timed_out": res.TimedOut,
	})
	if r.memory {
		a.afterRun(r.s, r.g, r.cfg, r.runID, r.query, r.ev, res.ExitCode, out, post.Evaluation) // cmd_distill.go
		if !r.quiet {
			fmt.Fprintln(a.stderr, runSummary(pre, post))
		}
	}
	return post
}

// Spinner timing: drawn after spinnerQuiet without output from the agent,
// one frame per spinnerTick.
const (
	spinnerQuiet = 2 * time.Second
	spinnerTick  = 120 * time.Millisecond
)

// spinner returns the run's spinner: only when stderr is a terminal and
// the run is not --quiet, else nil.
func (r *agentRun) spinner() *spinner {
	if r.quiet || !isTTY(r.a.stderr) {
		return nil
	}
	return newSpinner(r.a.stderr, spinnerQuiet, spinnerTick)
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
