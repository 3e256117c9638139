package core

import (
	"context"
	"time"
)

// MemoryPlugin is a memory backend: the embedded store, Redis, or a remote
// memex service over HTTP. Every implementation passes core/coretest.
//
// The contract, for every method:
//   - ctx comes first. A cancelled or expired ctx makes the method return
//     promptly with an error wrapping ctx.Err().
//   - Implementations are safe for concurrent use by multiple goroutines,
//     and counters stay exact under concurrency (no lost updates).
//   - Errors wrap the sentinels of this package: ErrInvalid (a *FieldError
//     naming the field) for a request that fails Validate, ErrNotFound for a
//     missing or invisible QA, ErrUnavailable for a store that cannot answer
//     now, ErrForbidden/ErrUnauthorized for remote access control.
//   - No error message contains request text (question, answer, query): it
//     may hold a secret. Messages carry ids, counts and field names.
//   - The principal in ctx (WithPrincipal) is the evidence source of a
//     report; without one the store uses the request's RunID, else "local".
type MemoryPlugin interface {
	// Name is the plugin's short name ("embedded", "redis", "http").
	Name() string

	// Search returns the QAs visible to req.ProjectID (its own, the global
	// project's, and those shared with it) whose relevance ≥ req.MinScore,
	// ordered by Rank (score descending, newer first on ties), at most
	// req.Limit (0 → DefaultSearchLimit). Deprecated QAs are never returned.
	// An empty query returns no matches and no error. Read-only.
	Search(ctx context.Context, req SearchRequest) ([]Match, error)

	// RecordHit counts each reference: shown → usage_count+1, used →
	// use_count+1 and last_used_at. Trust never changes. Unknown qa_ids are
	// skipped (not an error); Updated counts the references applied.
	// Idempotent per req.EventID: a repeated EventID changes nothing and
	// returns the first result.
	RecordHit(ctx context.Context, req HitRequest) (HitResult, error)

	// RecordCandidate stores a new QA (status candidate) and returns its id.
	// A candidate whose normalised question and answer match an existing QA
	// of the project (content hash, then near-duplicate similarity) is not
	// stored again: the result names the existing QA in DeduplicatedInto and
	// req.Evidence, if any, is recorded as a validation of it. A given
	// req.QAID is kept. Idempotent per req.EventID.
	RecordCandidate(ctx context.Context, req CandidateRequest) (CandidateResult, error)

	// RecordValidation records evidence that using a QA led to a passing or
	// failing run and returns the updated record (trust, level, status and
	// freshness recomputed by package trust). ErrNotFound when the QA does
	// not exist in req.ProjectID. Idempotent per req.EventID.
	RecordValidation(ctx context.Context, req ValidateRequest) (Record, error)

	// TaskGrade grades a prompt (SPEC §3.5). Local plugins embed
	// LocalGrader (GradeTask).
	TaskGrade(ctx context.Context, req TaskGradeRequest) (TaskGrade, error)
}

// Getter reads one record. ErrNotFound when it does not exist in project
// (a QA of the global project is found from any project).
type Getter interface {
	Get(ctx context.Context, projectID, qaID string) (Record, error)
}

// Lister pages through a project's records, newest first.
type Lister interface {
	List(ctx context.Context, req ListRequest) (ListPage, error)
}

// Deleter removes a QA from every index. ErrNotFound when absent.
type Deleter interface {
	Delete(ctx context.Context, projectID, qaID string) error
}

// Patcher applies a human verdict or edit (verified, frozen, deprecated,
// answer, tags). Human statuses are sticky until a human changes them.
type Patcher interface {
	Patch(ctx context.Context, req PatchRequest) (Record, error)
}

// Importer stores full records as they are (ids, counters and timestamps
// kept), replacing any record with the same qa_id. Every record it returns
// nil for is durable.
type Importer interface {
	Import(ctx context.Context, recs []Record) error
}

// CandidateBatcher records many candidates at once (bulk import), each
// exactly as RecordCandidate would, dedup included; results are in request
// order. All or nothing: on an error none of the batch is stored.
type CandidateBatcher interface {
	RecordCandidates(ctx context.Context, reqs []CandidateRequest) ([]CandidateResult, error)
}

// RunRecorder records everything one run reports — its hit, the
// validations of the QAs it used and its candidate — in one atomic write,
// each part exactly as RecordHit, RecordValidation and RecordCandidate would
// (idempotent per EventID). All or nothing. Nil or empty parts are skipped.
// The engine uses it when the store has it: one commit per run.
type RunRecorder interface {
	RecordRun(ctx context.Context, r RunReport) (RunRecords, error)
}

// RunReport is what one run reports.
type RunReport struct {
	Hit         *HitRequest
	Validations []ValidateRequest
	Candidate   *CandidateRequest
}

// Validate checks every part; the error names the part and the field.
func (r RunReport) Validate() error {
	if r.Hit != nil {
		if err := r.Hit.Validate(); err != nil {
			return err
		}
	}
	for _, v := range r.Validations {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	if r.Candidate != nil {
		return r.Candidate.Validate()
	}
	return nil
}

// RunRecords is what RecordRun stored.
type RunRecords struct {
	Hit       *HitResult
	Records   []Record // one per validation, in order
	Candidate *CandidateResult
}

// Expirer runs the expiry job: candidates never validated within the
// candidate TTL are deprecated, at most batch of them (batch ≤ 0: all). It
// returns how many changed; on an error, how many changed in what it
// stored before the error (a store commits the job in parts: a record, a
// chunk of records), which stay changed.
type Expirer interface {
	Expire(ctx context.Context, now time.Time, batch int) (int, error)
}

// Statser summarises a project's trust and usage (memex stats, admin API).
type Statser interface {
	Stats(ctx context.Context, projectID string) (ProjectStats, error)
}

// Pinger checks that the store answers (readyz, doctor).
type Pinger interface {
	Ping(ctx context.Context) error
}

// ProjectStats is the admin stats object (SPEC §7).
type ProjectStats struct {
	ProjectID        string         `json:"project_id"`
	Total            int            `json:"total"`
	ByStatus         map[Status]int `json:"by_status"`
	ByLevel          map[string]int `json:"by_level"`
	TrustHistogram   []int          `json:"trust_histogram"` // 10 buckets of 0.1
	Shown            int64          `json:"shown"`
	Used             int64          `json:"used"`
	UseRate          float64        `json:"use_rate"` // used / shown
	Passes           int64          `json:"passes"`
	Fails            int64          `json:"fails"`
	ValidationsByDay []DayCount     `json:"validations_by_day"`
	Top              []Record       `json:"top"`
	Worst            []Record       `json:"worst"`
	Stale            int            `json:"stale"`
	ExpiringSoon     int            `json:"expiring_soon"`
	// Quarantined counts the live (not deprecated) quarantined QAs: never
	// injected before a human or strong verdict; AwaitingReview lists the
	// newest StatsAwaiting of them.
	Quarantined    int      `json:"quarantined"`
	AwaitingReview []Record `json:"awaiting_review"`
}

// DayCount is one day of validations.
type DayCount struct {
	Day    string `json:"day"` // YYYY-MM-DD, UTC
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

// Unwrapper is a decorator: a MemoryPlugin that wraps another one (the
// secret redaction every store gets, semantic search). Unwrap returns the
// plugin it wraps.
type Unwrapper interface {
	Unwrap() MemoryPlugin
}

// As finds the optional capability T (Getter, RunRecorder, io.Closer, a
// consumer's own interface, ...) of p, looking through decorators: a
// decorator that implements T answers for itself, one that does not is
// looked through, and T is found only when the innermost plugin has it (a
// decorator implementing T forwards to it). Callers use As instead of a
// type assertion so that wrapping a store never changes what it can do.
func As[T any](p MemoryPlugin) (T, bool) {
	var zero T
	if p == nil {
		return zero, false
	}
	u, ok := p.(Unwrapper)
	if !ok {
		t, ok := p.(T)
		return t, ok
	}
	inner := u.Unwrap()
	below, ok := As[T](inner)
	if !ok {
		return zero, false
	}
	if t, ok := p.(T); ok {
		return t, true
	}
	return below, true
}

// Base is the innermost plugin of a chain of decorators.
func Base(p MemoryPlugin) MemoryPlugin {
	for {
		u, ok := p.(Unwrapper)
		if !ok {
			return p
		}
		p = u.Unwrap()
	}
}
