package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Status is a QA's lifecycle state (SPEC §2).
type Status string

const (
	StatusCandidate  Status = "candidate"  // new, not yet validated
	StatusActive     Status = "active"     // has passing evidence
	StatusVerified   Status = "verified"   // set by a human; sticky
	StatusStale      Status = "stale"      // change detection suspects it
	StatusDeprecated Status = "deprecated" // not returned by search
	StatusFrozen     Status = "frozen"     // human lock: no automatic change
)

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusCandidate, StatusActive, StatusVerified, StatusStale, StatusDeprecated, StatusFrozen:
		return true
	}
	return false
}

// ParseStatus parses a status name (case-insensitive).
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToLower(strings.TrimSpace(s)))
	if !st.Valid() {
		return "", fmt.Errorf("unknown status %q (want candidate, active, verified, stale, deprecated or frozen): %w", s, ErrInvalid)
	}
	return st, nil
}

// Verdict is a human verdict on a QA's status (SPEC §5.1), named by the
// action a person takes: `memex qa <verdict>`, POST /admin/v1/qa/{id}/<verdict>
// and the dashboard's buttons all speak it.
type Verdict string

const (
	VerdictVerify     Verdict = "verify"     // verified: trusted and sticky
	VerdictFreeze     Verdict = "freeze"     // frozen: every report is ignored
	VerdictDeprecate  Verdict = "deprecate"  // deprecated: never injected; sticky
	VerdictReactivate Verdict = "reactivate" // active: the evidence's rules apply again
)

// Verdicts lists the human verdicts in the order they are offered.
func Verdicts() []Verdict {
	return []Verdict{VerdictVerify, VerdictFreeze, VerdictDeprecate, VerdictReactivate}
}

// Status is the status the verdict sets; false for an unknown verdict.
func (v Verdict) Status() (Status, bool) {
	switch v {
	case VerdictVerify:
		return StatusVerified, true
	case VerdictFreeze:
		return StatusFrozen, true
	case VerdictDeprecate:
		return StatusDeprecated, true
	case VerdictReactivate:
		return StatusActive, true
	}
	return "", false
}

// VerdictFor is the verdict that sets status s; false when no verdict
// does (candidate and stale are the evidence's to decide).
func VerdictFor(s Status) (Verdict, bool) {
	for _, v := range Verdicts() {
		if st, _ := v.Status(); st == s {
			return v, true
		}
	}
	return "", false
}

// Strength is how strong a piece of evidence is (SPEC §2).
type Strength string

const (
	StrengthStrong Strength = "strong" // --verify, tests/build the agent ran, a human verdict
	StrengthMedium Strength = "medium" // exit code with the QA cited and no failing tools
	StrengthWeak   Strength = "weak"   // exit code alone
)

// Weight is the evidence weight of a report of this strength (SPEC §5.1).
func (s Strength) Weight() float64 {
	switch s {
	case StrengthStrong:
		return 1.0
	case StrengthMedium:
		return 0.5
	case StrengthWeak:
		return 0.2
	}
	return 0.2
}

// NormalizeStrength lower-cases s; anything unknown becomes weak, as in the
// original service.
func NormalizeStrength(s string) Strength {
	switch st := Strength(strings.ToLower(strings.TrimSpace(s))); st {
	case StrengthStrong, StrengthMedium, StrengthWeak:
		return st
	}
	return StrengthWeak
}

// Result is the outcome a validation reports.
type Result string

const (
	ResultPass Result = "pass"
	ResultFail Result = "fail"
)

// ParseResult accepts "pass", "success" (the original CLI's spelling, which
// the original server wrongly counted as a fail) and "fail"/"failure".
func ParseResult(s string) (Result, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pass", "passed", "success", "ok":
		return ResultPass, nil
	case "fail", "failed", "failure":
		return ResultFail, nil
	}
	return "", Invalid("result", "must be pass or fail")
}

// LevelName is the wire form of a validation level: "L0".."L3".
func LevelName(level int) string {
	return fmt.Sprintf("L%d", min(max(level, 0), 3))
}

// ParseLevel accepts "L2", "l2" or "2".
func ParseLevel(s string) (int, error) {
	t := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "L")
	if len(t) == 1 && t[0] >= '0' && t[0] <= '3' {
		return int(t[0] - '0'), nil
	}
	return 0, Invalid("level", "must be L0..L3")
}

// Counters are the per-strength pass and fail counts of a QA (the original
// service's metadata.stats).
type Counters struct {
	StrongPass int64 `json:"strong_pass"`
	StrongFail int64 `json:"strong_fail"`
	MediumPass int64 `json:"medium_pass"`
	MediumFail int64 `json:"medium_fail"`
	WeakPass   int64 `json:"weak_pass"`
	WeakFail   int64 `json:"weak_fail"`
}

// Add counts one report.
func (c *Counters) Add(r Result, s Strength) {
	pass := r == ResultPass
	switch s {
	case StrengthStrong:
		if pass {
			c.StrongPass++
		} else {
			c.StrongFail++
		}
	case StrengthMedium:
		if pass {
			c.MediumPass++
		} else {
			c.MediumFail++
		}
	default:
		if pass {
			c.WeakPass++
		} else {
			c.WeakFail++
		}
	}
}

// Passes is the total number of passing reports.
func (c Counters) Passes() int64 { return c.StrongPass + c.MediumPass + c.WeakPass }

// Fails is the total number of failing reports.
func (c Counters) Fails() int64 { return c.StrongFail + c.MediumFail + c.WeakFail }

// Record is a QA record as the API returns it (`record` in SPEC §7): the
// original service's field names plus memex's own. Trust, level and freshness
// are computed by package trust from the evidence the store keeps; they are
// never incremented blindly.
type Record struct {
	QAID      string         `json:"qa_id"`
	ProjectID string         `json:"project_id"`
	Question  string         `json:"question"`
	Answer    string         `json:"answer"`
	Summary   string         `json:"summary"`
	Tags      []string       `json:"tags"`
	Metadata  map[string]any `json:"metadata"`
	Source    string         `json:"source"`
	Author    string         `json:"author"`

	Status          Status  `json:"status"`
	Level           string  `json:"level"`            // "L0".."L3"
	ValidationLevel int     `json:"validation_level"` // 0..3
	TrustScore      float64 `json:"trust_score"`
	Confidence      float64 `json:"confidence"`
	Freshness       float64 `json:"freshness"`
	// Alpha and Beta are the trust posterior Beta(Alpha, Beta) (SPEC §5.2).
	Alpha float64 `json:"alpha,omitempty"`
	Beta  float64 `json:"beta,omitempty"`

	UsageCount        int64    `json:"usage_count"` // times shown
	UseCount          int64    `json:"use_count"`   // times used (cited)
	SuccessCount      int64    `json:"success_count"`
	FailureCount      int64    `json:"failure_count"`
	StrongSignalCount int64    `json:"strong_signal_count"`
	ConsecutiveFail   int      `json:"consecutive_fail"`
	Stats             Counters `json:"stats"`

	// Quarantined QAs read like instructions to the agent; they are never
	// injected before a human or strong verdict (SPEC §10).
	Quarantined bool `json:"quarantined,omitempty"`

	LastUsedAt      time.Time `json:"last_used_at,omitzero"`
	LastValidatedAt time.Time `json:"last_validated_at,omitzero"`
	TTLExpireAt     time.Time `json:"ttl_expire_at,omitzero"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`

	ContentHash    string   `json:"content_hash"`
	SharedProjects []string `json:"shared_projects"`

	// Evidence is the QA's evidence as its store keeps it — per-source
	// votes, the change detector, the creator, the lifecycle (package
	// trust's State, read and written by trust/ledger) — in a full export
	// only (ListRequest.Evidence), so that an import restores trust, level,
	// status and block exactly rather than rebuilding them from counters.
	Evidence json.RawMessage `json:"evidence,omitempty"`
}

// Match is a QA returned by search with its rank components (SPEC §7, the
// original service's field names). Alpha and Beta are the trust posterior's
// parameters; the gatekeeper draws the probation slot from Beta(Alpha, Beta).
type Match struct {
	QAID            string         `json:"qa_id"`
	ProjectID       string         `json:"project_id"`
	Question        string         `json:"question"`
	Answer          string         `json:"answer"`
	Summary         string         `json:"summary"`
	Score           float64        `json:"score"`
	Relevance       float64        `json:"relevance"`
	Trust           float64        `json:"trust"`
	Freshness       float64        `json:"freshness"`
	ValidationLevel int            `json:"validation_level"`
	Level           string         `json:"level"`
	Status          Status         `json:"status"`
	Metadata        map[string]any `json:"metadata"`
	Tags            []string       `json:"tags"`
	ExpiryAt        *time.Time     `json:"expiry_at"`
	Source          string         `json:"source"`
	Confidence      float64        `json:"confidence"`

	ConsecutiveFail int       `json:"consecutive_fail"`
	Alpha           float64   `json:"alpha,omitempty"`
	Beta            float64   `json:"beta,omitempty"`
	Quarantined     bool      `json:"quarantined,omitempty"`
	UpdatedAt       time.Time `json:"updated_at,omitzero"`
	// LastValidatedAt is the time of the last counted validation (the
	// memory block shows "verified N days ago" from it).
	LastValidatedAt time.Time `json:"last_validated_at,omitzero"`
	ReceiptID       string    `json:"receipt_id,omitempty"`
	Explain         *Explain  `json:"explain,omitempty"`
}

// Explain is the per-match breakdown returned with explain=true.
type Explain struct {
	Relevance  float64  `json:"relevance"`
	Trust      float64  `json:"trust"`
	Freshness  float64  `json:"freshness"`
	LevelBoost float64  `json:"level_boost"`
	StaleTrust bool     `json:"stale_trust_discount,omitempty"`
	Formula    string   `json:"formula"`
	Terms      []string `json:"matched_terms,omitempty"`
}

// MatchFromRecord builds a match from a record and a relevance. Score is left
// for Rank to fill in. Metadata gets consecutive_fail both at the top level
// and under stats (the original client read one, the server wrote the other).
func MatchFromRecord(r Record, relevance float64) Match {
	md := make(map[string]any, len(r.Metadata)+2)
	for k, v := range r.Metadata {
		md[k] = v
	}
	md["consecutive_fail"] = r.ConsecutiveFail
	stats := map[string]any{}
	if s, ok := md["stats"].(map[string]any); ok {
		for k, v := range s {
			stats[k] = v
		}
	}
	stats["consecutive_fail"] = r.ConsecutiveFail
	md["stats"] = stats
	m := Match{
		QAID:            r.QAID,
		ProjectID:       r.ProjectID,
		Question:        r.Question,
		Answer:          r.Answer,
		Summary:         r.Summary,
		Relevance:       relevance,
		Trust:           r.TrustScore,
		Freshness:       r.Freshness,
		ValidationLevel: r.ValidationLevel,
		Level:           LevelName(r.ValidationLevel),
		Status:          r.Status,
		Metadata:        md,
		Tags:            r.Tags,
		Source:          r.Source,
		Confidence:      r.Confidence,
		ConsecutiveFail: r.ConsecutiveFail,
		Alpha:           r.Alpha,
		Beta:            r.Beta,
		Quarantined:     r.Quarantined,
		UpdatedAt:       r.UpdatedAt,
		LastValidatedAt: r.LastValidatedAt,
	}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	if !r.TTLExpireAt.IsZero() {
		t := r.TTLExpireAt
		m.ExpiryAt = &t
	}
	return m
}
