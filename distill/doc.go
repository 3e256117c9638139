// Package distill asks an agent CLI to distil a finished run into what is
// worth remembering (SPEC §11, the AgentFlow design): the run's redacted
// transcript goes in, strict JSON {summary, key_learnings, errors,
// solutions, tags, category} comes out, and each learning becomes a
// candidate QA request. Candidates then follow the normal rules of every
// write (redaction, dedup, quarantine, probation): nothing distilled is
// trusted by birth.
//
// The package builds the prompt (the transcript is quoted as data, bounded
// in size), runs the CLI (claude, codex, gemini or any command; prompt on
// stdin, in an empty directory of its own, with a timeout that kills the
// whole process group), reads the CLI's envelope for the answer and the
// token use, and parses the answer strictly. Anything malformed is an error
// with a reason; the caller records it and the run it came from is never
// affected. It imports core and extract/redact only; cmd/memex wires it.
package distill
