package core

import "time"

// EventKind is the kind of a normalised agent event.
type EventKind string

const (
	EventStart      EventKind = "start"       // session or turn started
	EventText       EventKind = "text"        // the agent's own text (assistant message)
	EventReasoning  EventKind = "reasoning"   // thinking / reasoning text
	EventToolCall   EventKind = "tool_call"   // the agent asked to run a tool
	EventToolResult EventKind = "tool_result" // a tool's output came back
	EventFileChange EventKind = "file_change" // the agent edited files
	EventResult     EventKind = "result"      // the final answer of the run
	EventError      EventKind = "error"       // the backend reported an error
)

// Event is one normalised event of an agent run, whatever the backend
// (claude stream-json, codex exec --json, gemini stream-json, or plain text
// from any command). Every content block of a backend event becomes its own
// Event. Only EventText and EventResult are the agent's *own* text: anchors
// are counted there and nowhere else (SPEC §3.3).
type Event struct {
	Kind EventKind `json:"kind"`
	// Seq is the event's position in the run, from 0.
	Seq  int       `json:"seq"`
	Time time.Time `json:"time,omitzero"`
	// SessionID is the backend's session / thread id, when it gives one.
	SessionID string `json:"session_id,omitempty"`
	// Text is the message, reasoning, tool output or final answer.
	Text string `json:"text,omitempty"`
	// ToolID pairs a tool call with its result.
	ToolID string `json:"tool_id,omitempty"`
	// Tool is the tool's name (Bash, shell, command_execution, Edit, ...).
	Tool string `json:"tool,omitempty"`
	// Command is the shell command line of a shell tool call or result.
	Command string `json:"command,omitempty"`
	// Args is the tool call's arguments as JSON.
	Args string `json:"args,omitempty"`
	// Paths are the files a file-change or edit tool touched.
	Paths []string `json:"paths,omitempty"`
	// OK reports a tool result's or the run's success when the backend says.
	OK *bool `json:"ok,omitempty"`
	// ExitCode of a shell tool result, when known.
	ExitCode *int `json:"exit_code,omitempty"`
	// Raw is the backend's type name of the event ("assistant", "item.completed").
	Raw string `json:"raw,omitempty"`
}

// Own reports whether the event is the agent's own text.
func (e Event) Own() bool { return e.Kind == EventText || e.Kind == EventResult }

// Failed reports whether the event is a tool result or run result that says
// it failed.
func (e Event) Failed() bool {
	if e.OK != nil && !*e.OK {
		return true
	}
	return e.ExitCode != nil && *e.ExitCode != 0
}
