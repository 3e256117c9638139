package gatekeeper

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/memex-dev/memex/core"
)

// Evaluation reason codes.
const (
	EvalVerifyPassed     = "verify_passed"
	EvalVerifyFailed     = "verify_failed"
	EvalExitNonzero      = "exit_nonzero"
	EvalResultError      = "result_error"
	EvalTestsAfterEdit   = "tests_after_edit"
	EvalTestsFailed      = "tests_failed"
	EvalTestsBeforeEdit  = "tests_before_edit"
	EvalTestsUndecisive  = "tests_status_masked"
	EvalNoTests          = "no_tests"
	EvalFailingTools     = "failing_tools"
	EvalCited            = "cited"
	EvalNotCited         = "not_cited"
	EvalUnshownAnchor    = "anchor_not_shown"
	EvalUsed             = "used"
	EvalExitZeroMedium   = "exit_zero_cited_clean"
	EvalExitCodeOnlyWeak = "exit_code_only"
)

// AnchorPattern returns the expression of a citation anchor `[QA_REF <qa_id>]`
// (compiled on first use).
var AnchorPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[QA_REF\s+([A-Za-z0-9_.:\-]+)\]`) })

// ValidID reports whether id can be cited as an anchor (1–256 of
// AnchorPattern's id characters [A-Za-z0-9_.:-]); other ids are neither
// selected nor rendered.
func ValidID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// editTools are the tool names that edit files (lower case).
var editTools = map[string]bool{
	"edit": true, "write": true, "multiedit": true, "notebookedit": true, "apply_patch": true,
	"write_file": true, "replace": true, "edit_file": true, "create_file": true, "str_replace_based_edit_tool": true,
}

// Anchors returns the distinct qa_ids cited in the agent's own text
// (EventText and EventResult), in order of first citation.
func Anchors(events []core.Event) []string {
	var out []string
	for _, e := range events {
		if !e.Own() {
			continue
		}
		for _, m := range AnchorPattern().FindAllStringSubmatch(e.Text, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// EvaluateRun decides what the run proves (SPEC §3.3): used = anchors in the
// agent's own text ∩ shown (in shown order); one validation per used item
// with the run's result and strength. The hits (one per shown item) are
// core.BuildHitRequest(…, ev.Shown, ev.Used).
//
// Result and strength: with out.Verify the run passes iff the agent and the
// verify command both exit 0 (strong). Otherwise, when the last test or
// build command the agent ran (TestCommand) finished after its last edit,
// that command decides (strong; a failing one fails the run even on exit
// 0). Otherwise exit 0 with a used item and no failing tools is a medium
// pass, and anything else is weak (pass iff exit 0).
func EvaluateRun(shown []string, out Outcome) Evaluation {
	ev := Evaluation{Shown: slices.Clone(shown), Used: []string{}, Validations: []Validation{}}
	if ev.Shown == nil {
		ev.Shown = []string{}
	}

	cited := Anchors(out.Events)
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

	exitOK := out.ExitCode == 0
	if !exitOK {
		ev.Reasons = append(ev.Reasons, Reason{Code: EvalExitNonzero, Detail: fmt.Sprintf("exit_code=%d", out.ExitCode)})
	}
	for _, e := range out.Events {
		if e.Kind == core.EventResult && e.Failed() {
			exitOK = false
			ev.Reasons = append(ev.Reasons, Reason{Code: EvalResultError, Detail: "the backend's final result reports an error"})
			break
		}
	}

	switch {
	case out.Verify != nil:
		ev.Strength = core.StrengthStrong
		ev.Passed = exitOK && out.Verify.ExitCode == 0
		if out.Verify.ExitCode == 0 {
			ev.Reasons = append(ev.Reasons, Reason{Code: EvalVerifyPassed})
		} else {
			ev.Reasons = append(ev.Reasons, Reason{Code: EvalVerifyFailed, Detail: fmt.Sprintf("exit_code=%d", out.Verify.ExitCode)})
		}
	default:
		ev.Passed, ev.Strength = grade(out.Events, exitOK, len(ev.Used) > 0, &ev.Reasons)
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

// grade decides pass and strength from the agent's own tool events.
func grade(events []core.Event, exitOK, used bool, reasons *[]Reason) (bool, core.Strength) {
	callCmd := map[string]string{} // tool id → command of the call
	lastEdit, lastTest := -1, -1
	var testOK bool
	var testAt string
	var failing []string
	masked := 0
	for i, e := range events {
		switch e.Kind {
		case core.EventFileChange:
			lastEdit = i
		case core.EventToolCall:
			if editTools[strings.ToLower(e.Tool)] {
				lastEdit = i
			}
			if e.ToolID != "" && e.Command != "" {
				callCmd[e.ToolID] = e.Command
			}
		case core.EventToolResult:
			if e.Failed() && e.Tool != "" && !slices.Contains(failing, e.Tool) {
				failing = append(failing, e.Tool)
			} else if e.Failed() && e.Tool == "" && !slices.Contains(failing, "unknown") {
				failing = append(failing, "unknown")
			}
			cmd := e.Command
			if cmd == "" {
				cmd = callCmd[e.ToolID]
			}
			if cmd == "" || (e.OK == nil && e.ExitCode == nil) {
				continue // not a shell command, or its outcome is unknown
			}
			rec, dec := testCommand(cmd)
			switch {
			case !rec:
			case !dec:
				masked++
			default:
				lastTest, testOK, testAt = i, !e.Failed(), fmt.Sprintf("%s result at event %d", cmp.Or(e.Tool, "tool"), e.Seq)
			}
		}
	}
	if masked > 0 {
		*reasons = append(*reasons, Reason{Code: EvalTestsUndecisive, Detail: fmt.Sprintf("%d test command(s) whose exit status is masked (pipe, ||, ;)", masked)})
	}
	if len(failing) > 0 {
		*reasons = append(*reasons, Reason{Code: EvalFailingTools, Detail: strings.Join(failing, ", ")})
	}
	switch {
	case lastTest >= 0 && lastTest > lastEdit:
		if !testOK {
			*reasons = append(*reasons, Reason{Code: EvalTestsFailed, Detail: testAt})
			return false, core.StrengthStrong
		}
		if !exitOK {
			// The tests passed but the run failed for another reason: no
			// strong evidence either way about the items.
			*reasons = append(*reasons, Reason{Code: EvalExitCodeOnlyWeak, Detail: "tests passed but the run failed"})
			return false, core.StrengthWeak
		}
		*reasons = append(*reasons, Reason{Code: EvalTestsAfterEdit, Detail: testAt})
		return true, core.StrengthStrong
	case lastTest >= 0:
		*reasons = append(*reasons, Reason{Code: EvalTestsBeforeEdit, Detail: "the last test or build ran before the last edit"})
	default:
		*reasons = append(*reasons, Reason{Code: EvalNoTests})
	}
	if exitOK && used && len(failing) == 0 {
		*reasons = append(*reasons, Reason{Code: EvalExitZeroMedium})
		return true, core.StrengthMedium
	}
	*reasons = append(*reasons, Reason{Code: EvalExitCodeOnlyWeak})
	return exitOK, core.StrengthWeak
}
