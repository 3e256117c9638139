package engine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/agent"
	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/gatekeeper"
	"github.com/memex-dev/memex/plugins/embedded"
)

// fakeStore is a function-field MemoryPlugin for error paths; nil fields
// answer with nothing. It records every write.
type fakeStore struct {
	search         func(ctx context.Context, req core.SearchRequest) ([]core.Match, error)
	writeErr       error
	mu             sync.Mutex
	searches       int
	hits           []core.HitRequest
	vals           []core.ValidateRequest
	cands          []core.CandidateRequest
	blockUntilDone bool
}

var _ core.MemoryPlugin = (*fakeStore)(nil)

func (f *fakeStore) Name() string { return "fake" }

func (f *fakeStore) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	f.mu.Lock()
	f.searches++
	f.mu.Unlock()
	if f.search != nil {
		return f.search(ctx, req)
	}
	return nil, nil
}

func (f *fakeStore) RecordHit(ctx context.Context, req core.HitRequest) (core.HitResult, error) {
	f.mu.Lock()
	f.hits = append(f.hits, req)
	f.mu.Unlock()
	if f.blockUntilDone {
		<-ctx.Done()
		return core.HitResult{}, ctx.Err()
	}
	return core.HitResult{Updated: len(req.References)}, f.writeErr
}

func (f *fakeStore) RecordCandidate(_ context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	f.mu.Lock()
	f.cands = append(f.cands, req)
	f.mu.Unlock()
	if f.writeErr != nil {
		return core.CandidateResult{}, f.writeErr
	}
	return core.CandidateResult{QAID: "qa-new", Status: core.StatusCandidate}, nil
}

func (f *fakeStore) RecordValidation(_ context.Context, req core.ValidateRequest) (core.Record, error) {
	f.mu.Lock()
	f.vals = append(f.vals, req)
	f.mu.Unlock()
	return core.Record{QAID: req.QAID}, f.writeErr
}

func (f *fakeStore) TaskGrade(_ context.Context, req core.TaskGradeRequest) (core.TaskGrade, error) {
	return core.GradeTask(req.Prompt), nil
}

const query = "how do I find a data race in my Go tests?"

func newEngine(t testing.TB, s core.MemoryPlugin, mutate func(*engine.Config), opts ...engine.Option) *engine.Engine {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.MemoryTimeout = 200 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	opts = append([]engine.Option{engine.WithRand(rand.New(rand.NewPCG(1, 2)))}, opts...)
	return engine.New(s, cfg, opts...)
}

// trustedMatch is a QA the gatekeeper injects in the trusted set.
func trustedMatch(id string) core.Match {
	return core.Match{QAID: id, ProjectID: "p", Question: query, Answer: "Run go test -race ./... and read both stacks.",
		Relevance: 0.9, Trust: 0.8, Freshness: 1, ValidationLevel: 2, Level: "L2", Status: core.StatusActive,
		Alpha: 8, Beta: 2, Tags: []string{}, UpdatedAt: time.Now()}
}

func passingRun(text string) gatekeeper.Outcome {
	return gatekeeper.Outcome{
		ExitCode: 0, Duration: time.Second,
		Events: []core.Event{{Kind: core.EventResult, Seq: 0, Text: text}},
		Verify: &gatekeeper.VerifyResult{Command: "true", ExitCode: 0},
	}
}

func TestPreFailsOpen(t *testing.T) {
	tests := []struct {
		name   string
		search func(ctx context.Context, req core.SearchRequest) ([]core.Match, error)
		want   error
	}{
		{"store error", func(context.Context, core.SearchRequest) ([]core.Match, error) {
			return nil, core.ErrUnavailable
		}, core.ErrUnavailable},
		{"store hangs past the timeout", func(ctx context.Context, _ core.SearchRequest) ([]core.Match, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeStore{search: tt.search}
			e := newEngine(t, s, nil)
			start := time.Now()
			pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query})
			if err != nil {
				t.Fatalf("Pre returned %v; memory must fail open", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Pre took %s, want about the 200ms memory timeout", d)
			}
			if pre.Prompt != query {
				t.Errorf("prompt = %q, want the original query", pre.Prompt)
			}
			if !errors.Is(pre.MemoryErr, tt.want) {
				t.Errorf("MemoryErr = %v, want %v", pre.MemoryErr, tt.want)
			}
			if len(pre.Shown) != 0 {
				t.Errorf("shown %v after a failed search", pre.Shown)
			}
			// Post does not wait on the failed store a second time.
			post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun(strings.Repeat("a long enough answer ", 5))})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.hits)+len(s.vals)+len(s.cands) != 0 || post.Candidate.Skipped != "memory_unavailable" {
				t.Errorf("post wrote to the failed store: %d hits %d validations %d candidates (skipped %q)",
					len(s.hits), len(s.vals), len(s.cands), post.Candidate.Skipped)
			}
		})
	}
}

func TestPreSkipsSearch(t *testing.T) {
	tests := []struct {
		name   string
		task   engine.Task
		cfg    func(*engine.Config)
		noStor bool
		want   string
	}{
		{"disabled", engine.Task{Query: query}, func(c *engine.Config) { c.Enabled = false }, false, "disabled"},
		{"no memory flag", engine.Task{Query: query, NoMemory: true}, nil, false, "no_memory"},
		{"no store", engine.Task{Query: query}, nil, true, "no_store"},
		{"L0 task", engine.Task{Query: "translate this sentence to French"}, nil, false, "l0_task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeStore{search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
				return []core.Match{trustedMatch("qa-1")}, nil
			}}
			var store core.MemoryPlugin = s
			if tt.noStor {
				store = nil
			}
			e := newEngine(t, store, tt.cfg)
			tt.task.ProjectID = "p"
			pre, err := e.Pre(t.Context(), tt.task)
			if err != nil {
				t.Fatal(err)
			}
			if pre.Skipped != tt.want || s.searches != 0 || pre.Prompt != tt.task.Query {
				t.Errorf("skipped %q (want %q), searches %d, prompt changed %v", pre.Skipped, tt.want, s.searches, pre.Prompt != tt.task.Query)
			}
		})
	}
	t.Run("L0 searched when skip_l0 is off", func(t *testing.T) {
		s := &fakeStore{}
		e := newEngine(t, s, func(c *engine.Config) { c.SkipL0 = false })
		if _, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: "translate this sentence to French"}); err != nil {
			t.Fatal(err)
		}
		if s.searches != 1 {
			t.Errorf("searches = %d, want 1", s.searches)
		}
	})
}

func TestPreBadTask(t *testing.T) {
	e := newEngine(t, &fakeStore{}, nil)
	for _, task := range []engine.Task{{ProjectID: "p", Query: "  "}, {ProjectID: "Bad Project!", Query: query}} {
		if _, err := e.Pre(t.Context(), task); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Pre(%+v) = %v, want ErrInvalid", task, err)
		}
	}
}

func TestPreInjectsAndPostRecords(t *testing.T) {
	s := &fakeStore{search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
		return []core.Match{trustedMatch("qa-1")}, nil
	}}
	var stages []engine.Stage
	e := newEngine(t, s, nil, engine.WithHook(func(_ context.Context, ev engine.StageEvent) { stages = append(stages, ev.Stage) }))
	pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query, RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pre.Shown) != 1 || pre.Shown[0] != "qa-1" {
		t.Fatalf("shown = %v, want [qa-1]", pre.Shown)
	}
	if !strings.Contains(pre.Prompt, "[QA_REF qa-1]") || !strings.HasSuffix(pre.Prompt, query) {
		t.Errorf("merged prompt lacks the block or the query:\n%s", pre.Prompt)
	}
	post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun("Used memory [QA_REF qa-1]: run go test -race.")})
	if err != nil {
		t.Fatal(err)
	}
	if len(post.Errors) != 0 {
		t.Fatalf("post errors: %v", post.Errors)
	}
	if len(s.hits) != 1 || !s.hits[0].References[0].Used || s.hits[0].RunID != "run-1" {
		t.Errorf("hits = %+v, want one used reference from run-1", s.hits)
	}
	if len(s.vals) != 1 || s.vals[0].QAID != "qa-1" || s.vals[0].Result != "pass" || s.vals[0].SignalStrength != "strong" {
		t.Errorf("validations = %+v, want one strong pass of qa-1", s.vals)
	}
	if len(s.cands) != 0 || post.Candidate.Skipped != "covered" {
		t.Errorf("a used QA covers the query, yet candidate %+v (skipped %q)", s.cands, post.Candidate.Skipped)
	}
	ids := map[string]bool{s.hits[0].EventID: true, s.vals[0].EventID: true}
	if len(ids) != 2 || ids[""] {
		t.Errorf("event ids not fresh and distinct: %v", ids)
	}
	want := []engine.Stage{engine.StageGrade, engine.StageSearch, engine.StageDecision, engine.StageEvaluation,
		engine.StageHit, engine.StageValidation, engine.StageCandidate}
	if strings.Join(stageNames(stages), ",") != strings.Join(stageNames(want), ",") {
		t.Errorf("stages = %v, want %v", stages, want)
	}
}

func stageNames(ss []engine.Stage) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func TestPostCandidate(t *testing.T) {
	answer := "Run go test -race ./... to find it; the report shows both goroutines. Guard the map with a mutex."
	tests := []struct {
		name    string
		outcome gatekeeper.Outcome
		want    bool
	}{
		{"passing run", passingRun(answer), true},
		{"failing verify", func() gatekeeper.Outcome {
			o := passingRun(answer)
			o.Verify.ExitCode = 1
			return o
		}(), false},
		{"failing agent", func() gatekeeper.Outcome {
			o := passingRun(answer)
			o.ExitCode = 2
			o.Verify = nil
			return o
		}(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeStore{}
			e := newEngine(t, s, nil)
			pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query, RunID: "run-7"})
			if err != nil {
				t.Fatal(err)
			}
			post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: tt.outcome})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(s.cands) == 1; got != tt.want {
				t.Fatalf("candidate sent = %v, want %v (skipped %q)", got, tt.want, post.Candidate.Skipped)
			}
			if !tt.want {
				return
			}
			c := s.cands[0]
			if c.RunID != "run-7" || c.EventID == "" || c.Evidence == nil || c.Evidence.Result != core.ResultPass || c.Evidence.Strength != core.StrengthStrong {
				t.Errorf("candidate lacks the run's id, event id or strong pass evidence: %+v", c)
			}
			if c.Question != query {
				t.Errorf("question = %q, want the query", c.Question)
			}
		})
	}
}

func TestPostWriteErrorsReported(t *testing.T) {
	s := &fakeStore{writeErr: core.ErrUnavailable, search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
		return []core.Match{trustedMatch("qa-1")}, nil
	}}
	e := newEngine(t, s, nil)
	pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query})
	if err != nil {
		t.Fatal(err)
	}
	post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun("Used [QA_REF qa-1] and it worked fine.")})
	if err != nil {
		t.Fatalf("Post returned %v; write errors must be reported, not fatal", err)
	}
	if len(post.Errors) != 2 {
		t.Fatalf("errors = %v, want the hit and the validation", post.Errors)
	}
	for _, e := range post.Errors {
		if !errors.Is(e, core.ErrUnavailable) {
			t.Errorf("error %v does not wrap ErrUnavailable", e)
		}
	}
}

func TestPostWriteTimeout(t *testing.T) {
	s := &fakeStore{blockUntilDone: true, search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
		return []core.Match{trustedMatch("qa-1")}, nil
	}}
	e := newEngine(t, s, func(c *engine.Config) { c.MemoryTimeout = 50 * time.Millisecond })
	pre, _ := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query})
	start := time.Now()
	post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun(
		"Run go test -race ./... to find it; the report shows both goroutines. Guard the map with a mutex.")})
	if err != nil {
		t.Fatal(err)
	}
	if post.Candidate.Request == nil {
		t.Fatalf("no candidate extracted (test setup): %q", post.Candidate.Skipped)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("post took %s with a 50ms memory timeout", d)
	}
	if len(post.Errors) == 0 || !errors.Is(post.Errors[0], core.ErrUnavailable) {
		t.Errorf("a hanging write is not reported as unavailable: %v", post.Errors)
	}
	if len(s.cands) != 0 {
		t.Errorf("the candidate write waited on a store that already timed out")
	}
}

// TestLoopOnEmbeddedStore runs three runs of the loop on the real embedded
// store: a candidate from run 1, injected and cited in run 2 (trust and
// level rise), trusted in run 3.
func TestLoopOnEmbeddedStore(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "memex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := newEngine(t, st, nil)
	answer := "Run go test -race ./... to find it; the report shows both goroutines. Guard the map with a mutex."

	pre1, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query})
	if err != nil {
		t.Fatal(err)
	}
	post1, err := e.Post(t.Context(), engine.PostInput{Pre: pre1, Outcome: passingRun(answer)})
	if err != nil || len(post1.Errors) > 0 || post1.Candidate.Result == nil {
		t.Fatalf("run 1: %v %v, candidate %+v", err, post1.Errors, post1.Candidate)
	}
	id := post1.Candidate.Result.QAID
	before, err := st.Get(t.Context(), "p", id)
	if err != nil {
		t.Fatal(err)
	}

	pre2, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query})
	if err != nil {
		t.Fatal(err)
	}
	if len(pre2.Shown) != 1 || pre2.Shown[0] != id {
		t.Fatalf("run 2 shown %v, want [%s] (probation slot)", pre2.Shown, id)
	}
	post2, err := e.Post(t.Context(), engine.PostInput{Pre: pre2, Outcome: passingRun("From memory [QA_REF " + id + "]: " + answer)})
	if err != nil || len(post2.Errors) > 0 {
		t.Fatalf("run 2: %v %v", err, post2.Errors)
	}
	after, err := st.Get(t.Context(), "p", id)
	if err != nil {
		t.Fatal(err)
	}
	if after.TrustScore <= before.TrustScore || after.ValidationLevel <= before.ValidationLevel {
		t.Errorf("trust %.3f → %.3f, level %d → %d: want both to rise", before.TrustScore, after.TrustScore, before.ValidationLevel, after.ValidationLevel)
	}
	if after.UseCount != 1 || after.UsageCount != 1 {
		t.Errorf("shown %d used %d, want 1 and 1", after.UsageCount, after.UseCount)
	}

	pre3, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query})
	if err != nil {
		t.Fatal(err)
	}
	if len(pre3.Decision.Items) != 1 || pre3.Decision.Items[0].Probation {
		t.Errorf("run 3 did not inject %s as trusted: %+v", id, pre3.Decision.Items)
	}
}

// TestConcurrentPre: one Engine serves many runs at once (the race detector
// checks the shared random source).
func TestConcurrentPre(t *testing.T) {
	s := &fakeStore{search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
		m := trustedMatch("qa-new")
		m.ValidationLevel, m.Trust, m.Alpha, m.Beta = 0, 0.3, 3, 3
		return []core.Match{trustedMatch("qa-1"), m}, nil
	}}
	e := newEngine(t, s, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if s.searches != 160 {
		t.Errorf("searches = %d, want 160", s.searches)
	}
}

// TestPostQuotesReceipts: reports quote the receipts the search issued, so a
// service that requires receipts counts them (SPEC §5.4).
func TestPostQuotesReceipts(t *testing.T) {
	m := trustedMatch("qa-1")
	m.ReceiptID = "rcpt-9.0"
	s := &fakeStore{search: func(context.Context, core.SearchRequest) ([]core.Match, error) { return []core.Match{m}, nil }}
	e := newEngine(t, s, nil)
	pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query, RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun("Used [QA_REF qa-1].")}); err != nil {
		t.Fatal(err)
	}
	if len(s.hits) != 1 || s.hits[0].ReceiptID != "rcpt-9.0" {
		t.Errorf("hit receipt = %+v, want rcpt-9.0", s.hits)
	}
	if len(s.vals) != 1 || s.vals[0].ReceiptID != "rcpt-9.0" {
		t.Errorf("validation receipt = %+v, want rcpt-9.0", s.vals)
	}
}

// runRecorder is a fakeStore that also records whole runs.
type runRecorder struct {
	*fakeStore
	runs []core.RunReport
}

func (r *runRecorder) RecordRun(_ context.Context, rep core.RunReport) (core.RunRecords, error) {
	r.runs = append(r.runs, rep)
	out := core.RunRecords{}
	if rep.Hit != nil {
		out.Hit = &core.HitResult{Updated: len(rep.Hit.References)}
	}
	for _, v := range rep.Validations {
		out.Records = append(out.Records, core.Record{QAID: v.QAID})
	}
	return out, nil
}

// TestPostOneWriteWithRunRecorder: a store that records whole runs gets the
// hit and the validation in one call, not one call each.
func TestPostOneWriteWithRunRecorder(t *testing.T) {
	fs := &fakeStore{search: func(context.Context, core.SearchRequest) ([]core.Match, error) {
		return []core.Match{trustedMatch("qa-1")}, nil
	}}
	s := &runRecorder{fakeStore: fs}
	e := newEngine(t, s, nil)
	pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: query, RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: passingRun("Used [QA_REF qa-1].")})
	if err != nil || len(post.Errors) != 0 {
		t.Fatalf("post: %v %v", err, post.Errors)
	}
	if len(s.runs) != 1 || s.runs[0].Hit == nil || len(s.runs[0].Validations) != 1 {
		t.Fatalf("RecordRun calls = %+v, want one with the hit and one validation", s.runs)
	}
	if len(fs.hits) != 0 || len(fs.vals) != 0 {
		t.Errorf("single writes were made too: hits %d validations %d", len(fs.hits), len(fs.vals))
	}
	if post.HitResult == nil || len(post.Records) != 1 {
		t.Errorf("post result not filled from RecordRun: %+v", post)
	}
}

// TestPostLearnsOnlyFromSuccess: a run that exits 0 but whose tools failed
// after the last edit, or whose answer gives up, is no pass and stores no
// candidate (the gemini failing_command transcript is one); neither does a
// trivial (L0) task.
func TestPostLearnsOnlyFromSuccess(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "agent", "testdata", "gemini", "failing_command.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	failing, err := agent.ParseStream(agent.FormatGemini, f)
	if err != nil {
		t.Fatal(err)
	}
	ok := true
	gaveUp := []core.Event{{Kind: core.EventResult, OK: &ok, Text: "I could not deploy the service: the registry rejects the image, so nothing changed."}}
	tests := []struct {
		name, query string
		events      []core.Event
		skipped     string
	}{
		{"tools failed after the last edit", "add a CHANGELOG entry and run the release check", failing, "run_failed"},
		{"the answer gives up", "deploy the billing service to staging", gaveUp, "run_failed"},
		{"L0 task", "translate this sentence to French: the cache is warm", []core.Event{{Kind: core.EventResult, OK: &ok, Text: "Le cache est chaud, et il le restera toute la journée."}}, "l0_task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeStore{}
			e := newEngine(t, s, nil)
			pre, err := e.Pre(t.Context(), engine.Task{ProjectID: "p", Query: tt.query})
			if err != nil {
				t.Fatal(err)
			}
			post, err := e.Post(t.Context(), engine.PostInput{Pre: pre, Outcome: gatekeeper.Outcome{Events: tt.events}})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.cands) != 0 || post.Candidate.Skipped != tt.skipped {
				t.Fatalf("candidate %+v stored %d, want none (skipped %q); evaluation %+v", post.Candidate, len(s.cands), tt.skipped, post.Evaluation)
			}
		})
	}
}
