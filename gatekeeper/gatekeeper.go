// Package gatekeeper decides which matches an agent sees (SPEC §3.1, §5.4),
// renders them into the memory block (§3.2) and, after the run, evaluates
// what the run proves about them (§3.3). It is pure: matches, config, now
// and a random source in; decisions out. No I/O, no clock, no global rand.
//
// Select has two profiles. DefaultConfig is memex's: a trusted set ordered
// by trust × relevance plus one probation item drawn by Thompson sampling
// from the QAs' Beta trust posteriors, so new candidates get shown and
// learned about. CompatConfig reproduces the original Memex-CLI's
// prepare_inject_list exactly (level-first order, single-item fallback).
// Every decision carries machine-readable Reasons.
//
// Render produces the version-tagged [MEMORY_CONTEXT v1] block within a
// character budget, with answers fenced as quoted data. EvaluateRun finds
// the anchors the agent cited in its own text and grades the run's
// evidence with package evidence (the one grader `memex run` and the host
// hooks share).
package gatekeeper

import (
	"time"

	"github.com/memex-dev/memex/core"
)

// Orders of the inject list (Config.Order).
const (
	// OrderTrust is memex's order: the trusted set by trust × relevance
	// (SPEC §5.4).
	OrderTrust = "trust"
	// OrderLevelFirst is the original Memex-CLI's order: a stable sort by
	// (level, trust, score, freshness), descending (ORIGINAL.md §1.2). It is
	// the compatibility profile: with it, the usable filters are exactly the
	// original's (status, stale freshness, consecutive-fail block with no
	// exception for verified QAs, plus quarantine, which an original service
	// never sets), relevance and expiry are not checked client-side (the
	// search did that), and a usable match at level ≥ MinLevelInject
	// suppresses the candidate.
	OrderLevelFirst = "level_first"
)

// Config holds the gatekeeper's knobs (config section [gatekeeper] and
// [prompt_inject]). Zero or negative MaxItems and MaxAnswerChars mean no
// limit; a zero MaxBlockChars means DefaultMaxBlockChars.
type Config struct {
	ActiveStatuses           []core.Status // usable statuses (compat: active, verified)
	MinScore                 float64       // minimum relevance (0.2)
	MaxInject                int           // trusted items (3)
	MinLevelInject           int           // trusted set level (2)
	MinLevelFallback         int           // compat fallback level (1)
	MinTrustShow             float64       // trusted set trust (0.40)
	BlockIfConsecutiveFailGE int           // block unless human-verified (3); 0 disables
	SkipIfTop1ScoreGE        float64       // compat: skip candidate when top1 score ≥ (0.85); 0 disables
	Order                    string        // OrderTrust (default) or OrderLevelFirst (compat)
	ExploreSlots             int           // probation slots (1; 0 disables)
	Fallback                 bool          // compat single-item fallback
	// ExcludeStale drops matches whose freshness is below 0.001 (the
	// original's exclude_stale_by_default; compat only: memex's freshness of
	// a never-validated candidate is 0).
	ExcludeStale bool

	MaxItems       int    // rendered items
	MaxAnswerChars int    // per answer (900)
	MaxBlockChars  int    // whole block (9000)
	Placement      string // "user" or "system"
	IncludeMeta    bool   // the "(level 2, trust 0.83, verified 3 days ago)" line
}

// DefaultMaxBlockChars is the block budget when Config.MaxBlockChars is 0:
// below Claude Code's 10,000-character hook cap.
const DefaultMaxBlockChars = 9000

// DefaultConfig is memex's default profile.
func DefaultConfig() Config {
	return Config{
		// Stale QAs are usable but never trusted: only the probation slot
		// shows one (labelled stale), so it can still earn the pass that
		// clears it or the fail that deprecates it (SPEC §5.3).
		ActiveStatuses: []core.Status{core.StatusCandidate, core.StatusActive, core.StatusVerified, core.StatusFrozen, core.StatusStale},
		MinScore:       0.2, MaxInject: 3, MinLevelInject: 2, MinLevelFallback: 1, MinTrustShow: 0.40,
		BlockIfConsecutiveFailGE: 3, SkipIfTop1ScoreGE: 0, Order: OrderTrust, ExploreSlots: 1,
		MaxItems: 4, MaxAnswerChars: 900, MaxBlockChars: DefaultMaxBlockChars, Placement: "user", IncludeMeta: true,
	}
}

// CompatConfig reproduces the original Memex-CLI exactly (SPEC §3.1.3).
func CompatConfig() Config {
	c := DefaultConfig()
	c.ActiveStatuses = []core.Status{core.StatusActive, core.StatusVerified}
	c.Order, c.ExploreSlots, c.Fallback, c.SkipIfTop1ScoreGE, c.MaxItems = OrderLevelFirst, 0, true, 0.85, 3
	c.ExcludeStale = true
	return c
}

// Reason is one machine-readable decision note.
type Reason struct {
	Code   string `json:"code"`
	QAID   string `json:"qa_id,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Item is a match chosen for injection.
type Item struct {
	core.Match
	// Probation marks the exploration item: not yet trusted, rendered as
	// "unverified — check before relying on it".
	Probation bool `json:"probation"`
	// Why is the reason code that chose it (chosen_trusted,
	// chosen_probation, chosen_fallback).
	Why string `json:"why"`
}

// Draw records one Thompson draw for the probation slot: θ ~ Beta(α, β)
// and Value = θ × relevance; Took is true for the drawn item injected.
type Draw struct {
	QAID  string  `json:"qa_id"`
	Theta float64 `json:"theta"`
	Value float64 `json:"value"`
	Took  bool    `json:"took"`
}

// Decision is the outcome of Select.
type Decision struct {
	Items   []Item   `json:"items"`
	Reasons []Reason `json:"reasons"`
	Draws   []Draw   `json:"draws,omitempty"`
	// WriteCandidate is false when memory already covers the query: in the
	// compat profile when a usable match has level ≥ MinLevelInject, and in
	// any profile when SkipIfTop1ScoreGE > 0 and the top score of all
	// matches reaches it. In the default profile it stays true; the post
	// step decides coverage from the used QAs.
	WriteCandidate bool `json:"write_candidate"`
}

// Block is a rendered memory block.
type Block struct {
	Text    string   `json:"text"`
	Shown   []string `json:"shown"`   // exactly the ids rendered, in order
	Omitted int      `json:"omitted"` // valid items left out (max_items or the char budget)
	// Notes are the scoped entries rendered ("<scope>/<key>"), in order.
	Notes []string `json:"notes,omitempty"`
}

// MergePrompt places the block before the query (placement "user").
func MergePrompt(block, query string) string {
	if block == "" {
		return query
	}
	return block + "\n" + query
}

// VerifyResult is the outcome of the --verify command.
type VerifyResult struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
}

// Outcome is what happened in the run.
type Outcome struct {
	ExitCode int           `json:"exit_code"`
	Duration time.Duration `json:"duration"`
	Events   []core.Event  `json:"-"`
	Verify   *VerifyResult `json:"verify,omitempty"`
}

// Validation is one validation to record.
type Validation struct {
	QAID     string        `json:"qa_id"`
	Result   core.Result   `json:"result"`
	Strength core.Strength `json:"strength"`
}

// Evaluation is what the run proves (SPEC §3.3).
type Evaluation struct {
	Passed      bool          `json:"passed"`
	Result      core.Result   `json:"result"`
	Strength    core.Strength `json:"strength"`
	Used        []string      `json:"used"`
	Shown       []string      `json:"shown"`
	Validations []Validation  `json:"validations"`
	Reasons     []Reason      `json:"reasons"`
	// GaveUp: the final answer says the task was not done.
	GaveUp bool `json:"gave_up,omitempty"`
	// Learnable: the run showed real success; only then is a candidate
	// extracted from it (evidence.Verdict.Learnable).
	Learnable bool `json:"learnable"`
}

// Evaluate decides used, result, strength and validations (SPEC §3.3). It
// is EvaluateRun; kept for callers of the original API.
func Evaluate(shown []string, out Outcome) Evaluation { return EvaluateRun(shown, out) }
