package core

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Text that reads like instructions to an agent rather than an answer to a
// question — prompt injection, tool-call syntax, fake memory-block or chat
// markers, fences that try to close the memory block's quotation — is
// quarantined (SPEC §10 "poisoning"): it is never injected before a human
// or an independent strong verdict. This is the one detector: the
// extractor marks its candidates with it and the ledger (trust/ledger)
// applies it to every candidate a store receives, whatever the client sent.

// instructionRules are the marks of text written to steer an agent.
var instructionRules = []struct {
	reason   string
	keywords []string // lower-case; the expression runs only when one is present
	expr     string
}{
	{"ignore_instructions", []string{"ignore", "disregard", "forget", "override"}, `(?i)\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|system)\s+(?:instructions?|prompts?|messages?|rules|context)`},
	{"role_override", []string{"now", "act", "developer"}, `(?i)\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+you\b|\bact\s+as\s+(?:an?\s+)?(?:unrestricted|jailbroken|dan)\b|\bdeveloper\s+mode\b`},
	{"system_prompt", []string{"system"}, `(?i)\bsystem\s+prompt\b`},
	{"tool_call_syntax", []string{"<"}, `(?i)</?(?:tool_use|tool_call|tool_result|function_calls|function_call|invoke|antml:[a-z_]+)\b`},
	{"prompt_marker", []string{"memory_context", "<|", "inst]", "sys>>"}, `(?i)\[/?MEMORY_CONTEXT|<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|<</?SYS>>`},
	{"prompt_marker", []string{"##"}, `(?im)^\s*#{2,}\s*(?:instruction|system prompt|system message)\b`},
	{"fence_breaker", []string{"```", "~~~"}, "(?im)^[ \\t]*(?:`{3,}|~{3,})[ \\t]*\\r?\\n[ \\t]*(?:human|assistant|user|system|rules)[ \\t]*:"},
}

// instructionREs are instructionRules' expressions, compiled on first use.
var instructionREs = sync.OnceValue(func() []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(instructionRules))
	for i, q := range instructionRules {
		res[i] = regexp.MustCompile(q.expr)
	}
	return res
})

// InstructionLike returns why text reads like instructions to an agent (a
// short rule name such as "ignore_instructions" or "tool_call_syntax"), or
// "" when it does not.
func InstructionLike(text string) string {
	lower := strings.ToLower(text)
	for i, q := range instructionRules {
		if !slices.ContainsFunc(q.keywords, func(k string) bool { return strings.Contains(lower, k) }) {
			continue
		}
		if instructionREs()[i].MatchString(text) {
			return q.reason
		}
	}
	return ""
}
