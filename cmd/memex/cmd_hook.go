package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/extract/redact"
	"github.com/memex-dev/memex/gatekeeper"
	"github.com/memex-dev/memex/hooks"
)

const hookUsage = `Usage:
  memex hook <claude|codex|gemini> <event>     run a hook: the host's JSON on stdin, its output on stdout
  memex hook install <host> [--scope user|project] [--dry-run]
  memex hook uninstall <host> [--scope user|project] [--dry-run]
  memex hook status <host> [--scope user|project]

Events: claude and codex: UserPromptSubmit, Stop (and SessionStart, quiet);
gemini: BeforeAgent, AfterAgent (and SessionStart, quiet).

A hook never blocks the host: on any error it exits 0 with no output and
writes one redacted line to <data dir>/hooks.log. MEMEX_DISABLE=1 or
[hooks] enabled = false (also in a repository's .memex.toml) turns it off.

Examples:
  memex hook install claude                    # ~/.claude/settings.json
  memex hook install codex --scope project     # .codex/hooks.json of this project
  memex hook install gemini --dry-run          # show the change, write nothing
  memex hook status claude
  memex hook uninstall claude                  # takes out exactly what install added`

// Time budgets of a hook, well below the 10 s the installed settings give
// the host's own timeout: past them the hook gives up with no output.
const (
	hookPromptBudget  = 3 * time.Second
	hookStopBudget    = 8 * time.Second
	hookSessionBudget = time.Second
	// hookMemoryTimeout bounds each memory call of a hook (a locked or
	// unreachable store fails open after it).
	hookMemoryTimeout = time.Second
)

func cmdHook(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(a.stderr, hookUsage)
		return usagef("hook: give a host and an event, or install|uninstall|status")
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprintln(a.stdout, hookUsage)
		return nil
	case "install", "uninstall", "status":
		return a.hookAdmin(args[0], args[1:])
	}
	a.runHook(ctx, args)
	return nil // a hook never fails the host
}

// hookLog appends redacted lines to <data dir>/hooks.log (kept under
// 1 MiB: the previous one is renamed hooks.log.1). Each line ends with the
// time since the hook started, in brackets: how long the hook had run when
// it gave up or failed (the host's timeout counts from the process start).
type hookLog struct {
	path   string
	prefix string
	red    *redact.Redactor
	start  time.Time
	mu     sync.Mutex
}

const hookLogMax = 1 << 20

func (l *hookLog) printf(format string, args ...any) {
	if l == nil || l.path == "" {
		return
	}
	msg, _ := l.red.Redact(fmt.Sprintf(format, args...))
	msg = strings.ReplaceAll(msg, "\n", " ")
	now := time.Now()
	if !l.start.IsZero() {
		msg += " [" + now.Sub(l.start).Round(time.Millisecond).String() + "]"
	}
	line := now.UTC().Format(time.RFC3339) + " " + l.prefix + msg + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return
	}
	if st, err := os.Stat(l.path); err == nil && st.Size() > hookLogMax {
		_ = os.Rename(l.path, l.path+".1")
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line)
	_ = f.Close()
}

type quietRedisLogger struct{}

func (quietRedisLogger) Printf(context.Context, string, ...any) {}

// runHook runs one hook. Whatever happens it writes either the host's
// documented output or nothing, and returns.
func (a *app) runHook(ctx context.Context, args []string) {
	if v := a.getenv("MEMEX_DISABLE"); v != "" && v != "0" && !strings.EqualFold(v, "false") {
		return
	}
	// go-redis logs dial failures to stderr on its own; a hook's stderr
	// stays clean (the reason goes to hooks.log).
	goredis.SetLogger(quietRedisLogger{})
	red := redact.New()
	log := &hookLog{red: red, prefix: "hook " + strings.Join(args[:min(2, len(args))], " ") + ": ", start: time.Now()}
	if dir, err := dataDir(a.getenv); err == nil {
		log.path = filepath.Join(dir, "hooks.log")
	}
	if len(args) < 2 {
		log.printf("error: usage: memex hook <claude|codex|gemini> <event>")
		return
	}
	h, err := hooks.ParseHost(args[0])
	if err != nil {
		log.printf("error: %v", err)
		return
	}
	event := args[1]
	fs, g := a.newFlagSet("hook", "hook <host> <event>", "")
	if _, err := a.parseFlags(fs, args[2:]); err != nil {
		log.printf("error: %v", err)
		return
	}
	in, kind, err := hooks.DecodeInput(h, event, a.stdin)
	if err != nil {
		log.printf("error: %v", err)
		return
	}
	log.prefix += "session " + in.SessionID + ": "
	budget := map[hooks.Kind]time.Duration{hooks.KindPrompt: hookPromptBudget, hooks.KindStop: hookStopBudget}[kind]
	if budget == 0 {
		budget = hookSessionBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := a.hookWork(ctx, h, event, kind, in, g, red, log)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			log.printf("error: %v", r.err)
			return
		}
		if len(r.out) > 0 {
			if _, err := a.stdout.Write(r.out); err != nil {
				log.printf("error: write output: %v", err)
			}
		}
	case <-ctx.Done():
		log.printf("error: gave up after the %s budget (%v); no output", budget, context.Cause(ctx))
	}
}

// hookWork does a hook's job and returns its stdout.
func (a *app) hookWork(ctx context.Context, h hooks.Host, event string, kind hooks.Kind, in hooks.Input, g *globalFlags, red *redact.Redactor, log *hookLog) ([]byte, error) {
	// The host's working directory is the project's.
	sub := *a
	if in.Cwd != "" {
		if st, err := os.Stat(in.Cwd); err == nil && st.IsDir() {
			cwd := in.Cwd
			sub.getwd = func() (string, error) { return cwd, nil }
		}
	}
	s, err := sub.setup(g)
	if err != nil {
		return nil, err
	}
	s.cfg.storeLockTimeout = hookMemoryTimeout
	if !s.cfg.HooksEnabled {
		return nil, nil
	}
	dir, err := dataDir(a.getenv)
	if err != nil {
		return nil, err
	}
	states := hooks.NewStates(filepath.Join(dir, "hooks", "turns"))
	switch kind {
	case hooks.KindPrompt:
		return sub.hookPrompt(ctx, h, event, in, s, states, red, log)
	case hooks.KindStop:
		return nil, sub.hookStop(ctx, h, in, s, states, red, log)
	default:
		if f := a.getenv("CLAUDE_ENV_FILE"); h == hooks.Claude && f != "" {
			if err := hooks.SessionEnv(f, in.SessionID); err != nil {
				log.printf("error: %v", err)
			}
		}
		return nil, states.Prune()
	}
}

// hookEngineConfig is the engine configuration of a hook for host h.
func hookEngineConfig(cfg Config, h hooks.Host) engine.Config {
	ec := cfg.Engine
	if ec.MemoryTimeout <= 0 || ec.MemoryTimeout > hookMemoryTimeout {
		ec.MemoryTimeout = hookMemoryTimeout
	}
	if max := h.MaxBlockChars(); ec.Gatekeeper.MaxBlockChars <= 0 || ec.Gatekeeper.MaxBlockChars > max {
		ec.Gatekeeper.MaxBlockChars = max
	}
	return ec
}

// turnKey names the turn a hook belongs to: Codex gives a turn id; the other
// hosts run one turn at a time per session.
func turnKey(in hooks.Input) string { return in.TurnID }

func (a *app) hookPrompt(ctx context.Context, h hooks.Host, event string, in hooks.Input, s *session, states *hooks.States, red *redact.Redactor, log *hookLog) ([]byte, error) {
	ec := hookEngineConfig(s.cfg, h)
	if ec.Enabled {
		if err := a.openStore(ctx, s); err != nil {
			// No state either: the stop hook then records nothing.
			return nil, fmt.Errorf("memory unavailable: %w", err)
		}
		defer func() { _ = s.close() }()
	}
	query, _ := red.Redact(in.Prompt)
	opts := []engine.Option{engine.WithRedactor(red)}
	if v := a.getenv("MEMEX_SEED"); v != "" {
		// A fixed probation draw: reproducible demos and tests.
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("MEMEX_SEED=%q: not an unsigned integer", v)
		}
		opts = append(opts, engine.WithRand(rand.New(rand.NewPCG(n, n))))
	}
	if notes := a.runNotes(s, ec.Enabled); notes != nil {
		// Scoped notes: the host's session is the conversation.
		opts = append(opts, engine.WithNotes(a.noteRecaller(s, notes, in.SessionID)))
	}
	eng := engine.New(s.store, ec, opts...)
	pre, err := eng.Pre(ctx, engine.Task{ProjectID: s.project, Query: query})
	if err != nil {
		return nil, err
	}
	block, shown := pre.Block.Text, pre.Shown
	// Fit the host's budget (Codex counts tokens): render fewer
	// characters until it fits.
	gk := ec.Gatekeeper
	for block != "" && !h.Fits(block) {
		if gk.MaxBlockChars < 400 {
			block, shown = "", []string{}
			break
		}
		gk.MaxBlockChars = gk.MaxBlockChars * 3 / 4
		b := gatekeeper.RenderWithNotes(pre.Decision.Items, pre.Notes, gk, time.Now())
		block, shown = b.Text, b.Shown
	}
	st := hooks.TurnState{
		Host: h, SessionID: in.SessionID, TurnID: turnKey(in), RunID: pre.RunID, ProjectID: pre.ProjectID,
		Query: query, Shown: shown, Block: block, WriteCandidate: pre.Decision.WriteCandidate, Skipped: pre.Skipped,
	}
	for _, m := range pre.Matches {
		st.Matches = append(st.Matches, hooks.MatchRef{QAID: m.QAID, ReceiptID: m.ReceiptID})
	}
	if pre.MemoryErr != nil {
		st.MemoryErr = pre.MemoryErr.Error()
		st.MemoryUnavailable = errors.Is(pre.MemoryErr, core.ErrUnavailable) || errors.Is(pre.MemoryErr, context.DeadlineExceeded)
		log.printf("memory unavailable, nothing injected: %v", pre.MemoryErr)
	}
	if err := states.Save(st); err != nil {
		log.printf("error: %v (the stop hook will record nothing for this turn)", err)
	}
	return hooks.PromptOutput(h, event, block)
}

func (a *app) hookStop(ctx context.Context, h hooks.Host, in hooks.Input, s *session, states *hooks.States, red *redact.Redactor, log *hookLog) error {
	if err := states.Prune(); err != nil {
		log.printf("error: %v", err)
	}
	if in.StopHookActive {
		// The host continues the turn because a stop hook asked it to; the
		// turn was evaluated when it first stopped.
		return nil
	}
	st, ok, err := states.Take(h, in.SessionID, turnKey(in))
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("no prompt state for this turn (the prompt hook did not run, failed, or the turn was already evaluated): nothing recorded")
	}
	if st.Skipped == "disabled" || st.Skipped == "no_memory" {
		return nil
	}
	turn, err := hooks.ReadTurn(h, in)
	if err != nil {
		return fmt.Errorf("%w: nothing recorded", err)
	}
	ec := hookEngineConfig(s.cfg, h)
	if err := a.openStore(ctx, s); err != nil {
		return fmt.Errorf("memory unavailable, nothing recorded: %w", err)
	}
	defer func() { _ = s.close() }()
	a.flushOutbox(ctx, s.store, ec.MemoryTimeout, nil)
	pre := engine.PreResult{
		RunID: st.RunID, ProjectID: st.ProjectID, Query: st.Query, Prompt: st.Query, Skipped: st.Skipped,
		Shown: st.Shown, Block: gatekeeper.Block{Text: st.Block, Shown: st.Shown},
		Decision: gatekeeper.Decision{WriteCandidate: st.WriteCandidate},
		Matches:  []core.Match{},
	}
	if pre.Shown == nil {
		pre.Shown = []string{}
	}
	for _, m := range st.Matches {
		pre.Matches = append(pre.Matches, core.Match{QAID: m.QAID, ReceiptID: m.ReceiptID})
	}
	if st.MemoryErr != "" {
		pre.MemoryErr = errors.New(st.MemoryErr)
		if st.MemoryUnavailable {
			pre.MemoryErr = fmt.Errorf("%s: %w", st.MemoryErr, core.ErrUnavailable)
		}
	}
	eng := engine.New(s.store, ec, engine.WithRedactor(red))
	post, err := eng.Post(ctx, engine.PostInput{Pre: pre, Outcome: gatekeeper.Outcome{ExitCode: 0, Events: turn.Events}})
	if err != nil {
		return err
	}
	if err := a.recordRun(ctx, s, pre, post); err != nil {
		log.printf("error: run log: %v", err)
	}
	if len(post.Errors) > 0 {
		return fmt.Errorf("memory: %w", errors.Join(post.Errors...))
	}
	return nil
}

// hookAdmin is `memex hook install|uninstall|status <host>`.
func (a *app) hookAdmin(verb string, args []string) error {
	usage := "hook " + verb + " <claude|codex|gemini> [--scope user|project]"
	if verb != "status" {
		usage += " [--dry-run]"
	}
	fs, _ := a.newFlagSet("hook "+verb, usage, "")
	scopeFlag := fs.String("scope", "user", "user: the host's settings in your home; project: the project's")
	dryRun := fs.Bool("dry-run", false, "print the change as a diff; write nothing")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("hook %s: give one host: claude, codex or gemini", verb)
	}
	h, err := hooks.ParseHost(pos[0])
	if err != nil {
		return usagef("hook %s: %v", verb, err)
	}
	scope, err := hooks.ParseScope(*scopeFlag)
	if err != nil {
		return usagef("hook %s: --scope: %v", verb, err)
	}
	home := a.getenv("HOME")
	if home == "" && scope == hooks.ScopeUser {
		return errors.New("HOME is not set: cannot find the host's user settings (use --scope project)")
	}
	cwd, err := a.getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	project := cwd
	if root := gitRoot(cwd); root != "" {
		project = root
	}
	path := hooks.SettingsPath(h, scope, home, project)

	if verb == "status" {
		list, err := hooks.Status(h, path, exec.LookPath)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintf(a.stdout, "%s: memex hooks not installed in %s\n", h.Title(), path)
			return nil
		}
		fmt.Fprintf(a.stdout, "%s: %s\n", h.Title(), path)
		for _, in := range list {
			state := "ok"
			if !in.ExeFound {
				state = "MISSING: the memex binary it runs does not exist (reinstall: memex hook install " + string(h) + ")"
			}
			fmt.Fprintf(a.stdout, "  %-17s %s  [%s]\n", in.Event, in.Command, state)
		}
		return nil
	}

	var plan hooks.Plan
	if verb == "install" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("cannot find the memex executable: %w", err)
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		plan, err = hooks.PlanInstall(h, path, exe)
		if err != nil {
			return err
		}
	} else {
		if plan, err = hooks.PlanUninstall(h, path); err != nil {
			return err
		}
	}
	if !plan.Changed() {
		fmt.Fprintf(a.stdout, "%s: %s already up to date (%s)\n", h.Title(), path, map[string]string{"install": "memex hooks installed", "uninstall": "no memex hooks"}[verb])
		return nil
	}
	if *dryRun {
		fmt.Fprintf(a.stdout, "--- %s\n+++ %s (after memex hook %s %s)\n", path, path, verb, h)
		writeLineDiff(a.stdout, string(plan.Before), string(plan.After))
		return nil
	}
	if err := hooks.Apply(plan); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if verb == "install" {
		fmt.Fprintf(a.stdout, "%s: memex hooks installed in %s (%s)\n", h.Title(), path, strings.Join(h.InstalledEvents(), ", "))
		if plan.Existed {
			fmt.Fprintf(a.stdout, "backup of the previous file: %s.memex.bak\n", path)
		}
		fmt.Fprintf(a.stdout, "next: %s\n", hooks.NextStep(h))
	} else {
		fmt.Fprintf(a.stdout, "%s: memex hooks removed from %s\n", h.Title(), path)
	}
	return nil
}

// writeLineDiff prints a minimal line diff of a and b (" " kept, "-"
// removed, "+" added).
func writeLineDiff(w io.Writer, a, b string) {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	}
	x, y := split(a), split(b)
	// Longest common subsequence table (settings files are small).
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			fmt.Fprintf(w, " %s\n", x[i])
			i++
			j++
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(w, "+%s\n", y[j])
			j++
		default:
			fmt.Fprintf(w, "-%s\n", x[i])
			i++
		}
	}
}
