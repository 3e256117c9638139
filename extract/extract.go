// Package extract turns a passing agent run into a candidate QA (SPEC §3.4):
// the user's query as the question, the agent's final answer plus the shell
// commands that succeeded as the answer, bounded, with every field scanned
// for secrets, never the injected memory block or [QA_REF] anchors.
package extract

import (
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/extract/redact"
)

// Config holds the extraction knobs ([candidate_extract]).
type Config struct {
	MaxAnswerChars    int  // 4000
	MinAnswerChars    int  // too short to be worth keeping
	MaxSteps          int  // shell commands listed under Steps (5)
	StrictSecretBlock bool // drop the candidate instead of redacting
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxAnswerChars: 4000, MinAnswerChars: 40, MaxSteps: 5}
}

// Input is what extraction sees of a run.
type Input struct {
	Query        string
	Events       []core.Event
	Passed       bool
	Strength     core.Strength
	VerifyPassed bool
	// Covered: a used QA already covers the query; no candidate.
	Covered bool
	// MemoryBlock is the injected block, never to be copied back.
	MemoryBlock string
}

// Candidate is an extracted QA.
type Candidate struct {
	Question    string           `json:"question"`
	Answer      string           `json:"answer"`
	Tags        []string         `json:"tags"`
	Confidence  float64          `json:"confidence"`
	Metadata    map[string]any   `json:"metadata"`
	Quarantined bool             `json:"quarantined,omitempty"`
	Findings    []redact.Finding `json:"findings,omitempty"`
}

// Extract returns the candidate of a run, or ok=false with the reason.
// PLACEHOLDER implementation.
func Extract(in Input, cfg Config, r *redact.Redactor) (c Candidate, ok bool, reason string) {
	if !in.Passed {
		return c, false, "run_failed"
	}
	var final string
	for _, e := range in.Events {
		if e.Kind == core.EventResult || e.Kind == core.EventText {
			final = e.Text
		}
	}
	if strings.TrimSpace(final) == "" {
		return c, false, "no_answer"
	}
	q, _ := r.Redact(in.Query)
	a, _ := r.Redact(final)
	return Candidate{Question: q, Answer: a, Confidence: 0.5, Metadata: map[string]any{}}, true, ""
}
