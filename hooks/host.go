package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"
)

// Host is a coding agent that calls memex's hooks.
type Host string

// The hosts.
const (
	Claude Host = "claude" // Claude Code
	Codex  Host = "codex"  // OpenAI Codex CLI
	Gemini Host = "gemini" // Gemini CLI
)

// Hosts lists every host, in a fixed order.
func Hosts() []Host { return []Host{Claude, Codex, Gemini} }

// ParseHost returns the host named s.
func ParseHost(s string) (Host, error) {
	for _, h := range Hosts() {
		if string(h) == s {
			return h, nil
		}
	}
	return "", fmt.Errorf("unknown host %q (known: claude, codex, gemini)", s)
}

// Title is the host's product name.
func (h Host) Title() string {
	switch h {
	case Claude:
		return "Claude Code"
	case Codex:
		return "Codex"
	case Gemini:
		return "Gemini CLI"
	}
	return string(h)
}

// Kind is what a hook event means to memex.
type Kind int

const (
	// KindPrompt: the user submitted a prompt; inject memory.
	KindPrompt Kind = iota + 1
	// KindStop: the turn ended; evaluate it.
	KindStop
	// KindSessionStart: a session started; memex stays quiet.
	KindSessionStart
)

func (k Kind) String() string {
	switch k {
	case KindPrompt:
		return "prompt"
	case KindStop:
		return "stop"
	case KindSessionStart:
		return "session_start"
	}
	return "unknown"
}

// events maps each host's event names to their kind.
var events = map[Host]map[string]Kind{
	Claude: {"UserPromptSubmit": KindPrompt, "Stop": KindStop, "SessionStart": KindSessionStart},
	Codex:  {"UserPromptSubmit": KindPrompt, "Stop": KindStop, "SessionStart": KindSessionStart},
	Gemini: {"BeforeAgent": KindPrompt, "AfterAgent": KindStop, "SessionStart": KindSessionStart},
}

// ErrUnknownEvent is returned for an event the host does not have or memex
// does not handle.
var ErrUnknownEvent = errors.New("unknown hook event")

// EventKind returns what event means for host h.
func (h Host) EventKind(event string) (Kind, error) {
	k, ok := events[h][event]
	if !ok {
		return 0, fmt.Errorf("%w %q for %s (known: %s)", ErrUnknownEvent, event, h, strings.Join(h.Events(), ", "))
	}
	return k, nil
}

// Events lists the host's events memex handles, sorted.
func (h Host) Events() []string {
	var out []string
	for e := range events[h] {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// InstalledEvents are the events `memex hook install` registers: the
// prompt event and the stop event, in that order, and for Claude Code
// SessionStart, which hands the session id to the session's shell
// commands (SessionEnv); memex says nothing when a session starts.
func (h Host) InstalledEvents() []string {
	switch h {
	case Gemini:
		return []string{"BeforeAgent", "AfterAgent"}
	case Claude:
		return []string{"UserPromptSubmit", "Stop", "SessionStart"}
	default:
		return []string{"UserPromptSubmit", "Stop"}
	}
}

// SessionEnv appends `export MEMEX_SESSION='<session id>'` to the file a
// Claude Code SessionStart hook finds in $CLAUDE_ENV_FILE: the host runs it
// before each of the session's Bash commands, so a `memex note add --scope
// conversation` the agent runs records into this session's conversation,
// the one the session's prompt hooks recall. An id with a control
// character is refused.
func SessionEnv(path, sessionID string) error {
	if sessionID == "" || strings.ContainsFunc(sessionID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errors.New("session env: the session id is empty or holds a control character")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("session env: %w", err)
	}
	_, err = f.WriteString("export MEMEX_SESSION='" + strings.ReplaceAll(sessionID, "'", `'\''`) + "'\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("session env: %w", err)
	}
	return nil
}

// Input is a hook's stdin, the fields of every host in one struct. Fields a
// host does not send stay zero.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	// Prompt is the user's prompt (prompt events; Gemini's AfterAgent too).
	Prompt string `json:"prompt"`
	// TurnID is Codex's id of the turn (UserPromptSubmit and Stop).
	TurnID string `json:"turn_id"`
	// StopHookActive is true when the host is already continuing because
	// of a stop hook (Claude Code, Codex, Gemini's AfterAgent).
	StopHookActive bool `json:"stop_hook_active"`
	// LastAssistantMessage is the turn's last assistant message (Claude
	// Code and Codex Stop; may be absent or null).
	LastAssistantMessage string `json:"last_assistant_message"`
	// PromptResponse is Gemini's final text of the turn (AfterAgent).
	PromptResponse string `json:"prompt_response"`
}

// MaxInputBytes bounds a hook's stdin.
const MaxInputBytes = 8 << 20

// DecodeInput reads and checks the hook input of host h for event. The
// input must be one JSON object; hook_event_name, when present, must be
// event; a session id is required, and a prompt for prompt events.
func DecodeInput(h Host, event string, r io.Reader) (Input, Kind, error) {
	var in Input
	kind, err := h.EventKind(event)
	if err != nil {
		return in, 0, err
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return in, 0, fmt.Errorf("read hook input: %w", err)
	}
	if len(b) > MaxInputBytes {
		return in, 0, fmt.Errorf("hook input is larger than %d bytes", MaxInputBytes)
	}
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return in, 0, errors.New("hook input is not a JSON object")
	}
	// Nullable strings (Codex sends null for a missing transcript or
	// message) decode as "".
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(t, &raw); err != nil {
		return in, 0, fmt.Errorf("hook input: malformed JSON: %v", err)
	}
	str := func(key string, dst *string) error {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("hook input: %s must be a string", key)
		}
		return nil
	}
	for key, dst := range map[string]*string{
		"session_id": &in.SessionID, "transcript_path": &in.TranscriptPath, "cwd": &in.Cwd,
		"hook_event_name": &in.HookEventName, "prompt": &in.Prompt, "turn_id": &in.TurnID,
		"last_assistant_message": &in.LastAssistantMessage, "prompt_response": &in.PromptResponse,
	} {
		if err := str(key, dst); err != nil {
			return in, 0, err
		}
	}
	if v, ok := raw["stop_hook_active"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &in.StopHookActive); err != nil {
			return in, 0, errors.New("hook input: stop_hook_active must be a boolean")
		}
	}
	if in.HookEventName != "" && in.HookEventName != event {
		return in, 0, fmt.Errorf("hook input is for event %q, the command for %q", in.HookEventName, event)
	}
	if strings.TrimSpace(in.SessionID) == "" {
		return in, 0, errors.New("hook input: session_id is missing")
	}
	if kind == KindPrompt && strings.TrimSpace(in.Prompt) == "" {
		return in, 0, errors.New("hook input: prompt is missing or empty")
	}
	return in, kind, nil
}

// Budgets of the injected context.
const (
	// ClaudeMaxChars keeps the block under Claude Code's 10,000-character
	// cap on hook output.
	ClaudeMaxChars = 9000
	// CodexMaxTokens is the most tokens the block may cost in Codex,
	// counted by EstimateTokens.
	CodexMaxTokens = 2500
)

// MaxBlockChars is the character budget of the block for host h (before
// Fits's token check).
func (h Host) MaxBlockChars() int {
	if h == Codex {
		// Pure ASCII costs at most CodexMaxTokens×3 characters; Fits
		// checks the real text.
		return CodexMaxTokens * 3
	}
	return ClaudeMaxChars
}

// Fits reports whether the block fits the host's budget.
func (h Host) Fits(block string) bool {
	switch h {
	case Codex:
		return EstimateTokens(block) <= CodexMaxTokens
	default:
		return utf8.RuneCountInString(block) <= ClaudeMaxChars
	}
}

// EstimateTokens is a conservative (high) count of the tokens text costs: one
// token per three ASCII bytes, rounded up, plus two per non-ASCII
// character (a CJK character is one to two tokens in current tokenizers).
func EstimateTokens(text string) int {
	ascii, other := 0, 0
	for _, r := range text {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return (ascii+2)/3 + 2*other
}

// PromptOutput is the stdout of a prompt hook that injects block: exactly
// the JSON the host documents. An empty block gives no output.
func PromptOutput(h Host, event, block string) ([]byte, error) {
	if strings.TrimSpace(block) == "" {
		return nil, nil
	}
	if h == Gemini {
		block = GeminiSafe(block)
	}
	type specific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		HookSpecificOutput specific `json:"hookSpecificOutput"`
	}{specific{HookEventName: event, AdditionalContext: block}}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// GeminiSafe replaces < and > with ‹ and ›: Gemini CLI HTML-escapes them in
// additionalContext, and "&lt;qa_id&gt;" is harder to read (and to cite)
// than "‹qa_id›".
func GeminiSafe(s string) string {
	return strings.NewReplacer("<", "‹", ">", "›").Replace(s)
}
