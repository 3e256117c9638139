// Package gatekeeper decides which matches an agent sees (SPEC §3.1, §5.4),
// renders them into the memory block (§3.2) and, after the run, evaluates
// what the run proves about them (§3.3). It is pure: matches, config, now
// and a random source in; decisions out. No I/O.
package gatekeeper

import (
	"math/rand/v2"
	"time"

	"github.com/memex-dev/memex/core"
)

// Config holds the gatekeeper's knobs (config section [gatekeeper] and
// [prompt_inject]).
type Config struct {
	ActiveStatuses           []core.Status // usable statuses (compat: active, verified)
	MinScore                 float64       // minimum relevance (0.2)
	MaxInject                int           // trusted items (3)
	MinLevelInject           int           // trusted set level (2)
	MinLevelFallback         int           // compat fallback level (1)
	MinTrustShow             float64       // trusted set trust (0.40)
	BlockIfConsecutiveFailGE int           // block unless human-verified (3)
	SkipIfTop1ScoreGE        float64       // compat: skip candidate when top1 score ≥ (0.85)
	Order                    string        // "trust" (default) or "level_first" (compat)
	ExploreSlots             int           // probation slots (1; 0 disables)
	Fallback                 bool          // compat single-item fallback

	MaxItems       int    // rendered items
	MaxAnswerChars int    // per answer (900)
	MaxBlockChars  int    // whole block (9000)
	Placement      string // "user" or "system"
	IncludeMeta    bool
}

// DefaultConfig is memex's default profile.
func DefaultConfig() Config {
	return Config{
		ActiveStatuses: []core.Status{core.StatusCandidate, core.StatusActive, core.StatusVerified},
		MinScore:       0.2, MaxInject: 3, MinLevelInject: 2, MinLevelFallback: 1, MinTrustShow: 0.40,
		BlockIfConsecutiveFailGE: 3, SkipIfTop1ScoreGE: 0, Order: "trust", ExploreSlots: 1,
		MaxItems: 4, MaxAnswerChars: 900, MaxBlockChars: 9000, Placement: "user", IncludeMeta: true,
	}
}

// CompatConfig reproduces the original Memex-CLI exactly (SPEC §3.1.3).
func CompatConfig() Config {
	c := DefaultConfig()
	c.ActiveStatuses = []core.Status{core.StatusActive, core.StatusVerified}
	c.Order, c.ExploreSlots, c.Fallback, c.SkipIfTop1ScoreGE, c.MaxItems = "level_first", 0, true, 0.85, 3
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
	Probation bool   `json:"probation"`
	Why       string `json:"why"`
}

// Draw records the probation slot's random draw.
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
	// WriteCandidate is false when memory already covers the query (compat:
	// a usable strong match exists or the top score ≥ SkipIfTop1ScoreGE).
	WriteCandidate bool `json:"write_candidate"`
}

// Select chooses the inject items. PLACEHOLDER implementation.
func Select(ms []core.Match, cfg Config, now time.Time, rng *rand.Rand) Decision {
	d := Decision{WriteCandidate: true}
	for _, m := range ms {
		if len(d.Items) >= cfg.MaxInject {
			break
		}
		d.Items = append(d.Items, Item{Match: m, Probation: m.ValidationLevel < cfg.MinLevelInject})
	}
	return d
}

// Block is a rendered memory block.
type Block struct {
	Text    string   `json:"text"`
	Shown   []string `json:"shown"`   // exactly the ids rendered
	Omitted int      `json:"omitted"` // items cut by the budget
}

// Render renders items into the memory block of SPEC §3.2. PLACEHOLDER.
func Render(items []Item, cfg Config, now time.Time) Block {
	var b Block
	if len(items) == 0 {
		return b
	}
	b.Text = "[MEMORY_CONTEXT v1]\n"
	for i, it := range items {
		b.Text += string(rune('1'+i)) + ") [QA_REF " + it.QAID + "]\nQ: " + it.Question + "\nA:\n" + it.Answer + "\n"
		b.Shown = append(b.Shown, it.QAID)
	}
	b.Text += "[/MEMORY_CONTEXT]"
	return b
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
}

// Evaluate decides used, result, strength and validations. PLACEHOLDER.
func Evaluate(shown []string, out Outcome) Evaluation {
	ev := Evaluation{Shown: shown, Passed: out.ExitCode == 0, Result: core.ResultFail, Strength: core.StrengthWeak}
	if ev.Passed {
		ev.Result = core.ResultPass
	}
	return ev
}
