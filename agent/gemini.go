package agent

import (
	"encoding/json"
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evidence"
)

// gemini -o stream-json: init, message (role user|assistant, content, delta),
// tool_use, tool_result, error, result.

type geminiLine struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Error      *geminiError    `json:"error"`
	Message    string          `json:"message"`
	Severity   string          `json:"severity"`
}

type geminiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (p *Parser) gemini(line []byte) {
	var l geminiLine
	if !decode(line, &l) {
		p.flushGemini()
		p.plain(line)
		return
	}
	if l.Type == "message" && l.Role == "assistant" {
		p.inText = true
		p.pending.WriteString(l.Content)
		if p.delta != nil && l.Content != "" {
			p.delta(l.Content)
		}
		return
	}
	p.flushGemini()
	if l.SessionID != "" && p.session == "" {
		p.session = l.SessionID
	}
	switch l.Type {
	case "init":
		p.emit(core.Event{Kind: core.EventStart, Text: l.Model, Raw: l.Type})
	case "message":
		// The user's prompt echoed back: not an event; a new turn starts.
		p.turnText = nil
	case "tool_use":
		e := core.Event{Kind: core.EventToolCall, ToolID: l.ToolID, Tool: l.ToolName, Args: compact(l.Parameters), Raw: l.Type}
		if l.ToolName == "run_shell_command" {
			e.Command = field(l.Parameters, "command")
		}
		if evidence.IsEditTool(l.ToolName) {
			if path := field(l.Parameters, "file_path", "absolute_path", "path"); path != "" {
				e.Paths = []string{path}
			}
		}
		p.calls[l.ToolID] = call{tool: l.ToolName, command: e.Command, paths: e.Paths}
		p.turnText = nil
		p.emit(e)
	case "tool_result":
		c := p.calls[l.ToolID]
		ok := l.Status == "success"
		text := l.Output
		if text == "" && l.Error != nil {
			text = l.Error.Message
		}
		p.emit(core.Event{Kind: core.EventToolResult, ToolID: l.ToolID, Tool: c.tool, Command: c.command, Text: text, OK: ptr(ok), Raw: l.Type})
		if ok && len(c.paths) > 0 {
			p.emit(core.Event{Kind: core.EventFileChange, ToolID: l.ToolID, Tool: c.tool, Paths: c.paths, Raw: l.Type})
		}
		p.turnText = nil
	case "error":
		msg := l.Message
		if msg == "" && l.Error != nil {
			msg = l.Error.Message
		}
		p.emit(core.Event{Kind: core.EventError, Text: msg, Raw: l.Type})
	case "result":
		if l.Error != nil && l.Error.Message != "" {
			p.emit(core.Event{Kind: core.EventError, Text: l.Error.Message, Raw: l.Type})
		}
		p.emit(core.Event{Kind: core.EventResult, Text: strings.Join(p.turnText, "\n"), OK: ptr(l.Status == "success"), Raw: l.Type})
	}
}

// flushGemini emits the assistant text gathered from message deltas as one
// event.
func (p *Parser) flushGemini() {
	if !p.inText {
		return
	}
	text := p.pending.String()
	p.pending.Reset()
	p.inText = false
	if strings.TrimSpace(text) == "" {
		return
	}
	p.turnText = append(p.turnText, text)
	p.emit(core.Event{Kind: core.EventText, Text: text, Raw: "message"})
}
