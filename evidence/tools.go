package evidence

import (
	"encoding/json"
	"strings"

	"github.com/memex-dev/memex/core"
)

// ToolKind is what a tool does, as far as evidence is concerned.
type ToolKind int

// The tool kinds.
const (
	ToolOther ToolKind = iota // anything else (MCP tools, sub-agents, …)
	ToolEdit                  // changes files: its success is an edit
	ToolShell                 // runs a shell command line
	ToolRead                  // only reads (files, directories, the web)
)

func (k ToolKind) String() string {
	switch k {
	case ToolEdit:
		return "edit"
	case ToolShell:
		return "shell"
	case ToolRead:
		return "read"
	}
	return "other"
}

// tools maps lower-cased tool names of claude, codex, gemini and common
// agent frameworks to their kind.
var tools = map[string]ToolKind{
	// edits
	"edit": ToolEdit, "write": ToolEdit, "multiedit": ToolEdit, "notebookedit": ToolEdit, "apply_patch": ToolEdit,
	"write_file": ToolEdit, "replace": ToolEdit, "smart_edit": ToolEdit, "edit_file": ToolEdit, "create_file": ToolEdit,
	"str_replace_based_edit_tool": ToolEdit, "str_replace_editor": ToolEdit,
	// shells
	"bash": ToolShell, "shell": ToolShell, "command_execution": ToolShell, "run_shell_command": ToolShell,
	"exec_command": ToolShell, "local_shell": ToolShell, "shell_command": ToolShell, "terminal": ToolShell,
	"run_terminal_cmd": ToolShell, "execute_command": ToolShell,
	// reads
	"read": ToolRead, "glob": ToolRead, "grep": ToolRead, "ls": ToolRead, "webfetch": ToolRead, "websearch": ToolRead,
	"notebookread": ToolRead, "todowrite": ToolRead, "todoread": ToolRead, "read_file": ToolRead, "read_many_files": ToolRead,
	"list_directory": ToolRead, "search_file_content": ToolRead, "google_web_search": ToolRead, "web_fetch": ToolRead,
	"web_search": ToolRead, "view": ToolRead, "view_image": ToolRead, "find_files": ToolRead, "file_search": ToolRead,
}

// Classify returns the kind of a tool by its name (any case).
func Classify(tool string) ToolKind { return tools[strings.ToLower(tool)] }

// IsEditTool reports whether the tool changes files.
func IsEditTool(tool string) bool { return Classify(tool) == ToolEdit }

// IsShellTool reports whether the tool runs a shell command line.
func IsShellTool(tool string) bool { return Classify(tool) == ToolShell }

// readOnly are commands that only look around: not steps worth keeping,
// and their failure (grep finding nothing, ls of a missing path) is an
// answer, not a failed run.
var readOnly = map[string]bool{
	"ls": true, "cat": true, "pwd": true, "head": true, "tail": true, "wc": true, "echo": true,
	"grep": true, "rg": true, "find": true, "which": true, "file": true, "tree": true,
	"less": true, "more": true, "stat": true, "du": true, "df": true, "cd": true, "true": true,
	"sed": true, "awk": true, "printf": true, "env": true, "whoami": true, "date": true, "sleep": true,
	"test": true, "[": true, "diff": true, "type": true,
}

// ReadOnlyCommand reports whether a shell command line only looks around:
// one simple command (no pipe, redirection or list) whose program reads.
func ReadOnlyCommand(cmd string) bool {
	if strings.ContainsAny(cmd, "|>;&") {
		return false
	}
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return false
	}
	if f[0] == "sed" && (containsPrefix(f[1:], "-i") || containsPrefix(f[1:], "--in-place")) {
		return false
	}
	return readOnly[f[0]]
}

func containsPrefix(args []string, p string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return false
}

// Step is one tool use of a run: a call paired with its result.
type Step struct {
	// Call and Result are the indexes of the events in the run (-1 when
	// absent: a result whose call was not seen, or a call with no result).
	Call, Result int
	Tool         string
	Kind         ToolKind
	// Command is the shell command line (shell tools), from the result, the
	// call, or the call's JSON arguments.
	Command string
	// Known: the result says whether it succeeded (ok or an exit code).
	Known bool
	// Failed: the result says it failed.
	Failed bool
}

// Succeeded reports a result that explicitly succeeded.
func (s Step) Succeeded() bool { return s.Result >= 0 && s.Known && !s.Failed }

// Probe reports a step that only looked around: a read tool, or a
// read-only shell command.
func (s Step) Probe() bool {
	return s.Kind == ToolRead || (s.Kind == ToolShell && s.Command != "" && ReadOnlyCommand(s.Command))
}

// Steps pairs the run's tool calls with their results (by tool id), in the
// order of the results; calls that never got a result come last.
func Steps(events []core.Event) []Step {
	calls := map[string]int{}
	paired := map[int]bool{}
	var out []Step
	for i, e := range events {
		switch e.Kind {
		case core.EventToolCall:
			if e.ToolID != "" {
				calls[e.ToolID] = i
			}
		case core.EventToolResult:
			s := Step{Call: -1, Result: i, Tool: e.Tool, Command: e.Command,
				Known: e.OK != nil || e.ExitCode != nil, Failed: e.Failed()}
			if ci, ok := calls[e.ToolID]; ok && e.ToolID != "" {
				s.Call = ci
				paired[ci] = true
				c := events[ci]
				if s.Tool == "" {
					s.Tool = c.Tool
				}
				if s.Command == "" {
					s.Command = c.Command
				}
				if s.Command == "" && IsShellTool(c.Tool) {
					s.Command = CommandFromArgs(c.Args)
				}
			}
			if s.Command == "" && IsShellTool(e.Tool) {
				s.Command = CommandFromArgs(e.Args)
			}
			s.Kind = Classify(s.Tool)
			if s.Kind == ToolOther && s.Command != "" {
				s.Kind = ToolShell
			}
			out = append(out, s)
		}
	}
	for i, e := range events {
		if e.Kind == core.EventToolCall && !paired[i] {
			k := Classify(e.Tool)
			if k == ToolOther && e.Command != "" {
				k = ToolShell
			}
			out = append(out, Step{Call: i, Result: -1, Tool: e.Tool, Kind: k, Command: e.Command})
		}
	}
	return out
}

// CommandFromArgs reads "command"/"cmd" from a tool call's JSON arguments
// (a string, or an argv array whose `sh -c script` form gives the script).
func CommandFromArgs(args string) string {
	if args == "" {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd"} {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var argv []string
		if json.Unmarshal(raw, &argv) == nil {
			if len(argv) == 3 && strings.HasSuffix(argv[0], "sh") && strings.HasPrefix(argv[1], "-") {
				return argv[2]
			}
			return strings.Join(argv, " ")
		}
	}
	return ""
}
