// Package evidence grades what an agent run proves (SPEC §3.3, §3.4). It is
// the one home of the facts every reader of an agent transcript needs:
//
//   - the citation anchor `[QA_REF <qa_id>]` (AnchorPattern, Anchors,
//     ValidID, StripAnchors);
//   - the tool taxonomy: which tools edit files, run shell commands or only
//     read (Classify), and which shell commands only look around
//     (ReadOnlyCommand) or run tests and builds (TestCommand);
//   - the grade of a run (Grade): passed or not, how strong the evidence
//     is, whether the agent gave up (GaveUp), and whether the run shows
//     enough real success for a candidate QA to be learned from it.
//
// `memex run` (through gatekeeper.EvaluateRun and extract) and the host
// stop hooks that read a Claude, Codex or Gemini transcript call the same
// functions, so a run is judged the same way however memex saw it.
//
// The package is pure: events in, a Verdict out; no I/O, no clock.
package evidence
