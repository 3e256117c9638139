// Package engine is memex's loop (SPEC §1) as a library: Pre searches the
// memory and builds the merged prompt, the caller runs its agent, and Post
// evaluates the run and records hits, validations and a candidate. Agent
// builders import it to add memex to their own loop; `memex run` is a thin
// shell around it.
//
// Memory is advisory and fails open: a store that errors, times out or is
// absent never stops the run. Pre then returns the original query as the
// prompt and reports the error in PreResult.MemoryErr; Post reports write
// errors in PostResult.Errors. Neither changes the agent's exit code.
//
// # Stages and hooks
//
// Each call walks a fixed chain of stages, in this order:
//
//	Pre:  grade → search → decision (gatekeeper.Select + Render + MergePrompt)
//	Post: evaluation → hit → validation (one per used QA) → candidate
//
// A Hook added WithHook sees every stage as it completes (StageEvent: the
// stage, the run id, the stage's data and its error, if any), in the order
// the hooks were added. Hooks observe; they cannot change the outcome, so a
// misbehaving hook cannot break the loop's guarantees. `memex run` uses one
// to write the events file.
package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/extract"
	"github.com/memex-dev/memex/extract/redact"
	"github.com/memex-dev/memex/gatekeeper"
)

// DefaultMemoryTimeout bounds each memory call (search and every write).
const DefaultMemoryTimeout = 2 * time.Second

// Config is the engine's configuration ([memory], [gatekeeper],
// [prompt_inject] and [candidate_extract] of the config file).
type Config struct {
	// Enabled turns memory on; false runs the agent with the plain query.
	Enabled bool
	// MemoryTimeout bounds each memory call (0 → DefaultMemoryTimeout).
	MemoryTimeout time.Duration
	// SearchLimit is the number of matches asked for (0 → core default).
	SearchLimit int
	// MinScore is the minimum relevance of a match.
	MinScore float64
	// SkipL0 skips the memory search for trivial (L0) tasks.
	SkipL0 bool
	// Candidates turns candidate extraction on.
	Candidates bool

	Gatekeeper gatekeeper.Config
	Extract    extract.Config
}

// DefaultConfig is memex's default configuration.
func DefaultConfig() Config {
	return Config{
		Enabled:       true,
		MemoryTimeout: DefaultMemoryTimeout,
		SearchLimit:   core.DefaultSearchLimit,
		MinScore:      core.DefaultMinScore,
		SkipL0:        true,
		Candidates:    true,
		Gatekeeper:    gatekeeper.DefaultConfig(),
		Extract:       extract.DefaultConfig(),
	}
}

// Stage names a step of the loop.
type Stage string

// The stages, in the order they run.
const (
	StageGrade      Stage = "grade"      // Data: core.TaskGrade
	StageSearch     Stage = "search"     // Data: []core.Match (Err: the memory error)
	StageDecision   Stage = "decision"   // Data: gatekeeper.Decision
	StageEvaluation Stage = "evaluation" // Data: gatekeeper.Evaluation
	StageHit        Stage = "hit"        // Data: core.HitRequest
	StageValidation Stage = "validation" // Data: core.ValidateRequest
	StageCandidate  Stage = "candidate"  // Data: CandidateReport
)

// StageEvent is what a Hook sees.
type StageEvent struct {
	Stage Stage
	RunID string
	Data  any
	Err   error
}

// Hook observes the stages of the loop. It runs synchronously; keep it fast.
type Hook func(ctx context.Context, ev StageEvent)

// Engine runs memex's loop around an agent run. It is safe for concurrent
// use: the random source is only used under a lock.
type Engine struct {
	notes  NoteRecaller
	store  core.MemoryPlugin
	cfg    Config
	now    func() time.Time
	rngMu  sync.Mutex
	rng    *mrand.Rand
	log    *slog.Logger
	redact *redact.Redactor
	hooks  []Hook
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithRand sets the random source of the gatekeeper's probation draw (a
// fixed seed makes decisions reproducible). The Engine serialises its use.
func WithRand(r *mrand.Rand) Option { return func(e *Engine) { e.rng = r } }

// WithLogger sets the logger (default: silent).
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithRedactor sets the secret redactor used for candidates (default
// redact.New()).
func WithRedactor(r *redact.Redactor) Option { return func(e *Engine) { e.redact = r } }

// WithHook adds a stage observer. Hooks run in the order they were added.
func WithHook(h Hook) Option { return func(e *Engine) { e.hooks = append(e.hooks, h) } }

// NoteRecaller recalls the scoped entries (docs/SCOPES.md) to render with
// a task's QAs; cmd/memex builds it from the namespaced store and the
// [scopes] config. A failure is logged and the run goes on without notes.
type NoteRecaller func(ctx context.Context, t Task, runID string) ([]gatekeeper.Note, error)

// WithNotes makes Pre recall scoped entries into the memory block, within
// the same MemoryTimeout as the search.
func WithNotes(r NoteRecaller) Option { return func(e *Engine) { e.notes = r } }

// New returns an engine over store. store may be nil: memory is then off
// and every run goes ahead with the plain query (fail open).
func New(store core.MemoryPlugin, cfg Config, opts ...Option) *Engine {
	if cfg.MemoryTimeout <= 0 {
		cfg.MemoryTimeout = DefaultMemoryTimeout
	}
	e := &Engine{store: store, cfg: cfg, now: time.Now}
	for _, o := range opts {
		o(e)
	}
	if e.rng == nil {
		e.rng = mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64()))
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.redact == nil {
		e.redact = redact.New()
	}
	return e
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Task is one agent run to prepare.
type Task struct {
	ProjectID string
	Query     string
	// RunID names the run (the embedded store's evidence source); empty →
	// a fresh one.
	RunID string
	// NoMemory skips memory for this run (--no-memory).
	NoMemory bool
	// SystemPrompt: the backend takes a system prompt, so what is placed
	// there (notes of a scope placed system_prompt, or the whole block
	// with [prompt_inject] placement "system") renders into
	// PreResult.System; otherwise everything goes before the query.
	SystemPrompt bool
}

// PreResult is what Pre decided.
type PreResult struct {
	RunID     string `json:"run_id"`
	ProjectID string `json:"project_id"`
	Query     string `json:"query"`
	// Prompt is what the agent gets: the memory block, then the query.
	Prompt string `json:"prompt"`
	// System is the part of the memory block for the backend's system
	// prompt (Task.SystemPrompt); empty when nothing goes there.
	System string         `json:"system,omitempty"`
	Grade  core.TaskGrade `json:"grade"`
	// Skipped says why memory was not searched ("disabled", "no_memory",
	// "no_store", "l0_task"), empty when it was.
	Skipped  string              `json:"skipped,omitempty"`
	Matches  []core.Match        `json:"matches"`
	Decision gatekeeper.Decision `json:"decision"`
	Block    gatekeeper.Block    `json:"block"`
	// Shown are exactly the ids rendered into the block.
	Shown []string `json:"shown"`
	// Notes are the scoped entries recalled for the block (WithNotes).
	Notes []gatekeeper.Note `json:"notes,omitempty"`
	// MemoryErr is the search error memory failed open on (nil when fine).
	MemoryErr      error         `json:"-"`
	SearchDuration time.Duration `json:"search_duration"`
}

// Pre grades the task, searches the memory (bounded by MemoryTimeout,
// failing open), lets the gatekeeper choose and render the items, and
// merges the block with the query. Its error is non-nil only for a bad
// task (empty query, invalid project) or a cancelled ctx; memory problems
// are in PreResult.MemoryErr.
func (e *Engine) Pre(ctx context.Context, t Task) (PreResult, error) {
	res := PreResult{RunID: t.RunID, ProjectID: t.ProjectID, Query: t.Query, Prompt: t.Query, Shown: []string{}}
	if res.RunID == "" {
		res.RunID = NewID("run")
	}
	if strings.TrimSpace(t.Query) == "" {
		return res, fmt.Errorf("engine: pre: %w", core.Invalid("query", "is empty"))
	}
	if err := core.ValidateProjectID(t.ProjectID); err != nil {
		return res, fmt.Errorf("engine: pre: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("engine: pre: %w", err)
	}
	res.Grade = core.GradeTask(t.Query)
	e.emit(ctx, StageEvent{Stage: StageGrade, RunID: res.RunID, Data: res.Grade})

	switch {
	case !e.cfg.Enabled:
		res.Skipped = "disabled"
	case t.NoMemory:
		res.Skipped = "no_memory"
	case e.store == nil:
		res.Skipped = "no_store"
	case e.cfg.SkipL0 && res.Grade.TaskLevel == "L0":
		res.Skipped = "l0_task"
	}
	if res.Skipped != "" {
		e.emit(ctx, StageEvent{Stage: StageSearch, RunID: res.RunID, Data: []core.Match{}})
		return res, nil
	}

	start := e.now()
	sctx, cancel := context.WithTimeout(ctx, e.cfg.MemoryTimeout)
	ms, err := e.store.Search(sctx, core.SearchRequest{
		ProjectID: t.ProjectID, Query: t.Query, Limit: e.cfg.SearchLimit, MinScore: e.cfg.MinScore,
	})
	cancel()
	res.SearchDuration = e.now().Sub(start)
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("engine: pre: %w", ctx.Err())
		}
		res.MemoryErr = fmt.Errorf("memory search (%s): %w", e.store.Name(), err)
		e.log.Warn("memory search failed; running without memory", "op", "search", "project", t.ProjectID, "error", err)
		e.emit(ctx, StageEvent{Stage: StageSearch, RunID: res.RunID, Data: []core.Match{}, Err: res.MemoryErr})
		return res, nil
	}
	if ms == nil {
		ms = []core.Match{}
	}
	res.Matches = ms
	e.emit(ctx, StageEvent{Stage: StageSearch, RunID: res.RunID, Data: ms})

	now := e.now()
	e.rngMu.Lock()
	res.Decision = gatekeeper.Select(ms, e.cfg.Gatekeeper, now, e.rng)
	e.rngMu.Unlock()
	if e.notes != nil {
		nctx, cancel := context.WithTimeout(ctx, e.cfg.MemoryTimeout)
		notes, err := e.notes(nctx, t, res.RunID)
		cancel()
		if err != nil {
			e.log.Warn("recalling scoped notes failed; running without them", "op", "notes", "project", t.ProjectID, "error", err)
		}
		res.Notes = notes
	}
	sys, user := gatekeeper.RenderPlaced(res.Decision.Items, res.Notes, e.cfg.Gatekeeper, now, t.SystemPrompt)
	res.Block, res.System = user, sys.Text
	if sys.Text != "" {
		// Placement "system": the block, QAs and notes, is the system part.
		res.Block.Shown = append(sys.Shown, res.Block.Shown...)
		res.Block.Notes = append(sys.Notes, res.Block.Notes...)
		res.Block.Omitted += sys.Omitted
	}
	if res.Block.Shown != nil {
		res.Shown = res.Block.Shown
	}
	res.Prompt = gatekeeper.MergePrompt(res.Block.Text, t.Query)
	e.emit(ctx, StageEvent{Stage: StageDecision, RunID: res.RunID, Data: res.Decision})
	return res, nil
}

// PostInput is what Post needs: the Pre result and what happened in the run.
type PostInput struct {
	Pre     PreResult
	Outcome gatekeeper.Outcome
}

// CandidateReport is the candidate stage's outcome.
type CandidateReport struct {
	// Skipped says why no candidate was stored: memory_off,
	// memory_unavailable (the search failed), disabled, run_failed,
	// gave_up (the answer says the task was not done), no_evidence (the
	// run showed no real success), l0_task (a trivial task), covered (a
	// used QA covers the query), write_failed, or extract's reason. Empty
	// when one was stored.
	Skipped string                 `json:"skipped,omitempty"`
	Request *core.CandidateRequest `json:"request,omitempty"`
	Result  *core.CandidateResult  `json:"result,omitempty"`
}

// PostResult is what Post recorded.
type PostResult struct {
	Evaluation  gatekeeper.Evaluation  `json:"evaluation"`
	Hit         *core.HitRequest       `json:"hit,omitempty"`
	HitResult   *core.HitResult        `json:"hit_result,omitempty"`
	Validations []core.ValidateRequest `json:"validations"`
	Records     []core.Record          `json:"records"`
	Candidate   CandidateReport        `json:"candidate"`
	// Errors are the memory writes that failed. They are reported, never
	// fatal: the run's exit code stands.
	Errors []error `json:"-"`

	candidateErr error // the candidate write's error, for the stage hook
}

// Post evaluates the run (SPEC §3.3) and records what it proves: one hit
// report for the shown items, one validation per used item, and a
// candidate when the run passed and no used QA covers the query (§3.4),
// carrying the run's result and strength as its first evidence. Every write
// carries a fresh EventID and the RunID. Write failures are collected in
// PostResult.Errors; the returned error is non-nil only when ctx is done.
func (e *Engine) Post(ctx context.Context, in PostInput) (PostResult, error) {
	pre := in.Pre
	var res PostResult
	res.Evaluation = gatekeeper.EvaluateRun(pre.Shown, in.Outcome)
	e.emit(ctx, StageEvent{Stage: StageEvaluation, RunID: pre.RunID, Data: res.Evaluation})
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("engine: post: %w", err)
	}
	// A store that failed the search is not asked again: the run already
	// paid one memory timeout (SPEC §10: an unreachable memory adds at most
	// memory.timeout). The search error was reported by Pre. A store with an
	// outbox (Spooler, outbox.go) is the exception: it spools the records at
	// once for later delivery.
	memoryOn := e.store != nil && e.cfg.Enabled && pre.Skipped != "disabled" && pre.Skipped != "no_memory" &&
		(pre.MemoryErr == nil || e.spoolAfterSearchFailure(pre)) // outbox: see outbox.go
	down := false

	// Build every record first, then write: in one atomic call when the
	// store is a core.RunRecorder (one commit per run), else one by one.
	var valReqs []core.ValidateRequest
	if memoryOn {
		receipts := receiptsOf(pre.Matches)
		if req, ok := core.BuildHitRequest(pre.ProjectID, pre.RunID, NewID("ev"), pre.Shown, res.Evaluation.Used); ok {
			// The hit quotes the search's receipt (any shown match's receipt
			// names it); a service that requires receipts weighs reports
			// without one at zero (SPEC §5.4).
			for _, id := range pre.Shown {
				if r := receipts[id]; r != "" {
					req.ReceiptID = r
					break
				}
			}
			res.Hit = &req
		}
		for _, v := range res.Evaluation.Validations {
			req := core.BuildValidateRequest(pre.ProjectID, v.QAID, pre.RunID, NewID("ev"), v.Result, v.Strength,
				core.RunContext{ExitCode: in.Outcome.ExitCode, Duration: in.Outcome.Duration, Reason: string(v.Strength)}, e.now())
			req.ReceiptID = receipts[v.QAID]
			valReqs = append(valReqs, req)
		}
		res.Validations = valReqs
	}
	res.Candidate = e.candidateRequest(in, res.Evaluation, memoryOn)

	if rr, ok := core.As[core.RunRecorder](e.store); ok && memoryOn {
		e.recordRun(ctx, rr, &res, &down)
	} else if memoryOn {
		e.recordEach(ctx, &res, &down)
	}

	e.emit(ctx, StageEvent{Stage: StageCandidate, RunID: pre.RunID, Data: res.Candidate, Err: res.candidateErr})
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("engine: post: %w", err)
	}
	return res, nil
}

// recordRun writes the run's records in one RecordRun call. All or nothing:
// on an error every part reports it.
func (e *Engine) recordRun(ctx context.Context, rr core.RunRecorder, res *PostResult, down *bool) {
	runID := ""
	report := core.RunReport{Hit: res.Hit, Validations: res.Validations, Candidate: res.Candidate.Request}
	if report.Hit == nil && len(report.Validations) == 0 && report.Candidate == nil {
		return
	}
	var out core.RunRecords
	err := e.write(ctx, down, func(c context.Context) (err error) { out, err = rr.RecordRun(c, report); return err })
	if errors.Is(err, core.ErrNotFound) {
		// A QA vanished since the search (deleted meanwhile): the atomic
		// report stored nothing, so record the parts that still apply one
		// by one (their event ids keep them exactly once).
		e.recordEach(ctx, res, down)
		return
	}
	if res.Hit != nil {
		runID = res.Hit.RunID
		if err != nil {
			res.Errors = append(res.Errors, fmt.Errorf("record hit: %w", err))
		} else {
			res.HitResult = out.Hit
		}
		e.emit(ctx, StageEvent{Stage: StageHit, RunID: runID, Data: *res.Hit, Err: err})
	}
	for i, v := range res.Validations {
		if err != nil {
			res.Errors = append(res.Errors, fmt.Errorf("record validation %s: %w", v.QAID, err))
		} else if i < len(out.Records) {
			res.Records = append(res.Records, out.Records[i])
		}
		e.emit(ctx, StageEvent{Stage: StageValidation, RunID: v.RunID, Data: v, Err: err})
	}
	if res.Candidate.Request != nil {
		if err != nil {
			res.Candidate.Skipped = "write_failed"
			res.candidateErr = err
			res.Errors = append(res.Errors, fmt.Errorf("record candidate: %w", err))
		} else {
			res.Candidate.Result = out.Candidate
		}
	}
}

// recordEach writes the run's records one call at a time.
func (e *Engine) recordEach(ctx context.Context, res *PostResult, down *bool) {
	if res.Hit != nil {
		req := *res.Hit
		var hr core.HitResult
		err := e.write(ctx, down, func(c context.Context) (err error) { hr, err = e.store.RecordHit(c, req); return err })
		if err != nil {
			res.Errors = append(res.Errors, fmt.Errorf("record hit: %w", err))
		} else {
			res.HitResult = &hr
		}
		e.emit(ctx, StageEvent{Stage: StageHit, RunID: req.RunID, Data: req, Err: err})
	}
	for _, req := range res.Validations {
		var rec core.Record
		err := e.write(ctx, down, func(c context.Context) (err error) { rec, err = e.store.RecordValidation(c, req); return err })
		if err != nil {
			res.Errors = append(res.Errors, fmt.Errorf("record validation %s: %w", req.QAID, err))
		} else {
			res.Records = append(res.Records, rec)
		}
		e.emit(ctx, StageEvent{Stage: StageValidation, RunID: req.RunID, Data: req, Err: err})
	}
	if req := res.Candidate.Request; req != nil {
		var cr core.CandidateResult
		if err := e.write(ctx, down, func(c context.Context) (err error) { cr, err = e.store.RecordCandidate(c, *req); return err }); err != nil {
			res.Candidate.Skipped = "write_failed"
			res.candidateErr = err
			res.Errors = append(res.Errors, fmt.Errorf("record candidate: %w", err))
			e.log.Warn("record candidate failed", "op", "candidate", "project", req.ProjectID, "error", err)
		} else {
			res.Candidate.Result = &cr
		}
	}
}

// candidateRequest runs extraction and builds the candidate to send (the
// report's Request), or says why there is none.
func (e *Engine) candidateRequest(in PostInput, ev gatekeeper.Evaluation, memoryOn bool) CandidateReport {
	pre := in.Pre
	switch {
	case in.Pre.MemoryErr != nil && !e.spoolAfterSearchFailure(in.Pre):
		return CandidateReport{Skipped: "memory_unavailable"}
	case !memoryOn:
		return CandidateReport{Skipped: "memory_off"}
	case !e.cfg.Candidates:
		return CandidateReport{Skipped: "disabled"}
	case !ev.Passed:
		return CandidateReport{Skipped: "run_failed"}
	case ev.GaveUp:
		return CandidateReport{Skipped: "gave_up"}
	case !ev.Learnable:
		return CandidateReport{Skipped: "no_evidence"}
	case pre.Grade.TaskLevel == "L0":
		// A trivial task teaches nothing worth remembering (SPEC §3.5).
		return CandidateReport{Skipped: "l0_task"}
	case len(ev.Used) > 0:
		return CandidateReport{Skipped: "covered"}
	}
	verifyPassed := in.Outcome.Verify != nil && in.Outcome.Verify.ExitCode == 0
	c, ok, reason := extract.Extract(extract.Input{
		Query:        pre.Query,
		Events:       in.Outcome.Events,
		Passed:       ev.Learnable,
		Strength:     ev.Strength,
		VerifyPassed: verifyPassed,
		Covered:      !pre.Decision.WriteCandidate && len(pre.Matches) > 0,
		MemoryBlock:  strings.TrimSpace(pre.System + "\n" + pre.Block.Text),
	}, e.cfg.Extract, e.redact)
	if !ok {
		return CandidateReport{Skipped: reason}
	}
	if c.Quarantined {
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
		c.Metadata["quarantined"] = true
	}
	req := core.BuildCandidateRequest(pre.ProjectID, pre.RunID, NewID("ev"), c.Question, c.Answer, c.Tags, c.Confidence,
		c.Metadata, &core.Evidence{Result: ev.Result, Strength: ev.Strength})
	return CandidateReport{Request: &req}
}

// write runs one memory write bounded by MemoryTimeout. Once a write finds
// the store unavailable (or timed out), *down is set and the remaining
// writes of the run are skipped at once, so a hung store costs one
// timeout, not one per write.
func (e *Engine) write(ctx context.Context, down *bool, f func(context.Context) error) error {
	if *down {
		return fmt.Errorf("skipped after an earlier failure: %w", core.ErrUnavailable)
	}
	wctx, cancel := context.WithTimeout(ctx, e.cfg.MemoryTimeout)
	defer cancel()
	err := f(wctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("timed out after %s: %w", e.cfg.MemoryTimeout, core.ErrUnavailable)
	}
	if errors.Is(err, core.ErrUnavailable) && !spooled(err) { // a spooling store takes the rest at once
		*down = true
	}
	return err
}

// receiptsOf maps each match's qa_id to the receipt the search issued for it.
func receiptsOf(ms []core.Match) map[string]string {
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		if m.ReceiptID != "" {
			out[m.QAID] = m.ReceiptID
		}
	}
	return out
}

func (e *Engine) emit(ctx context.Context, ev StageEvent) {
	for _, h := range e.hooks {
		h(ctx, ev)
	}
}

// NewID returns a fresh random id "<prefix>-<26 base32 chars>", valid as a
// qa_id, run id or event id.
func NewID(prefix string) string {
	return prefix + "-" + strings.ToLower(rand.Text())
}
