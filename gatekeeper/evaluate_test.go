package gatekeeper

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/memex-dev/memex/core"
)

func ok(b bool) *bool           { return &b }
func code(n int) *int           { return &n }
func text(s string) core.Event  { return core.Event{Kind: core.EventText, Text: s} }
func final(s string) core.Event { return core.Event{Kind: core.EventResult, Text: s} }

func bash(id, cmd string) core.Event {
	return core.Event{Kind: core.EventToolCall, Tool: "Bash", ToolID: id, Command: cmd}
}

// bashResult is a shell tool result; the command is on the call only, as
// claude reports it.
func bashResult(id string, exit int) core.Event {
	return core.Event{Kind: core.EventToolResult, Tool: "Bash", ToolID: id, ExitCode: code(exit), OK: ok(exit == 0)}
}

func edit(id string) core.Event {
	return core.Event{Kind: core.EventToolCall, Tool: "Edit", ToolID: id, Paths: []string{"main.go"}}
}

func TestEvaluateUsed(t *testing.T) {
	shown := []string{"qa-1", "qa-2", "qa-3"}
	tests := []struct {
		name   string
		events []core.Event
		want   []string
	}{
		{"none", []core.Event{text("done")}, []string{}},
		{"assistant text", []core.Event{text("per [QA_REF qa-2] I ran it")}, []string{"qa-2"}},
		{"final result", []core.Event{final("fixed. [QA_REF qa-1]")}, []string{"qa-1"}},
		{"shown order, deduplicated", []core.Event{text("[QA_REF qa-3] [QA_REF qa-1]"), final("[QA_REF  qa-3]")}, []string{"qa-1", "qa-3"}},
		{"whitespace forms", []core.Event{text("[QA_REF\tqa-2]")}, []string{"qa-2"}},
		{"not shown is ignored", []core.Event{text("[QA_REF qa-9] [QA_REF invented]")}, []string{}},
		{"tool args do not count", []core.Event{{Kind: core.EventToolCall, Tool: "Bash", Command: "echo [QA_REF qa-1]", Args: `{"command":"echo [QA_REF qa-1]"}`, Text: "[QA_REF qa-1]"}}, []string{}},
		{"tool output does not count", []core.Event{{Kind: core.EventToolResult, Tool: "Read", Text: "file says [QA_REF qa-2]"}}, []string{}},
		{"reasoning does not count", []core.Event{{Kind: core.EventReasoning, Text: "maybe [QA_REF qa-3]"}}, []string{}},
		{"malformed anchors", []core.Event{text("[QA_REFqa-1] [QA_REF ] QA_REF qa-2 [qa_ref qa-3]")}, []string{}},
		{"ids with dots and colons", []core.Event{text("[QA_REF qa.v2:7]")}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := EvaluateRun(shown, Outcome{Events: tt.events})
			if diff := cmp.Diff(tt.want, ev.Used); diff != "" {
				t.Fatalf("used (-want +got):\n%s", diff)
			}
			if len(ev.Validations) != len(tt.want) {
				t.Fatalf("validations %+v for used %v", ev.Validations, tt.want)
			}
			for i, v := range ev.Validations {
				if v.QAID != tt.want[i] || v.Result != ev.Result || v.Strength != ev.Strength {
					t.Fatalf("validation %d = %+v", i, v)
				}
			}
		})
	}
	t.Run("ids with dots and colons when shown", func(t *testing.T) {
		ev := EvaluateRun([]string{"qa.v2:7"}, Outcome{Events: []core.Event{text("[QA_REF qa.v2:7]")}})
		if diff := cmp.Diff([]string{"qa.v2:7"}, ev.Used); diff != "" {
			t.Fatal(diff)
		}
	})
	t.Run("hits cover every shown item", func(t *testing.T) {
		ev := EvaluateRun(shown, Outcome{Events: []core.Event{text("[QA_REF qa-2]")}})
		req, sent := core.BuildHitRequest("p", "r", "e", ev.Shown, ev.Used)
		if !sent || len(req.References) != 3 {
			t.Fatalf("hits %+v", req)
		}
		for _, ref := range req.References {
			if ref.Used != (ref.QAID == "qa-2") || !ref.Shown {
				t.Fatalf("ref %+v", ref)
			}
		}
	})
}

func TestEvaluateResultStrength(t *testing.T) {
	shown := []string{"qa-1"}
	cite := text("following [QA_REF qa-1]")
	tests := []struct {
		name     string
		out      Outcome
		pass     bool
		strength core.Strength
		reason   string
	}{
		{"verify passes", Outcome{ExitCode: 0, Verify: &VerifyResult{Command: "make test", ExitCode: 0}}, true, core.StrengthStrong, EvalVerifyPassed},
		{"verify fails", Outcome{ExitCode: 0, Verify: &VerifyResult{ExitCode: 2}, Events: []core.Event{cite}}, false, core.StrengthStrong, EvalVerifyFailed},
		{"verify passes but agent failed", Outcome{ExitCode: 1, Verify: &VerifyResult{ExitCode: 0}}, false, core.StrengthStrong, EvalExitNonzero},
		{"verify beats failing tests", Outcome{Verify: &VerifyResult{}, Events: []core.Event{bash("1", "go test ./..."), bashResult("1", 1)}}, true, core.StrengthStrong, EvalVerifyPassed},
		{"tests after edit pass", Outcome{Events: []core.Event{edit("e"), bash("1", "go test ./..."), bashResult("1", 0)}}, true, core.StrengthStrong, EvalTestsAfterEdit},
		{"tests with no edit pass", Outcome{Events: []core.Event{bash("1", "pytest -q"), bashResult("1", 0)}}, true, core.StrengthStrong, EvalTestsAfterEdit},
		{"tests after edit fail on exit 0", Outcome{Events: []core.Event{cite, edit("e"), bash("1", "cargo test"), bashResult("1", 101)}}, false, core.StrengthStrong, EvalTestsFailed},
		{"last test decides", Outcome{Events: []core.Event{edit("e"), bash("1", "go test ./..."), bashResult("1", 1), edit("f"), bash("2", "go test ./..."), bashResult("2", 0)}}, true, core.StrengthStrong, EvalTestsAfterEdit},
		{"last test failing decides", Outcome{Events: []core.Event{bash("1", "go test ./..."), bashResult("1", 0), bash("2", "go build ./..."), bashResult("2", 2)}}, false, core.StrengthStrong, EvalTestsFailed},
		{"tests pass but run exits 1", Outcome{ExitCode: 1, Events: []core.Event{bash("1", "go test ./..."), bashResult("1", 0)}}, false, core.StrengthWeak, EvalExitCodeOnlyWeak},
		{"tests before the last edit", Outcome{Events: []core.Event{cite, bash("1", "go test ./..."), bashResult("1", 0), edit("e")}}, true, core.StrengthMedium, EvalTestsBeforeEdit},
		{"file change event counts as edit", Outcome{Events: []core.Event{bash("1", "npm test"), bashResult("1", 0), {Kind: core.EventFileChange, Paths: []string{"a"}}}}, true, core.StrengthWeak, EvalTestsBeforeEdit},
		{"codex apply_patch counts as edit", Outcome{Events: []core.Event{bash("1", "npm test"), bashResult("1", 0), {Kind: core.EventToolCall, Tool: "apply_patch"}}}, true, core.StrengthWeak, EvalTestsBeforeEdit},
		{"command on the result", Outcome{Events: []core.Event{{Kind: core.EventToolResult, Tool: "command_execution", Command: "make test", ExitCode: code(0)}}}, true, core.StrengthStrong, EvalTestsAfterEdit},
		{"unknown outcome is not evidence", Outcome{Events: []core.Event{bash("1", "go test ./..."), {Kind: core.EventToolResult, Tool: "Bash", ToolID: "1"}}}, true, core.StrengthWeak, EvalNoTests},
		{"masked test status is not evidence", Outcome{Events: []core.Event{cite, bash("1", "go test ./... | tail"), bashResult("1", 0)}}, true, core.StrengthMedium, EvalTestsUndecisive},
		{"non-test command is not evidence", Outcome{Events: []core.Event{cite, bash("1", "ls"), bashResult("1", 0)}}, true, core.StrengthMedium, EvalNoTests},
		{"exit 0 cited clean is medium", Outcome{Events: []core.Event{cite}}, true, core.StrengthMedium, EvalExitZeroMedium},
		{"exit 0 not cited is weak", Outcome{Events: []core.Event{text("done")}}, true, core.StrengthWeak, EvalExitCodeOnlyWeak},
		{"exit 0 cited with failing tool is weak", Outcome{Events: []core.Event{cite, bash("1", "ls nope"), bashResult("1", 2)}}, true, core.StrengthWeak, EvalFailingTools},
		{"exit 1 is a weak fail", Outcome{ExitCode: 1, Events: []core.Event{cite}}, false, core.StrengthWeak, EvalExitNonzero},
		{"failed final result", Outcome{Events: []core.Event{cite, {Kind: core.EventResult, OK: ok(false)}}}, false, core.StrengthWeak, EvalResultError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := EvaluateRun(shown, tt.out)
			if ev.Passed != tt.pass || ev.Strength != tt.strength {
				t.Fatalf("passed=%t strength=%s, want %t %s; reasons %+v", ev.Passed, ev.Strength, tt.pass, tt.strength, ev.Reasons)
			}
			wantRes := core.ResultFail
			if tt.pass {
				wantRes = core.ResultPass
			}
			mustEqual(t, "result", ev.Result, wantRes)
			found := false
			for _, r := range ev.Reasons {
				found = found || r.Code == tt.reason
			}
			if !found {
				t.Fatalf("no %s reason in %+v", tt.reason, ev.Reasons)
			}
		})
	}
}

func TestEvaluateFailingToolsReason(t *testing.T) {
	ev := EvaluateRun(nil, Outcome{Events: []core.Event{bash("1", "false"), bashResult("1", 1), bash("2", "x"), bashResult("2", 1)}})
	for _, r := range ev.Reasons {
		if r.Code == EvalFailingTools {
			mustEqual(t, "detail", r.Detail, "Bash")
			return
		}
	}
	t.Fatalf("no failing_tools reason: %+v", ev.Reasons)
}

func TestEvaluateDelegates(t *testing.T) {
	out := Outcome{ExitCode: 0, Events: []core.Event{text("[QA_REF a]")}}
	if diff := cmp.Diff(EvaluateRun([]string{"a"}, out), Evaluate([]string{"a"}, out)); diff != "" {
		t.Fatal(diff)
	}
	ev := Evaluate(nil, Outcome{})
	if ev.Shown == nil || ev.Used == nil || ev.Validations == nil {
		t.Fatalf("nil slices in %+v (they marshal as null)", ev)
	}
}
