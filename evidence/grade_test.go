package evidence_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memex-dev/memex/agent"
	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evidence"
)

func okp(b bool) *bool          { return &b }
func code(n int) *int           { return &n }
func final(s string) core.Event { return core.Event{Kind: core.EventResult, Text: s, OK: okp(true)} }
func call(id, tool, cmd string) core.Event {
	return core.Event{Kind: core.EventToolCall, ToolID: id, Tool: tool, Command: cmd}
}
func result(id, tool string, ok bool) core.Event {
	return core.Event{Kind: core.EventToolResult, ToolID: id, Tool: tool, OK: okp(ok)}
}
func edited() core.Event { return core.Event{Kind: core.EventFileChange, Paths: []string{"main.go"}} }

func TestGrade(t *testing.T) {
	tests := []struct {
		name      string
		run       evidence.Run
		passed    bool
		strength  core.Strength
		learnable bool
	}{
		{"exit 0, no tools", evidence.Run{Events: []core.Event{final("Use sync.Once for lazy init, it is safe for concurrent use.")}}, true, core.StrengthWeak, true},
		{"exit 1", evidence.Run{ExitCode: 1, Events: []core.Event{final("done")}}, false, core.StrengthWeak, false},
		{"tests after edit pass", evidence.Run{Events: []core.Event{edited(), call("t", "Bash", "go test ./..."), result("t", "Bash", true), final("fixed")}}, true, core.StrengthStrong, true},
		{"tests after edit fail", evidence.Run{Events: []core.Event{edited(), call("t", "Bash", "go test ./..."), result("t", "Bash", false), final("fixed")}}, false, core.StrengthStrong, false},
		{"failing tool after the last edit", evidence.Run{Events: []core.Event{
			edited(), call("d", "Bash", "kubectl apply -f deploy.yaml"), result("d", "Bash", false), final("Deployed the manifest."),
		}}, false, core.StrengthWeak, false},
		{"failed edit after the last edit", evidence.Run{Events: []core.Event{
			edited(), call("e", "Edit", ""), result("e", "Edit", false), final("Updated the config."),
		}}, false, core.StrengthWeak, false},
		{"failing tool before the last edit", evidence.Run{Events: []core.Event{
			call("d", "Bash", "make deploy"), result("d", "Bash", false), edited(), final("Fixed the Makefile target."),
		}}, true, core.StrengthWeak, true},
		{"failure repaired by the same command", evidence.Run{Events: []core.Event{
			edited(), call("a", "Bash", "kubectl apply -f d.yaml"), result("a", "Bash", false),
			call("b", "Bash", "kubectl apply -f d.yaml"), result("b", "Bash", true), final("Applied on the second try."),
		}}, true, core.StrengthWeak, true},
		{"failure repaired by a later passing test", evidence.Run{Events: []core.Event{
			edited(), call("a", "Bash", "go run ./cmd/x"), result("a", "Bash", false),
			call("b", "Bash", "go test ./..."), result("b", "Bash", true), final("fixed"),
		}}, true, core.StrengthStrong, true},
		{"a probe may fail", evidence.Run{Events: []core.Event{
			edited(), call("g", "Bash", "grep -rn oldName ."), result("g", "Bash", false),
			call("r", "Read", ""), result("r", "Read", false), final("Renamed oldName everywhere."),
		}}, true, core.StrengthWeak, true},
		{"gave up on exit 0", evidence.Run{Events: []core.Event{final("I could not deploy: the registry rejects the image.")}}, false, core.StrengthWeak, false},
		{"gave up after passing tests", evidence.Run{Events: []core.Event{edited(), call("t", "Bash", "go test ./..."), result("t", "Bash", true), final("I was unable to fix the flaky test.")}}, false, core.StrengthWeak, false},
		{"verify decides, but a give-up teaches nothing", evidence.Run{Verify: code(0), Events: []core.Event{final("I couldn't find the cause.")}}, true, core.StrengthStrong, false},
		{"verify fails", evidence.Run{Verify: code(1), Events: []core.Event{final("done")}}, false, core.StrengthStrong, false},
		{"cited and clean", evidence.Run{Cited: true, Events: []core.Event{final("Used the stored answer.")}}, true, core.StrengthMedium, true},
		{"backend result error", evidence.Run{Events: []core.Event{{Kind: core.EventResult, Text: "error", OK: okp(false)}}}, false, core.StrengthWeak, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := evidence.Grade(tt.run)
			if v.Passed != tt.passed || v.Strength != tt.strength || v.Learnable != tt.learnable {
				t.Fatalf("Grade = passed %v %s learnable %v, want %v %s %v (findings %+v)",
					v.Passed, v.Strength, v.Learnable, tt.passed, tt.strength, tt.learnable, v.Findings)
			}
		})
	}
}

func TestGaveUp(t *testing.T) {
	yes := []string{
		"I could not deploy the service: the registry rejects the image.",
		"I couldn't get the build to pass.",
		"I was unable to reproduce the crash.",
		"We weren't able to finish the migration.",
		"The release check script does not exist and I could not add it.",
		"I created src/tax.js but could not wire it into cart.js; the cart test still fails.",
		"I didn't manage to fix it.",
		"I can't complete this without credentials.",
		"I gave up after three attempts.",
		"部署无法完成，镜像被拒绝。",
		"测试仍然失败。",
	}
	no := []string{
		"Run go test -race ./... to find the data race.",
		"You cannot use a nil map; make it first with make(map[string]int).",
		"Fixed: the handler now closes the body. All tests pass.",
		"If the build fails, delete the cache and retry.",
		"",
	}
	for _, s := range yes {
		if !evidence.GaveUp(s) {
			t.Errorf("GaveUp(%q) = false, want true", s)
		}
	}
	for _, s := range no {
		if evidence.GaveUp(s) {
			t.Errorf("GaveUp(%q) = true, want false", s)
		}
	}
}

// TestGradeTranscripts grades the recorded transcripts of every backend:
// the failing ones (a tool failing after the last edit, an answer that
// gives up) are never a pass and never learnable.
func TestGradeTranscripts(t *testing.T) {
	tests := []struct {
		file      string
		passed    bool
		learnable bool
	}{
		{"claude/coding_task.jsonl", true, true},
		{"claude/failing_command.jsonl", false, false},
		{"claude/error_result.jsonl", false, false},
		{"codex/coding_task.jsonl", true, true},
		{"codex/failing_command.jsonl", false, false},
		{"gemini/coding_task.jsonl", true, true},
		{"gemini/failing_command.jsonl", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "agent", "testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			events, err := agent.ParseStream(agent.Format(filepath.Dir(tt.file)), f)
			if err != nil {
				t.Fatal(err)
			}
			v := evidence.Grade(evidence.Run{Events: events})
			if v.Passed != tt.passed || v.Learnable != tt.learnable {
				t.Fatalf("Grade = passed %v learnable %v, want %v %v (findings %+v)", v.Passed, v.Learnable, tt.passed, tt.learnable, v.Findings)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for tool, want := range map[string]evidence.ToolKind{
		"Edit": evidence.ToolEdit, "MultiEdit": evidence.ToolEdit, "Write": evidence.ToolEdit, "NotebookEdit": evidence.ToolEdit,
		"apply_patch": evidence.ToolEdit, "write_file": evidence.ToolEdit, "replace": evidence.ToolEdit, "smart_edit": evidence.ToolEdit,
		"Bash": evidence.ToolShell, "shell": evidence.ToolShell, "run_shell_command": evidence.ToolShell, "command_execution": evidence.ToolShell,
		"Read": evidence.ToolRead, "Grep": evidence.ToolRead, "read_file": evidence.ToolRead,
		"mcp.search": evidence.ToolOther, "Task": evidence.ToolOther,
	} {
		if got := evidence.Classify(tool); got != want {
			t.Errorf("Classify(%q) = %s, want %s", tool, got, want)
		}
	}
}
