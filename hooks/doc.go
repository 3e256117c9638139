// Package hooks speaks the hook protocols of the coding agents memex runs
// inside: Claude Code, Codex and Gemini CLI. It owns everything that is
// specific to a host and nothing that is memex's own logic:
//
//   - the hook input each host writes on stdin (DecodeInput) and the exact
//     output it documents (PromptOutput), with the host's budget on the
//     injected context (Claude Code: 9,000 characters under its 10,000 cap;
//     Codex: 2,500 tokens, counted conservatively; Gemini CLI: `<` and `>`
//     kept readable after the host HTML-escapes them);
//   - the host's session transcript, read back into the core.Event
//     vocabulary the agent package uses, limited to the turn that just
//     ended (ReadTurn);
//   - the turn state kept between a prompt hook and its stop hook (States);
//   - merging memex's hook entries into the host's settings file and taking
//     exactly them out again (Install, Uninstall, Status).
//
// The gatekeeper, the trust model, evidence grading and the store stay
// where they are: cmd/memex runs engine.Pre on a prompt hook and
// engine.Post on a stop hook, the same loop `memex run` uses.
package hooks
