package evidence

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/memex-dev/memex/core"
)

// Finding codes: why a Verdict is what it is.
const (
	VerifyPassed     = "verify_passed"
	VerifyFailed     = "verify_failed"
	ExitNonzero      = "exit_nonzero"
	ResultError      = "result_error"
	TestsAfterEdit   = "tests_after_edit"
	TestsFailed      = "tests_failed"
	TestsBeforeEdit  = "tests_before_edit"
	TestsMasked      = "tests_status_masked"
	NoTests          = "no_tests"
	FailingTools     = "failing_tools"
	FailedAfterEdit  = "failed_after_edit"
	GaveUpAnswer     = "gave_up"
	ExitZeroMedium   = "exit_zero_cited_clean"
	ExitCodeOnlyWeak = "exit_code_only"
)

// Finding is one machine-readable note of a Verdict.
type Finding struct {
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// Run is what Grade looks at.
type Run struct {
	// ExitCode is the agent process's exit code.
	ExitCode int
	// Events are the run's normalised events (agent.Parser, or a host
	// transcript read by a hook).
	Events []core.Event
	// Verify is the exit code of the user's --verify command, nil when
	// there was none.
	Verify *int
	// Cited: the agent cited a QA it was shown (lifts a clean exit-0 run
	// to medium evidence).
	Cited bool
}

// Verdict is what a run proves.
type Verdict struct {
	Passed   bool          `json:"passed"`
	Strength core.Strength `json:"strength"`
	// GaveUp: the final answer says the agent did not get there.
	GaveUp bool `json:"gave_up,omitempty"`
	// Learnable: the run shows real success, so a candidate QA may be
	// extracted from it — it passed and its answer does not give up.
	Learnable bool      `json:"learnable"`
	Findings  []Finding `json:"findings"`
}

// Result is the verdict as a validation result.
func (v Verdict) Result() core.Result {
	if v.Passed {
		return core.ResultPass
	}
	return core.ResultFail
}

// Grade decides what a run proves (SPEC §3.3):
//
//   - With a --verify command (r.Verify), the run passes iff the agent and
//     the command both exit 0: strong evidence, the user's own judge.
//   - Otherwise, when the last test or build command the agent ran
//     (TestCommand) finished after its last edit, that command decides
//     (strong; a failing one fails the run even on exit 0).
//   - Otherwise the run passes only on exit 0 with no tool that failed
//     after the last edit (a probe — a read tool, `grep`, `ls` — may fail;
//     a failure a later success of the same command or a later passing
//     test repaired does not count). That is medium evidence when the agent
//     cited a shown QA and no tool failed at all, else weak.
//
// In every case but --verify a final answer that gives up ("I could not
// deploy…", GaveUp) is not a pass. Learnable is Passed and not GaveUp: no
// candidate is learned from a run that did not show success.
func Grade(r Run) Verdict {
	v := Verdict{Findings: []Finding{}}
	exitOK := r.ExitCode == 0
	if !exitOK {
		v.note(ExitNonzero, fmt.Sprintf("exit_code=%d", r.ExitCode))
	}
	for _, e := range r.Events {
		if e.Kind == core.EventResult && e.Failed() {
			exitOK = false
			v.note(ResultError, "the backend's final result reports an error")
			break
		}
	}
	v.GaveUp = GaveUp(FinalAnswer(r.Events))
	if v.GaveUp {
		v.note(GaveUpAnswer, "the final answer says the task was not done")
	}
	if r.Verify != nil {
		v.Strength = core.StrengthStrong
		v.Passed = exitOK && *r.Verify == 0
		if *r.Verify == 0 {
			v.note(VerifyPassed, "")
		} else {
			v.note(VerifyFailed, fmt.Sprintf("exit_code=%d", *r.Verify))
		}
	} else {
		v.Passed, v.Strength = v.fromTools(r.Events, exitOK, r.Cited)
	}
	v.Learnable = v.Passed && !v.GaveUp
	return v
}

func (v *Verdict) note(code, detail string) {
	v.Findings = append(v.Findings, Finding{Code: code, Detail: detail})
}

// fromTools grades a run without --verify from its tool use.
func (v *Verdict) fromTools(events []core.Event, exitOK, cited bool) (bool, core.Strength) {
	steps := Steps(events)
	// The last edit: a file change, or an edit call whose result did not
	// fail (a failed edit changed nothing).
	lastEdit := -1
	for i, e := range events {
		if e.Kind == core.EventFileChange {
			lastEdit = max(lastEdit, i)
		}
	}
	for _, s := range steps {
		if s.Kind == ToolEdit && s.Call >= 0 && !s.Failed {
			lastEdit = max(lastEdit, s.Call)
		}
	}

	lastTest, testOK, testAt, masked := -1, false, "", 0
	var failing []string
	for _, s := range steps {
		if s.Result < 0 {
			continue
		}
		if s.Failed && !slices.Contains(failing, cmp.Or(s.Tool, "unknown")) {
			failing = append(failing, cmp.Or(s.Tool, "unknown"))
		}
		if s.Command == "" || !s.Known {
			continue // not a shell command, or its outcome is unknown
		}
		switch rec, dec := testCommand(s.Command); {
		case !rec:
		case !dec:
			masked++
		case s.Result > lastTest:
			lastTest, testOK, testAt = s.Result, !s.Failed, fmt.Sprintf("%s result at event %d", cmp.Or(s.Tool, "tool"), events[s.Result].Seq)
		}
	}

	// Failures after the last edit that nothing later repaired.
	var open []string
	for i, s := range steps {
		if s.Result < 0 || !s.Failed || s.Result < lastEdit || s.Probe() {
			continue
		}
		if lastTest > s.Result && testOK {
			continue // a later passing test or build
		}
		repaired := slices.ContainsFunc(steps[i+1:], func(t Step) bool {
			return t.Succeeded() && t.Tool == s.Tool && t.Command == s.Command && (s.Command != "" || s.Kind == ToolEdit)
		})
		if !repaired {
			open = append(open, cmp.Or(s.Tool, "unknown"))
		}
	}

	if masked > 0 {
		v.note(TestsMasked, fmt.Sprintf("%d test command(s) whose exit status is masked (pipe, ||, ;)", masked))
	}
	if len(failing) > 0 {
		v.note(FailingTools, strings.Join(failing, ", "))
	}
	if len(open) > 0 {
		v.note(FailedAfterEdit, fmt.Sprintf("%d tool result(s) failed after the last edit (%s)", len(open), strings.Join(slices.Compact(open), ", ")))
	}
	switch {
	case lastTest >= 0 && lastTest > lastEdit:
		if !testOK {
			v.note(TestsFailed, testAt)
			return false, core.StrengthStrong
		}
		if !exitOK || v.GaveUp || len(open) > 0 {
			// The tests passed but the run failed for another reason: no
			// strong evidence either way about the items.
			v.note(ExitCodeOnlyWeak, "tests passed but the run did not succeed")
			return false, core.StrengthWeak
		}
		v.note(TestsAfterEdit, testAt)
		return true, core.StrengthStrong
	case lastTest >= 0:
		v.note(TestsBeforeEdit, "the last test or build ran before the last edit")
	default:
		v.note(NoTests, "")
	}
	if exitOK && !v.GaveUp && len(open) == 0 {
		if cited && len(failing) == 0 {
			v.note(ExitZeroMedium, "")
			return true, core.StrengthMedium
		}
		v.note(ExitCodeOnlyWeak, "")
		return true, core.StrengthWeak
	}
	v.note(ExitCodeOnlyWeak, "")
	return false, core.StrengthWeak
}

// FinalAnswer is the run's final answer: the text of the last EventResult
// with text, else the agent's own text after its last tool activity.
func FinalAnswer(events []core.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == core.EventResult && strings.TrimSpace(events[i].Text) != "" {
			return events[i].Text
		}
	}
	last := -1
	for i, e := range events {
		switch e.Kind {
		case core.EventToolCall, core.EventToolResult, core.EventFileChange:
			last = i
		}
	}
	var parts []string
	for _, e := range events[last+1:] {
		if e.Kind == core.EventText && strings.TrimSpace(e.Text) != "" {
			parts = append(parts, strings.TrimSpace(e.Text))
		}
	}
	return strings.Join(parts, "\n\n")
}

// giveUpRE matches an answer that says the task was not done: first-person
// failure ("I could not…", "I was unable to…", "I gave up"), a check that
// still fails, and the Chinese equivalents.
var giveUpRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)` +
		`\b(?:i|we)(?:\s+(?:still|just|simply))?\s+(?:could\s*not|couldn['’]t|was\s+unable\s+to|were\s+unable\s+to|am\s+unable\s+to|['’]m\s+unable\s+to|was\s+not\s+able\s+to|wasn['’]t\s+able\s+to|were\s+not\s+able\s+to|weren['’]t\s+able\s+to|did\s*n['’o]?t\s+manage\s+to|failed\s+to|gave\s+up|have\s+to\s+give\s+up)\b` +
		`|\b(?:i|we)\s+(?:can\s*not|can['’]t)\s+(?:complete|finish|fix|resolve|deploy|proceed|continue|get\s+(?:it|this|the\s+\w+)\s+to\s+work|make\s+(?:it|this)\s+work)\b` +
		`|\b(?:unable\s+to\s+(?:complete|finish|fix|resolve|deploy|proceed)|giving\s+up|(?:still|continues\s+to|keeps?)\s+fail(?:s|ing)?)\b` +
		`|无法完成|未能|没能|没有成功|放弃了|仍然失败|还是失败|依然失败`)
})

// GaveUp reports whether an answer says the agent did not get there ("I
// could not deploy…", "the test still fails", "I was unable to…").
func GaveUp(answer string) bool {
	return answer != "" && giveUpRE().MatchString(answer)
}
