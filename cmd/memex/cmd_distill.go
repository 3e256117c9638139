package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/memex-dev/memex/agent"
	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/distill"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/extract/redact"
	"github.com/memex-dev/memex/gatekeeper"
	"github.com/memex-dev/memex/internal/atomicfile"
)

// Distillation (docs/MARKDOWN.md, [distill]): after a passing memex run the
// redacted transcript is kept under <data dir>/runs and a detached
// `memex distill --background <run-id>` asks the agent CLI to distil it;
// `memex distill <run-id>` does the same by hand.

const distillExamples = `  memex distill run-01jd…              # distil a kept run now (prints the candidates)
  memex distill --dry-run run-01jd…    # print the prompt; run nothing
  memex distill --command ./my-llm.sh --timeout 60s run-01jd…

memex run keeps a run's redacted transcript when [distill] enabled or
keep_transcripts is true, and with enabled = true starts this command in
the background after every passing run.`

var runIDRE = regexp.MustCompile(`^run-[a-z0-9]{1,64}$`)

// maxTranscriptEvents bounds the events kept of one run.
const maxTranscriptEvents = 400

// runsDir holds kept transcripts and distillation results.
func runsDir(getenv func(string) string) (string, error) {
	d, err := dataDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "runs"), nil
}

// afterRun is memex run's one call into distillation: it keeps the run's
// redacted transcript and, for a passing run with [distill] enabled, starts
// the distiller detached. Nothing here changes the run's exit code: every
// problem is a line on stderr and an event.
func (a *app) afterRun(s *session, g *globalFlags, cfg Config, runID, query string, ev *eventsFile,
	exitCode int, out gatekeeper.Outcome, eval gatekeeper.Evaluation) {
	dc := cfg.Distill
	if !dc.Enabled && !dc.KeepTranscripts {
		return
	}
	tr := distill.Transcript{
		RunID: runID, ProjectID: s.project, Query: query, Backend: cfg.Backend, Model: cfg.Model,
		ExitCode: exitCode, Result: eval.Result, Strength: eval.Strength, EventsFile: absPath(s.cwd, cfg.Events),
		CreatedAt: time.Now().UTC(),
	}
	if out.Verify != nil {
		ok := out.Verify.ExitCode == 0
		tr.Verify, tr.VerifyOK = out.Verify.Command, &ok
	}
	tr.Events = out.Events
	if n := len(tr.Events); n > maxTranscriptEvents {
		tr.Events = tr.Events[n-maxTranscriptEvents:]
	}
	if err := a.saveTranscript(tr); err != nil {
		fmt.Fprintf(a.stderr, "memex: distill: %v\n", err)
		ev.write("distill.skipped", map[string]any{"reason": "transcript_not_saved", "error": err.Error()})
		return
	}
	switch {
	case !dc.Enabled:
		return
	case !tr.Passed():
		ev.write("distill.skipped", map[string]any{"reason": "run_failed"})
		return
	}
	args := []string{"distill", "--background", "--project", s.project}
	if s.storeURL != "" {
		args = append(args, "--store", s.storeURL)
	}
	if g.config != "" {
		args = append(args, "--config", absPath(s.cwd, g.config))
	}
	args = append(args, runID)
	ev.flush() // the distiller appends to the same events file
	pid, err := a.spawnSelf(s.cwd, args)
	if err != nil {
		fmt.Fprintf(a.stderr, "memex: distill: could not start: %v\n", err)
		ev.write("distill.skipped", map[string]any{"reason": "start", "error": err.Error()})
		return
	}
	ev.write("distill.spawned", map[string]any{"pid": pid, "timeout_ms": dc.Timeout.Milliseconds()})
}

func absPath(cwd, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cwd, p)
}

// saveTranscript writes tr, redacted, to <runs>/<run-id>.json (0600).
func (a *app) saveTranscript(tr distill.Transcript) error {
	dir, err := runsDir(a.getenv)
	if err != nil {
		return err
	}
	red := redact.New()
	var v any
	b, err := json.Marshal(tr)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	v, _ = red.RedactValue(v)
	if b, err = json.Marshal(v); err != nil {
		return err
	}
	if _, err = atomicfile.Write(filepath.Join(dir, tr.RunID+".json"), b, atomicfile.Options{Perm: 0o600, DirPerm: 0o700}); err != nil {
		return err
	}
	pruneTranscripts(dir, maxTranscripts)
	return nil
}

// maxTranscripts is how many run transcripts are kept (the newest); the
// small distillation records are kept for memex stats.
const maxTranscripts = 200

// pruneTranscripts deletes all but the newest keep transcripts of dir.
func pruneTranscripts(dir string, keep int) {
	files, err := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if err != nil {
		return
	}
	type tf struct {
		path string
		mod  time.Time
	}
	var ts []tf
	for _, f := range files {
		if strings.HasSuffix(f, ".distill.json") {
			continue
		}
		if st, err := os.Stat(f); err == nil {
			ts = append(ts, tf{f, st.ModTime()})
		}
	}
	if len(ts) <= keep {
		return
	}
	slices.SortFunc(ts, func(a, b tf) int { return b.mod.Compare(a.mod) })
	for _, t := range ts[keep:] {
		_ = os.Remove(t.path)
	}
}

func loadTranscript(getenv func(string) string, runID string) (distill.Transcript, error) {
	var tr distill.Transcript
	dir, err := runsDir(getenv)
	if err != nil {
		return tr, err
	}
	b, err := os.ReadFile(filepath.Join(dir, runID+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return tr, fmt.Errorf("no transcript of %s (memex run keeps them when [distill] enabled or keep_transcripts is true)", runID)
	}
	if err != nil {
		return tr, err
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		return tr, fmt.Errorf("transcript of %s: malformed", runID)
	}
	return tr, nil
}

// spawnSelf starts memex with args, detached from this process (its own
// session; no terminal, no pipes), in dir, with this invocation's
// environment. It returns the child's pid.
func (a *app) spawnSelf(dir string, args []string) (int, error) {
	argv := a.self
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return 0, err
		}
		argv = []string{exe}
	}
	c := exec.Command(argv[0], append(argv[1:len(argv):len(argv)], args...)...)
	c.Dir = dir
	c.Env = a.childEnv()
	detach(c)
	if err := c.Start(); err != nil {
		return 0, err
	}
	pid := c.Process.Pid
	go func() { _ = c.Wait() }() // reap it if we are still here when it ends
	return pid, nil
}

// childEnv is the process environment with this invocation's view of the
// variables memex reads (tests and embedders give memex its own getenv).
func (a *app) childEnv() []string {
	keys := append([]string{"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}, envKeys()...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			env = append(env, kv)
		}
	}
	for _, k := range keys {
		if v := a.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, a.selfEnv...)
}

// distillRecord is a distillation's outcome, kept as <runs>/<run-id>.distill.json.
type distillRecord struct {
	RunID      string             `json:"run_id"`
	ProjectID  string             `json:"project_id"`
	Status     string             `json:"status"` // ok, failed
	Reason     string             `json:"reason,omitempty"`
	Detail     string             `json:"detail,omitempty"`
	Command    string             `json:"command,omitempty"`
	Summary    string             `json:"summary,omitempty"`
	Candidates []distillCandidate `json:"candidates,omitempty"`
	Usage      distill.Usage      `json:"usage"`
	DurationMS int64              `json:"duration_ms"`
	FinishedAt time.Time          `json:"finished_at"`
}

type distillCandidate struct {
	QAID        string      `json:"qa_id,omitempty"`
	Status      core.Status `json:"status,omitempty"`
	DuplicateOf string      `json:"duplicate_of,omitempty"`
	Quarantined bool        `json:"quarantined,omitempty"`
	Error       string      `json:"error,omitempty"`
}

func cmdDistill(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("distill", "distill [flags] <run-id>", distillExamples)
	background := fs.Bool("background", false, "run quietly, as memex run starts it (the outcome goes to the events file and the runs directory)")
	timeout := fs.Duration("timeout", 0, "stop the distiller after this long (default [distill] timeout, 120s)")
	command := fs.String("command", "", "the distiller command (default [distill] command, else the run's backend)")
	dryRun := fs.Bool("dry-run", false, "print the prompt; run nothing")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("distill: expected one argument: the run id (memex run --explain and the events file show it)")
	}
	runID := pos[0]
	if !runIDRE.MatchString(runID) {
		return usagef("distill: %q is not a run id (run-…)", runID)
	}
	s, err := a.setup(g)
	if err != nil {
		return err
	}
	tr, err := loadTranscript(a.getenv, runID)
	if err != nil {
		return fmt.Errorf("distill: %w", err)
	}
	if !tr.Passed() {
		return fmt.Errorf("distill: %s did not pass: only passing runs are distilled", runID)
	}
	dc := s.cfg.Distill
	if *timeout > 0 {
		dc.Timeout = *timeout
	}
	if *command != "" {
		dc.Command = *command
	}
	prompt := distill.Prompt(tr)
	if *dryRun {
		fmt.Fprint(a.stdout, prompt)
		return nil
	}
	red := redact.New()
	var ev *eventsFile
	if tr.EventsFile != "" {
		if ev, err = openEvents(tr.EventsFile, runID, red); err != nil {
			fmt.Fprintf(a.stderr, "memex: distill: %v\n", err)
		}
		defer func() { _ = ev.close() }()
	}
	rec := distillRecord{RunID: runID, ProjectID: tr.ProjectID}
	finish := func() error {
		rec.FinishedAt = time.Now().UTC()
		ev.write("distill.end", rec)
		ev.flush()
		if err := a.saveDistillRecord(rec); err != nil {
			fmt.Fprintf(a.stderr, "memex: distill: %v\n", err)
		}
		if rec.Status != "ok" {
			if *background {
				return nil
			}
			return fmt.Errorf("distill %s: %s: %s", runID, rec.Reason, rec.Detail)
		}
		if !*background {
			a.printDistill(rec)
		}
		return nil
	}
	cmd, err := distillCommand(dc, tr)
	if err != nil {
		rec.Status, rec.Reason, rec.Detail = "failed", "start", err.Error()
		return finish()
	}
	rec.Command = filepath.Base(cmd.Argv[0])
	ev.write("distill.start", map[string]any{"command": rec.Command, "timeout_ms": dc.Timeout.Milliseconds()})
	out, err := distill.Run(ctx, cmd, prompt, dc.Timeout, nil)
	rec.Usage, rec.DurationMS = out.Usage, out.Duration.Milliseconds()
	if err != nil {
		rec.Status, rec.Reason, rec.Detail = "failed", "error", err.Error()
		var f *distill.Failure
		if errors.As(err, &f) {
			rec.Reason, rec.Detail = f.Reason, f.Detail
		}
		return finish()
	}
	rec.Summary, _ = red.Redact(out.Answer.Summary)
	if err := a.openStore(ctx, s); err != nil {
		rec.Status, rec.Reason, rec.Detail = "failed", "store", err.Error()
		return finish()
	}
	defer func() { _ = s.close() }()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, l := range distill.Learnings(tr, out.Answer, dc.MaxCandidates, red) {
		md := map[string]any{"category": l.Category, "distilled_from": runID}
		if l.Quarantine != "" {
			md["quarantined"] = true
			md["quarantine_reason"] = l.Quarantine
		}
		req := core.CandidateRequest{
			ProjectID: tr.ProjectID, Question: l.Question, Answer: l.Answer, Tags: append(l.Tags, "distilled"),
			Metadata: md, Source: "distill", RunID: runID,
			Evidence: &core.Evidence{Result: tr.Result, Strength: tr.Strength}, EventID: engine.NewID("ev"),
		}
		c := distillCandidate{Quarantined: l.Quarantine != ""}
		if err := req.Validate(); err != nil {
			c.Error = err.Error()
			rec.Candidates = append(rec.Candidates, c)
			continue
		}
		res, err := s.store.RecordCandidate(wctx, req)
		switch {
		case err != nil:
			c.Error = err.Error()
		case res.DeduplicatedInto != "":
			c.DuplicateOf = res.DeduplicatedInto
		default:
			c.QAID, c.Status = res.QAID, res.Status
		}
		rec.Candidates = append(rec.Candidates, c)
	}
	rec.Status = "ok"
	return finish()
}

// distillCommand resolves the distiller: [distill] command, else the run's
// backend, in its single-answer mode.
func distillCommand(dc distillConfig, tr distill.Transcript) (distill.Command, error) {
	line := dc.Command
	if line == "" {
		line = tr.Backend
	}
	words, err := agent.SplitWords(line)
	if err != nil || len(words) == 0 {
		return distill.Command{}, fmt.Errorf("distiller command %q: malformed", line)
	}
	exe, err := exec.LookPath(words[0])
	if err != nil {
		return distill.Command{}, fmt.Errorf("distiller %q not found; install it or set [distill] command", words[0])
	}
	model := dc.Model
	if model == "" && dc.Command == "" {
		model = tr.Model
	}
	name := strings.TrimSuffix(filepath.Base(words[0]), filepath.Ext(words[0]))
	return distill.CommandFor(name, exe, model, words[1:]), nil
}

func (a *app) saveDistillRecord(rec distillRecord) error {
	dir, err := runsDir(a.getenv)
	if err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = atomicfile.Write(filepath.Join(dir, rec.RunID+".distill.json"), append(b, '\n'), atomicfile.Options{Perm: 0o600, DirPerm: 0o700})
	return err
}

func (a *app) printDistill(rec distillRecord) {
	fmt.Fprintf(a.stdout, "distilled %s in %s: %s\n", rec.RunID, time.Duration(rec.DurationMS)*time.Millisecond, rec.Summary)
	for _, c := range rec.Candidates {
		switch {
		case c.Error != "":
			fmt.Fprintf(a.stdout, "  refused: %s\n", c.Error)
		case c.DuplicateOf != "":
			fmt.Fprintf(a.stdout, "  duplicate of %s\n", c.DuplicateOf)
		case c.Quarantined:
			fmt.Fprintf(a.stdout, "  %s (%s, quarantined: reads like instructions)\n", c.QAID, c.Status)
		default:
			fmt.Fprintf(a.stdout, "  %s (%s)\n", c.QAID, c.Status)
		}
	}
	if rec.Usage.InputTokens+rec.Usage.OutputTokens > 0 {
		fmt.Fprintf(a.stdout, "tokens: %d in, %d out", rec.Usage.InputTokens, rec.Usage.OutputTokens)
		if rec.Usage.CostUSD > 0 {
			fmt.Fprintf(a.stdout, ", $%.4f", rec.Usage.CostUSD)
		}
		fmt.Fprintln(a.stdout)
	}
}

// distillTotals sums the project's distillation records (memex stats).
type distillTotals struct {
	Runs, OK, Failed, Candidates int
	Usage                        distill.Usage
}

func readDistillTotals(getenv func(string) string, project string) (distillTotals, error) {
	var t distillTotals
	dir, err := runsDir(getenv)
	if err != nil {
		return t, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.distill.json"))
	if err != nil {
		return t, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec distillRecord
		if json.Unmarshal(b, &rec) != nil || rec.ProjectID != project {
			continue
		}
		t.Runs++
		if rec.Status == "ok" {
			t.OK++
		} else {
			t.Failed++
		}
		for _, c := range rec.Candidates {
			if c.QAID != "" {
				t.Candidates++
			}
		}
		t.Usage.InputTokens += rec.Usage.InputTokens
		t.Usage.OutputTokens += rec.Usage.OutputTokens
		t.Usage.CostUSD += rec.Usage.CostUSD
	}
	return t, nil
}
