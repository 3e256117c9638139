package hooks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/memex-dev/memex/agent"
	"github.com/memex-dev/memex/core"
)

// MaxTranscriptTail is how much of the end of a JSONL transcript ReadTurn
// reads: a turn is at the end, and a long session's file can be far larger.
const MaxTranscriptTail = 16 << 20

// MaxTranscriptBytes bounds a whole-file (JSON) transcript.
const MaxTranscriptBytes = 64 << 20

// ErrNoTranscript is returned when the hook input names no transcript or the
// file does not exist.
var ErrNoTranscript = errors.New("no transcript")

// Turn is what the host's transcript says about the turn that just ended.
type Turn struct {
	// Events are the agent's own text, tool calls and tool results after
	// the turn's prompt, in order, numbered from 0; the last is an
	// EventResult carrying the final assistant message when there is one.
	Events []core.Event
	// Prompt is the turn's prompt as the transcript has it ("" if absent).
	Prompt string
}

// ReadTurn reads the turn that just ended from the transcript the stop
// hook's input names, in host h's format: Claude Code's JSONL transcript,
// Codex's rollout JSONL, Gemini CLI's session JSON. The hook input's own
// final message (last_assistant_message, prompt_response) is added when the
// transcript lacks it.
func ReadTurn(h Host, in Input) (Turn, error) {
	if in.TranscriptPath == "" {
		return Turn{}, fmt.Errorf("%w: the hook input has no transcript_path", ErrNoTranscript)
	}
	f, err := os.Open(in.TranscriptPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Turn{}, fmt.Errorf("%w: %s does not exist", ErrNoTranscript, in.TranscriptPath)
		}
		return Turn{}, fmt.Errorf("transcript: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	var t Turn
	switch h {
	case Claude:
		lines, err := tailLines(f)
		if err != nil {
			return Turn{}, err
		}
		t = claudeTurn(lines)
	case Codex:
		lines, err := tailLines(f)
		if err != nil {
			return Turn{}, err
		}
		t = codexTurn(lines)
	case Gemini:
		b, err := io.ReadAll(io.LimitReader(f, MaxTranscriptBytes+1))
		if err != nil {
			return Turn{}, fmt.Errorf("transcript: %w", err)
		}
		if len(b) > MaxTranscriptBytes {
			return Turn{}, fmt.Errorf("transcript: larger than %d bytes", MaxTranscriptBytes)
		}
		if t, err = geminiTurn(b); err != nil {
			return Turn{}, err
		}
	default:
		return Turn{}, fmt.Errorf("transcript: unknown host %q", h)
	}
	final := in.LastAssistantMessage
	if h == Gemini {
		final = in.PromptResponse
	}
	t.Events = finish(t.Events, final)
	return t, nil
}

// finish appends the final result (the last own text, or the host's final
// message) and numbers the events.
func finish(evs []core.Event, final string) []core.Event {
	if strings.TrimSpace(final) == "" {
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Kind == core.EventText {
				final = evs[i].Text
				break
			}
		}
	}
	if strings.TrimSpace(final) != "" {
		ok := true
		evs = append(evs, core.Event{Kind: core.EventResult, Text: final, OK: &ok, Raw: "stop"})
	}
	for i := range evs {
		evs[i].Seq = i
	}
	return evs
}

// tailLines returns the lines of the last MaxTranscriptTail bytes of f
// (without a partial first line).
func tailLines(f *os.File) ([][]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	off := int64(0)
	if st.Size() > MaxTranscriptTail {
		off = st.Size() - MaxTranscriptTail
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), MaxTranscriptTail)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	return out, nil
}

// --- Claude Code: ~/.claude/projects/<dir>/<session>.jsonl ---------------
//
// One JSON object per line. Conversation lines have type "user" or
// "assistant" and a message with the API's content blocks (the same blocks
// `claude -p --output-format stream-json` prints, so agent's claude parser
// reads them); other types (summary, system, file-history-snapshot, …) are
// bookkeeping. A user line whose content is text (not tool results) and is
// not isMeta starts a turn; sidechain lines are a subagent's.

type claudeTranscriptLine struct {
	Type        string `json:"type"`
	IsMeta      bool   `json:"isMeta"`
	IsSidechain bool   `json:"isSidechain"`
	Message     struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func claudeTurn(lines [][]byte) Turn {
	start, prompt := -1, ""
	parsed := make([]claudeTranscriptLine, len(lines))
	for i, l := range lines {
		if json.Unmarshal(l, &parsed[i]) != nil {
			parsed[i] = claudeTranscriptLine{}
			continue
		}
		p := parsed[i]
		if p.Type != "user" || p.IsMeta || p.IsSidechain {
			continue
		}
		if text, ok := claudePromptText(p.Message.Content); ok {
			start, prompt = i, text
		}
	}
	p := agent.NewParser(agent.FormatClaude)
	var evs []core.Event
	for i := start + 1; i < len(lines); i++ {
		if parsed[i].IsSidechain || (parsed[i].Type != "user" && parsed[i].Type != "assistant") {
			continue
		}
		evs = append(evs, p.Line(lines[i])...)
	}
	evs = append(evs, p.Finish()...)
	return Turn{Events: evs, Prompt: prompt}
}

// claudePromptText returns the text of a user message that is a prompt: a
// string, or text blocks with no tool result among them.
func claudePromptText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, strings.TrimSpace(s) != ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var texts []string
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			return "", false
		case "text":
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), len(texts) > 0
}

// --- Codex: ~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl --------------------
//
// {"timestamp", "type", "payload"} lines. type response_item carries the
// model's items (message, reasoning, function_call, function_call_output,
// custom_tool_call, custom_tool_call_output, local_shell_call); type
// event_msg carries UI events (user_message starts a turn; agent_message,
// exec_command_end with the exit code, patch_apply_end).

type codexRolloutLine struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Message   string          `json:"message"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	ExitCode  *int            `json:"exit_code"`
	Success   *bool           `json:"success"`
	Status    string          `json:"status"`
	Action    struct {
		Command []string `json:"command"`
	} `json:"action"`
}

// codexShellTools are the function tools that run a shell command.
var codexShellTools = map[string]bool{"shell": true, "container.exec": true, "local_shell": true, "exec_command": true, "shell_command": true}

var (
	exitCodeLine = regexp.MustCompile(`(?m)^(?:Exit code|Process exited with code|exit_code)[:=]?\s*(-?\d+)`)
	geminiExit   = regexp.MustCompile(`(?m)^Exit Code:\s*(-?\d+)`)
)

func codexTurn(lines [][]byte) Turn {
	items := make([]codexRolloutLine, 0, len(lines))
	for _, l := range lines {
		var r codexRolloutLine
		if json.Unmarshal(l, &r) == nil && (r.Type == "response_item" || r.Type == "event_msg") {
			items = append(items, r)
		}
	}
	payloads := make([]codexPayload, len(items))
	start, prompt := -1, ""
	hasUserMsg := false
	for i, it := range items {
		_ = json.Unmarshal(it.Payload, &payloads[i])
		if it.Type == "event_msg" && payloads[i].Type == "user_message" {
			hasUserMsg = true
		}
	}
	for i, it := range items {
		p := payloads[i]
		switch {
		case hasUserMsg && it.Type == "event_msg" && p.Type == "user_message":
			start, prompt = i, p.Message
		case !hasUserMsg && it.Type == "response_item" && p.Type == "message" && p.Role == "user":
			if text := codexText(p.Content); !strings.HasPrefix(strings.TrimSpace(text), "<") {
				start, prompt = i, text
			}
		}
	}
	// Exit codes and patch outcomes the UI events report, by call id.
	exits := map[string]int{}
	patched := map[string]bool{}
	for i := start + 1; i < len(items); i++ {
		p := payloads[i]
		if items[i].Type != "event_msg" {
			continue
		}
		switch p.Type {
		case "exec_command_end":
			if p.ExitCode != nil && p.CallID != "" {
				exits[p.CallID] = *p.ExitCode
			}
		case "patch_apply_end":
			if p.Success != nil && p.CallID != "" {
				patched[p.CallID] = *p.Success
			}
		}
	}
	type call struct{ tool, command string }
	calls := map[string]call{}
	var evs []core.Event
	var agentMsgs []string
	sawAssistant := false
	for i := start + 1; i < len(items); i++ {
		p := payloads[i]
		if items[i].Type == "event_msg" {
			if p.Type == "agent_message" && p.Message != "" {
				agentMsgs = append(agentMsgs, p.Message)
			}
			continue
		}
		switch p.Type {
		case "message":
			if p.Role == "assistant" {
				if text := codexText(p.Content); strings.TrimSpace(text) != "" {
					sawAssistant = true
					evs = append(evs, core.Event{Kind: core.EventText, Text: text, Raw: "message"})
				}
			}
		case "function_call", "custom_tool_call", "local_shell_call":
			c := call{tool: p.Name}
			switch {
			case p.Type == "local_shell_call":
				c.tool, c.command = "local_shell", shellLine(p.Action.Command)
			case codexShellTools[p.Name]:
				c.command = codexCommand(p.Arguments)
			}
			if p.Name == "apply_patch" || strings.Contains(c.command, "apply_patch") {
				c.tool = "apply_patch"
			}
			calls[p.CallID] = c
			evs = append(evs, core.Event{Kind: core.EventToolCall, ToolID: p.CallID, Tool: c.tool, Command: c.command, Args: argsOf(p), Raw: p.Type})
			if p.Type == "local_shell_call" && p.Status != "" && p.Status != "in_progress" {
				if code, ok := exits[p.CallID]; ok {
					evs = append(evs, shellResult(p.CallID, c.tool, c.command, "", code))
				}
			}
		case "function_call_output", "custom_tool_call_output":
			c := calls[p.CallID]
			text, code, known := codexOutput(p.Output)
			if v, ok := exits[p.CallID]; ok {
				code, known = v, true
			}
			e := core.Event{Kind: core.EventToolResult, ToolID: p.CallID, Tool: c.tool, Command: c.command, Text: text, Raw: p.Type}
			if ok, isPatch := patched[p.CallID]; isPatch {
				e.OK = &ok
			} else if known {
				e = shellResult(p.CallID, c.tool, c.command, text, code)
				e.Raw = p.Type
			}
			evs = append(evs, e)
			if c.tool == "apply_patch" && !e.Failed() && (e.OK != nil || e.ExitCode != nil) {
				evs = append(evs, core.Event{Kind: core.EventFileChange, ToolID: p.CallID, Tool: c.tool, Raw: p.Type})
			}
		}
	}
	if !sawAssistant {
		for _, m := range agentMsgs {
			evs = append(evs, core.Event{Kind: core.EventText, Text: m, Raw: "agent_message"})
		}
	}
	return Turn{Events: evs, Prompt: prompt}
}

func shellResult(id, tool, command, text string, code int) core.Event {
	ok := code == 0
	return core.Event{Kind: core.EventToolResult, ToolID: id, Tool: tool, Command: command, Text: text, OK: &ok, ExitCode: &code}
}

func argsOf(p codexPayload) string {
	if p.Arguments != "" {
		return p.Arguments
	}
	return ""
}

// codexText joins the text parts of a message's content.
func codexText(raw json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// codexCommand returns the command line of a shell function call's
// arguments: {"command": ["bash","-lc","go test ./..."]} or {"command":
// "…"} or {"cmd": "…"}.
func codexCommand(args string) string {
	var a struct {
		Command json.RawMessage `json:"command"`
		Cmd     string          `json:"cmd"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		return ""
	}
	if a.Cmd != "" {
		return a.Cmd
	}
	var argv []string
	if json.Unmarshal(a.Command, &argv) == nil {
		return shellLine(argv)
	}
	var s string
	_ = json.Unmarshal(a.Command, &s)
	return s
}

// shellLine turns an argv into a command line: the script of `sh -c X` /
// `bash -lc X`, else the words joined.
func shellLine(argv []string) string {
	if len(argv) == 3 && (strings.HasSuffix(argv[0], "sh")) && strings.HasPrefix(argv[1], "-") && strings.Contains(argv[1], "c") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// codexOutput reads a tool output: a JSON string or object {"output",
// "metadata": {"exit_code"}}, or plain text with an "Exit code: N" line.
func codexOutput(raw json.RawMessage) (text string, code int, known bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			for _, p := range parts {
				s += p.Text
			}
		} else {
			s = string(raw)
		}
	}
	var wrapped struct {
		Output   string `json:"output"`
		Metadata struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(s), &wrapped) == nil && (wrapped.Output != "" || wrapped.Metadata.ExitCode != nil) {
		if wrapped.Metadata.ExitCode != nil {
			return wrapped.Output, *wrapped.Metadata.ExitCode, true
		}
		return wrapped.Output, 0, false
	}
	if m := exitCodeLine.FindStringSubmatch(s); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return s, n, true
		}
	}
	return s, 0, false
}

// --- Gemini CLI: ~/.gemini/tmp/<project>/chats/session-….json ------------
//
// One JSON object {sessionId, projectHash, startTime, lastUpdated,
// messages}; each message has id, timestamp, type (user, gemini, info,
// error, warning), content (a string or parts) and, for gemini messages,
// toolCalls [{id, name, args, result, status, resultDisplay}]. A JSONL
// variant (one message record per line) is read too.

type geminiMessage struct {
	Type      string           `json:"type"`
	Content   json.RawMessage  `json:"content"`
	ToolCalls []geminiToolCall `json:"toolCalls"`
}

type geminiToolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"`
	Status        string          `json:"status"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

var geminiEditTools = map[string]bool{"write_file": true, "replace": true, "edit": true, "smart_edit": true}

func geminiTurn(b []byte) (Turn, error) {
	var conv struct {
		Messages []geminiMessage `json:"messages"`
	}
	if err := json.Unmarshal(b, &conv); err != nil || conv.Messages == nil {
		// JSONL: one message (or metadata) record per line.
		conv.Messages = nil
		for _, l := range bytes.Split(b, []byte("\n")) {
			var m geminiMessage
			if json.Unmarshal(bytes.TrimSpace(l), &m) == nil && m.Type != "" {
				conv.Messages = append(conv.Messages, m)
			}
		}
		if conv.Messages == nil {
			if err != nil {
				return Turn{}, fmt.Errorf("transcript: not a Gemini CLI session: %v", err)
			}
			return Turn{}, errors.New("transcript: not a Gemini CLI session (no messages)")
		}
	}
	start, prompt := -1, ""
	for i, m := range conv.Messages {
		if m.Type == "user" {
			start, prompt = i, geminiText(m.Content)
		}
	}
	var evs []core.Event
	for _, m := range conv.Messages[start+1:] {
		if m.Type != "gemini" {
			continue
		}
		if text := geminiText(m.Content); strings.TrimSpace(text) != "" {
			evs = append(evs, core.Event{Kind: core.EventText, Text: text, Raw: "gemini"})
		}
		for _, tc := range m.ToolCalls {
			e := core.Event{Kind: core.EventToolCall, ToolID: tc.ID, Tool: tc.Name, Args: compactJSON(tc.Args), Raw: "toolCall"}
			if tc.Name == "run_shell_command" {
				e.Command = jsonField(tc.Args, "command")
			}
			if geminiEditTools[tc.Name] {
				if p := jsonField(tc.Args, "file_path", "absolute_path", "path"); p != "" {
					e.Paths = []string{p}
				}
			}
			evs = append(evs, e)
			out := geminiResultText(tc)
			ok := tc.Status == "success"
			r := core.Event{Kind: core.EventToolResult, ToolID: tc.ID, Tool: tc.Name, Command: e.Command, Text: out, OK: &ok, Raw: "toolCall"}
			if tc.Name == "run_shell_command" && ok {
				// The shell tool succeeds as a tool whatever the command's
				// status; the command's exit code is in its output.
				code := 0
				if m := geminiExit.FindStringSubmatch(out); m != nil {
					code, _ = strconv.Atoi(m[1])
				}
				cok := code == 0
				r.OK, r.ExitCode = &cok, &code
			}
			evs = append(evs, r)
			if ok && len(e.Paths) > 0 {
				evs = append(evs, core.Event{Kind: core.EventFileChange, ToolID: tc.ID, Tool: tc.Name, Paths: e.Paths, Raw: "toolCall"})
			}
		}
	}
	return Turn{Events: evs, Prompt: prompt}, nil
}

// geminiText returns a message's text: a string or a list of parts.
func geminiText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var texts []string
		for _, p := range parts {
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// geminiResultText is a tool call's output for the model: the
// functionResponse's output, else the display text.
func geminiResultText(tc geminiToolCall) string {
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output string `json:"output"`
				Error  string `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(tc.Result, &parts) == nil {
		var texts []string
		for _, p := range parts {
			if o := p.FunctionResponse.Response.Output; o != "" {
				texts = append(texts, o)
			} else if e := p.FunctionResponse.Response.Error; e != "" {
				texts = append(texts, e)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	var s string
	if json.Unmarshal(tc.ResultDisplay, &s) == nil {
		return s
	}
	return ""
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&b, raw) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}

func jsonField(raw json.RawMessage, keys ...string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range keys {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}
