// Package agent runs an agent backend (the claude, codex or gemini CLI, or
// any command) with a prompt on stdin, streams its output live in a readable
// form, and parses every content block of every event into core.Event.
//
// # Backends
//
// Resolve turns a --backend value into a Backend:
//
//	claude   claude -p --output-format stream-json --verbose [--model M]
//	codex    codex exec --json --skip-git-repo-check [--model M] -
//	gemini   gemini -o stream-json -y [-m M]
//	other    the command line split into words like a shell would (quotes,
//	         backslashes; no shell is involved), plain-text output
//
// The prompt always goes on stdin, byte for byte, and stdin is closed after
// it; it is never an argument, so no escaping can alter it. claude -p and
// codex exec - read the prompt from stdin. gemini enters headless mode when
// stdin is not a terminal and reads the prompt from it, so no -p is passed
// (an empty -p "" would only prepend nothing; leaving it out keeps the
// command line plain). A value whose first word names one of the three
// CLIs ("claude --dangerously-skip-permissions", "/opt/bin/codex") keeps
// that CLI's format and flags, and its other words are passed through.
// For other commands the model is not passed (they may not accept a flag).
//
// # Parsing
//
// A Parser turns stdout lines into events; Finish flushes what a stream
// leaves pending at its end. Every content block of every backend event
// becomes its own event, numbered by Seq from 0, and once the backend names
// its session every later event carries the SessionID. A line of a JSON
// backend that is not a JSON object is kept as an EventText with Raw "line"
// when it is not blank (CLIs sometimes print warnings on stdout); a JSON
// object of an unknown type is ignored. For FormatText every non-blank line
// is an EventText, and Finish adds one EventResult with the whole stdout
// (trimmed, at most 64 KiB, keeping the tail).
//
// # Running
//
// Run spawns the backend in its own process group, renders events live
// (FormatText output is copied through byte for byte as it arrives), and
// returns the backend's exit code: its own code when it exits, 128+n when a
// signal n ends it, and 124 when RunOptions.Timeout expires (as timeout(1)
// does). Cancelling the context sends SIGTERM to the process group, then
// SIGKILL after the grace period; Run then returns the result together with
// the context's error. Because the backend has its own process group, a
// terminal's Ctrl-C reaches memex only: callers stop the backend by
// cancelling ctx (signal.NotifyContext). When the backend exits but a
// process it started keeps stdout open, output is read for two more seconds
// and the run ends without waiting for that process.
//
// RunVerify runs a --verify command line with sh -c under the same rules.
package agent
