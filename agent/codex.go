package agent

import (
	"encoding/json"
	"path"
	"sort"
	"strings"

	"github.com/memex-dev/memex/core"
)

// codex exec --json. The current format has thread.started, turn.started,
// item.started / item.updated / item.completed (with an item), turn.completed,
// turn.failed and error lines. The older format wraps each event in a "msg"
// envelope ({"id": "0", "msg": {"type": "exec_command_begin", ...}}).

type codexLine struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     *codexItem      `json:"item"`
	Error    *codexError     `json:"error"`
	Message  string          `json:"message"`
	Msg      json.RawMessage `json:"msg"`
}

type codexError struct {
	Message string `json:"message"`
}

type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	ItemType         string          `json:"item_type"` // early 0.x releases
	Text             string          `json:"text"`
	Message          string          `json:"message"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Changes          []codexChange   `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            *codexError     `json:"error"`
	Query            string          `json:"query"`
}

type codexChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

func (p *Parser) codex(line []byte) {
	var l codexLine
	if !decode(line, &l) {
		p.plain(line)
		return
	}
	if len(l.Msg) > 0 {
		p.codexLegacy(l.Msg)
		return
	}
	switch l.Type {
	case "thread.started":
		if l.ThreadID != "" {
			p.session = l.ThreadID
		}
		p.emit(core.Event{Kind: core.EventStart, Raw: l.Type})
	case "turn.started":
		p.lastMessage = ""
	case "item.started", "item.updated", "item.completed":
		if l.Item != nil {
			p.codexItem(l.Type, *l.Item)
		}
	case "turn.completed":
		p.emit(core.Event{Kind: core.EventResult, Text: p.lastMessage, OK: ptr(true), Raw: l.Type})
	case "turn.failed":
		msg := l.Message
		if l.Error != nil && l.Error.Message != "" {
			msg = l.Error.Message
		}
		p.emit(core.Event{Kind: core.EventError, Text: msg, Raw: l.Type})
		p.emit(core.Event{Kind: core.EventResult, Text: p.lastMessage, OK: ptr(false), Raw: l.Type})
	case "error":
		msg := l.Message
		if msg == "" && l.Error != nil {
			msg = l.Error.Message
		}
		p.emit(core.Event{Kind: core.EventError, Text: msg, Raw: l.Type})
	}
}

func (p *Parser) codexItem(typ string, it codexItem) {
	kind := it.Type
	if kind == "" {
		kind = it.ItemType
	}
	completed := typ == "item.completed"
	switch kind {
	case "agent_message", "assistant_message":
		if completed {
			text := it.Text
			if text == "" {
				text = it.Message
			}
			p.lastMessage = text
			p.emit(core.Event{Kind: core.EventText, ToolID: it.ID, Text: text, Raw: typ})
		}
	case "reasoning":
		if completed && it.Text != "" {
			p.emit(core.Event{Kind: core.EventReasoning, ToolID: it.ID, Text: it.Text, Raw: typ})
		}
	case "command_execution":
		p.codexToolCall(typ, it, core.Event{Kind: core.EventToolCall, ToolID: it.ID, Tool: kind, Command: it.Command, Raw: typ})
		if completed {
			ok := it.Status == "completed" || it.Status == ""
			if it.ExitCode != nil {
				ok = ok && *it.ExitCode == 0
			}
			p.emit(core.Event{
				Kind: core.EventToolResult, ToolID: it.ID, Tool: kind, Command: it.Command,
				Text: it.AggregatedOutput, OK: ptr(ok), ExitCode: it.ExitCode, Raw: typ,
			})
		}
	case "mcp_tool_call":
		tool := it.Tool
		if it.Server != "" {
			tool = it.Server + "." + it.Tool
		}
		p.codexToolCall(typ, it, core.Event{Kind: core.EventToolCall, ToolID: it.ID, Tool: tool, Args: compact(it.Arguments), Raw: typ})
		if completed {
			text := codexMCPResult(it.Result)
			if it.Error != nil && it.Error.Message != "" {
				text = it.Error.Message
			}
			ok := it.Status != "failed" && it.Error == nil
			p.emit(core.Event{Kind: core.EventToolResult, ToolID: it.ID, Tool: tool, Text: text, OK: ptr(ok), Raw: typ})
		}
	case "web_search":
		args, _ := json.Marshal(map[string]string{"query": it.Query})
		p.codexToolCall(typ, it, core.Event{Kind: core.EventToolCall, ToolID: it.ID, Tool: kind, Args: string(args), Raw: typ})
		if completed {
			p.emit(core.Event{Kind: core.EventToolResult, ToolID: it.ID, Tool: kind, OK: ptr(it.Status != "failed"), Raw: typ})
		}
	case "file_change":
		if !completed {
			return
		}
		paths := make([]string, 0, len(it.Changes))
		kinds := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
			kinds = append(kinds, c.Kind+" "+c.Path)
		}
		p.emit(core.Event{
			Kind: core.EventFileChange, ToolID: it.ID, Tool: kind, Paths: paths,
			Text: strings.Join(kinds, "\n"), OK: ptr(it.Status != "failed"), Raw: typ,
		})
	case "error":
		if completed {
			msg := it.Message
			if msg == "" {
				msg = it.Text
			}
			p.emit(core.Event{Kind: core.EventError, ToolID: it.ID, Text: msg, Raw: typ})
		}
	}
	// todo_list (the agent's plan) and unknown item types are not events.
}

// codexToolCall emits call once per item: on item.started, or on
// item.completed when no start was seen.
func (p *Parser) codexToolCall(typ string, it codexItem, call core.Event) {
	if typ == "item.updated" || p.started[it.ID] {
		return
	}
	p.started[it.ID] = true
	p.emit(call)
}

func codexMCPResult(raw json.RawMessage) string {
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &r) == nil && len(r.Content) > 0 {
		return contentText(r.Content)
	}
	return compact(raw)
}

// Older codex exec --json: {"id": "...", "msg": {"type": ..., ...}}.

type codexMsg struct {
	Type             string                     `json:"type"`
	Message          string                     `json:"message"`
	Text             string                     `json:"text"`
	SessionID        string                     `json:"session_id"`
	Model            string                     `json:"model"`
	CallID           string                     `json:"call_id"`
	Command          json.RawMessage            `json:"command"`
	AggregatedOutput string                     `json:"aggregated_output"`
	Stdout           string                     `json:"stdout"`
	Stderr           string                     `json:"stderr"`
	ExitCode         *int                       `json:"exit_code"`
	Success          *bool                      `json:"success"`
	Changes          map[string]json.RawMessage `json:"changes"`
	LastAgentMessage *string                    `json:"last_agent_message"`
	Invocation       *struct {
		Server    string          `json:"server"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"invocation"`
	Result json.RawMessage `json:"result"`
}

func (p *Parser) codexLegacy(raw json.RawMessage) {
	var m codexMsg
	if !decode(raw, &m) {
		return
	}
	const raw0 = "msg."
	switch m.Type {
	case "session_configured":
		if m.SessionID != "" {
			p.session = m.SessionID
		}
		p.emit(core.Event{Kind: core.EventStart, Text: m.Model, Raw: raw0 + m.Type})
	case "task_started":
		p.lastMessage = ""
	case "agent_message":
		p.lastMessage = m.Message
		p.emit(core.Event{Kind: core.EventText, Text: m.Message, Raw: raw0 + m.Type})
	case "agent_reasoning":
		p.emit(core.Event{Kind: core.EventReasoning, Text: m.Text, Raw: raw0 + m.Type})
	case "exec_command_begin":
		cmd := shellCommand(m.Command)
		p.calls[m.CallID] = call{tool: "shell", command: cmd}
		p.emit(core.Event{Kind: core.EventToolCall, ToolID: m.CallID, Tool: "shell", Command: cmd, Args: compact(m.Command), Raw: raw0 + m.Type})
	case "exec_command_end":
		c := p.calls[m.CallID]
		out := m.AggregatedOutput
		if out == "" {
			out = strings.TrimRight(m.Stdout+m.Stderr, "\n")
		}
		ok := m.ExitCode == nil || *m.ExitCode == 0
		p.emit(core.Event{Kind: core.EventToolResult, ToolID: m.CallID, Tool: "shell", Command: c.command, Text: out, OK: ptr(ok), ExitCode: m.ExitCode, Raw: raw0 + m.Type})
	case "patch_apply_begin":
		paths := make([]string, 0, len(m.Changes))
		for name := range m.Changes {
			paths = append(paths, name)
		}
		sort.Strings(paths)
		p.calls[m.CallID] = call{tool: "apply_patch", paths: paths}
		p.emit(core.Event{Kind: core.EventToolCall, ToolID: m.CallID, Tool: "apply_patch", Paths: paths, Raw: raw0 + m.Type})
	case "patch_apply_end":
		c := p.calls[m.CallID]
		ok := m.Success == nil || *m.Success
		p.emit(core.Event{Kind: core.EventToolResult, ToolID: m.CallID, Tool: "apply_patch", Text: strings.TrimRight(m.Stdout+m.Stderr, "\n"), OK: ptr(ok), Raw: raw0 + m.Type})
		if ok && len(c.paths) > 0 {
			p.emit(core.Event{Kind: core.EventFileChange, ToolID: m.CallID, Tool: "apply_patch", Paths: c.paths, OK: ptr(true), Raw: raw0 + m.Type})
		}
	case "mcp_tool_call_begin", "mcp_tool_call_end":
		tool := "mcp"
		var args string
		if m.Invocation != nil {
			tool = m.Invocation.Server + "." + m.Invocation.Tool
			args = compact(m.Invocation.Arguments)
		}
		if m.Type == "mcp_tool_call_begin" {
			p.emit(core.Event{Kind: core.EventToolCall, ToolID: m.CallID, Tool: tool, Args: args, Raw: raw0 + m.Type})
			return
		}
		var res struct {
			Ok  json.RawMessage `json:"Ok"`
			Err string          `json:"Err"`
		}
		_ = json.Unmarshal(m.Result, &res)
		text, ok := codexMCPResult(res.Ok), res.Err == ""
		if !ok {
			text = res.Err
		}
		p.emit(core.Event{Kind: core.EventToolResult, ToolID: m.CallID, Tool: tool, Text: text, OK: ptr(ok), Raw: raw0 + m.Type})
	case "task_complete":
		text := p.lastMessage
		if m.LastAgentMessage != nil {
			text = *m.LastAgentMessage
		}
		p.emit(core.Event{Kind: core.EventResult, Text: text, OK: ptr(true), Raw: raw0 + m.Type})
	case "error", "stream_error":
		p.emit(core.Event{Kind: core.EventError, Text: m.Message, Raw: raw0 + m.Type})
	}
}

// shellCommand returns the command line of an exec argv: the script of
// ["bash", "-lc", script], else the words joined by spaces.
func shellCommand(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil {
		return ""
	}
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
		switch path.Base(argv[0]) {
		case "bash", "sh", "zsh", "dash":
			return argv[2]
		}
	}
	return strings.Join(argv, " ")
}
