package core

import (
	"encoding/json"
	"slices"
	"time"
)

// BuildHitRequest builds the hit report of a run: one reference per shown
// QA, used true for those whose anchor the agent cited. Used ids that were
// not shown are dropped (an echoed or invented anchor proves nothing). ok is
// false when there is nothing to send.
func BuildHitRequest(projectID, runID, eventID string, shown, used []string) (HitRequest, bool) {
	if len(shown) == 0 {
		return HitRequest{}, false
	}
	refs := make([]HitRef, 0, len(shown))
	for _, id := range shown {
		refs = append(refs, HitRef{QAID: id, Shown: true, Used: slices.Contains(used, id)})
	}
	return HitRequest{ProjectID: projectID, References: refs, RunID: runID, EventID: eventID}, true
}

// RunContext is what a validation reports about the run that produced it.
type RunContext struct {
	ExitCode   int           `json:"exit_code"`
	Duration   time.Duration `json:"-"`
	DurationMS int64         `json:"duration_ms"`
	Reason     string        `json:"reason"`
}

// BuildValidateRequest builds one validation for a used QA, with the
// original client's field names (context.exit_code/duration_ms/reason,
// source "memex-cli", RFC 3339 ts) so original services accept it.
func BuildValidateRequest(projectID, qaID, runID, eventID string, res Result, st Strength, rc RunContext, now time.Time) ValidateRequest {
	rc.DurationMS = rc.Duration.Milliseconds()
	ctx, _ := json.Marshal(rc)
	return ValidateRequest{
		ProjectID:      projectID,
		QAID:           qaID,
		Result:         string(res),
		SignalStrength: string(st),
		StrongSignal:   st == StrengthStrong,
		Source:         "memex-cli",
		Context:        ctx,
		TS:             now.Format(time.RFC3339),
		RunID:          runID,
		EventID:        eventID,
	}
}

// BuildCandidateRequest builds a candidate submission with the creating
// run's own evidence.
func BuildCandidateRequest(projectID, runID, eventID, question, answer string, tags []string, confidence float64, metadata map[string]any, ev *Evidence) CandidateRequest {
	c := confidence
	return CandidateRequest{
		ProjectID:  projectID,
		Question:   question,
		Answer:     answer,
		Tags:       tags,
		Metadata:   metadata,
		Source:     "memex-cli",
		Confidence: &c,
		RunID:      runID,
		Evidence:   ev,
		EventID:    eventID,
	}
}
