package gatekeeper

import (
	"slices"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evidence"
)

// Evaluation reason codes. The grade's own codes are package evidence's
// Finding codes.
const (
	EvalVerifyPassed     = evidence.VerifyPassed
	EvalVerifyFailed     = evidence.VerifyFailed
	EvalExitNonzero      = evidence.ExitNonzero
	EvalResultError      = evidence.ResultError
	EvalTestsAfterEdit   = evidence.TestsAfterEdit
	EvalTestsFailed      = evidence.TestsFailed
	EvalTestsBeforeEdit  = evidence.TestsBeforeEdit
	EvalTestsUndecisive  = evidence.TestsMasked
	EvalNoTests          = evidence.NoTests
	EvalFailingTools     = evidence.FailingTools
	EvalFailedAfterEdit  = evidence.FailedAfterEdit
	EvalGaveUp           = evidence.GaveUpAnswer
	EvalExitZeroMedium   = evidence.ExitZeroMedium
	EvalExitCodeOnlyWeak = evidence.ExitCodeOnlyWeak
	EvalCited            = "cited"
	EvalNotCited         = "not_cited"
	EvalUnshownAnchor    = "anchor_not_shown"
	EvalUsed             = "used"
)

// EvaluateRun decides what the run proves (SPEC §3.3): used = anchors in the
// agent's own text ∩ shown (in shown order); one validation per used item
// with the run's result and strength. The hits (one per shown item) are
// core.BuildHitRequest(…, ev.Shown, ev.Used).
//
// Result and strength are evidence.Grade's: a --verify command decides
// (strong); else tests or builds the agent ran after its last edit (strong);
// else exit 0 with no tool failing after the last edit and an answer that
// does not give up passes (medium when a shown QA was cited and nothing
// failed, else weak). GaveUp and Learnable are the grade's too.
func EvaluateRun(shown []string, out Outcome) Evaluation {
	ev := Evaluation{Shown: slices.Clone(shown), Used: []string{}, Validations: []Validation{}}
	if ev.Shown == nil {
		ev.Shown = []string{}
	}

	cited := evidence.Anchors(out.Events)
	for _, id := range ev.Shown {
		if slices.Contains(cited, id) && !slices.Contains(ev.Used, id) {
			ev.Used = append(ev.Used, id)
		}
	}
	for _, id := range cited {
		if !slices.Contains(ev.Shown, id) {
			ev.Reasons = append(ev.Reasons, Reason{Code: EvalUnshownAnchor, QAID: id, Detail: "cited but not shown; ignored"})
		}
	}
	for _, id := range ev.Shown {
		if slices.Contains(ev.Used, id) {
			ev.Reasons = append(ev.Reasons, Reason{Code: EvalCited, QAID: id})
		} else {
			ev.Reasons = append(ev.Reasons, Reason{Code: EvalNotCited, QAID: id})
		}
	}

	var verify *int
	if out.Verify != nil {
		verify = &out.Verify.ExitCode
	}
	g := evidence.Grade(evidence.Run{ExitCode: out.ExitCode, Events: out.Events, Verify: verify, Cited: len(ev.Used) > 0})
	ev.Passed, ev.Strength, ev.GaveUp, ev.Learnable = g.Passed, g.Strength, g.GaveUp, g.Learnable
	for _, f := range g.Findings {
		ev.Reasons = append(ev.Reasons, Reason{Code: f.Code, Detail: f.Detail})
	}
	ev.Result = core.ResultFail
	if ev.Passed {
		ev.Result = core.ResultPass
	}
	for _, id := range ev.Used {
		ev.Validations = append(ev.Validations, Validation{QAID: id, Result: ev.Result, Strength: ev.Strength})
	}
	return ev
}
