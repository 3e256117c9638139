package agent

import (
	"encoding/json"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evidence"
)

// claude -p --output-format stream-json --verbose: one JSON object per line,
// typed system (subtype init), assistant, user, result.

type claudeLine struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Model     string          `json:"model"`
	Message   json.RawMessage `json:"message"`
	Result    json.RawMessage `json:"result"`
	IsError   bool            `json:"is_error"`
}

type claudeMessage struct {
	Content json.RawMessage `json:"content"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (p *Parser) claude(line []byte) {
	var l claudeLine
	if !decode(line, &l) {
		p.plain(line)
		return
	}
	if l.SessionID != "" && p.session == "" {
		p.session = l.SessionID
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" || l.Subtype == "" {
			p.emit(core.Event{Kind: core.EventStart, SessionID: l.SessionID, Text: l.Model, Raw: "system"})
		}
	case "assistant":
		for _, b := range claudeBlocks(l.Message) {
			p.claudeAssistant(b)
		}
	case "user":
		for _, b := range claudeBlocks(l.Message) {
			if b.Type != "tool_result" {
				continue
			}
			c := p.calls[b.ToolUseID]
			p.emit(core.Event{
				Kind:    core.EventToolResult,
				ToolID:  b.ToolUseID,
				Tool:    c.tool,
				Command: c.command,
				Text:    contentText(b.Content),
				OK:      ptr(!b.IsError),
				Raw:     "user",
			})
			// An edit changed its file only when it succeeded.
			if !b.IsError && len(c.paths) > 0 {
				p.emit(core.Event{Kind: core.EventFileChange, ToolID: b.ToolUseID, Tool: c.tool, Paths: c.paths, Raw: "user"})
			}
		}
	case "result":
		var text string
		_ = json.Unmarshal(l.Result, &text)
		p.emit(core.Event{
			Kind: core.EventResult,
			Text: text,
			OK:   ptr(!l.IsError && l.Subtype == "success"),
			Raw:  "result",
		})
	}
}

func (p *Parser) claudeAssistant(b claudeBlock) {
	switch b.Type {
	case "text":
		if b.Text != "" {
			p.emit(core.Event{Kind: core.EventText, Text: b.Text, Raw: "assistant"})
		}
	case "thinking":
		if b.Thinking != "" {
			p.emit(core.Event{Kind: core.EventReasoning, Text: b.Thinking, Raw: "assistant"})
		}
	case "tool_use":
		e := core.Event{Kind: core.EventToolCall, ToolID: b.ID, Tool: b.Name, Args: compact(b.Input), Raw: "assistant"}
		if b.Name == "Bash" {
			e.Command = field(b.Input, "command")
		}
		// An edit tool's call carries the path it changes, and its
		// successful result is followed by an EventFileChange (a failed edit
		// changed nothing).
		if evidence.IsEditTool(b.Name) {
			if path := field(b.Input, "file_path", "notebook_path", "path"); path != "" {
				e.Paths = []string{path}
			}
		}
		p.calls[b.ID] = call{tool: b.Name, command: e.Command, paths: e.Paths}
		p.emit(e)
	}
}

// claudeBlocks returns a message's content blocks; a string content is one
// text block.
func claudeBlocks(raw json.RawMessage) []claudeBlock {
	var m claudeMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []claudeBlock{{Type: "text", Text: s}}
	}
	var blocks []claudeBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		// Decode block by block so one odd block does not lose the others.
		var raws []json.RawMessage
		if json.Unmarshal(m.Content, &raws) != nil {
			return nil
		}
		blocks = blocks[:0]
		for _, r := range raws {
			var b claudeBlock
			if decode(r, &b) {
				blocks = append(blocks, b)
			}
		}
	}
	return blocks
}
