// Package extract turns a passing agent run into a candidate QA (SPEC §3.4):
// the user's query as the question, the agent's final answer plus the shell
// commands that succeeded as the answer, bounded, with every field scanned
// for secrets, never the injected memory block or [QA_REF] anchors.
// Candidates that read like instructions to an agent are quarantined.
//
// Extract is pure: events and config in, candidate (or a reason) out.
package extract

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evidence"
	"github.com/memex-dev/memex/extract/redact"
)

// Extractor is the metadata.extractor value of the candidates made here.
const Extractor = "memex-extract-v1"

// Reasons Extract gives for returning no candidate.
const (
	ReasonRunFailed     = "run_failed"     // the run did not pass: never learn from a failure
	ReasonCovered       = "covered"        // a used QA already covers the query
	ReasonNoQuestion    = "no_question"    // the query is empty once normalised
	ReasonNoAnswer      = "no_answer"      // no final answer (no result, no text after the last tool)
	ReasonTooShort      = "too_short"      // the answer is under MinAnswerChars
	ReasonSecretBlocked = "secret_blocked" // StrictSecretBlock and a secret was found
)

// Config holds the extraction knobs ([candidate_extract]).
type Config struct {
	MaxAnswerChars    int  // 4000
	MinAnswerChars    int  // too short to be worth keeping
	MaxSteps          int  // shell commands listed under Steps (5)
	StrictSecretBlock bool // drop the candidate instead of redacting
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxAnswerChars: 4000, MinAnswerChars: 40, MaxSteps: 5}
}

// Input is what extraction sees of a run.
type Input struct {
	Query        string
	Events       []core.Event
	Passed       bool
	Strength     core.Strength
	VerifyPassed bool
	// Covered: a used QA already covers the query; no candidate.
	Covered bool
	// MemoryBlock is the injected block, never to be copied back.
	MemoryBlock string
}

// Candidate is an extracted QA.
type Candidate struct {
	Question    string           `json:"question"`
	Answer      string           `json:"answer"`
	Tags        []string         `json:"tags"`
	Confidence  float64          `json:"confidence"`
	Metadata    map[string]any   `json:"metadata"`
	Quarantined bool             `json:"quarantined,omitempty"`
	Findings    []redact.Finding `json:"findings,omitempty"`
}

// Limits that are not configuration.
const (
	maxCommandChars = 200 // one step's command line
	maxQuestionRune = 1000
	maxTags         = 8
	ellipsis        = "…"
)

// Extract returns the candidate of a run, or ok=false with the reason (one
// of the Reason constants). r scans every field for secrets; nil uses
// redact.New() (compiling the rules on each call: pass one in).
//
// The answer is the run's final answer — the text of the last EventResult,
// else the agent's own text after its last tool activity — followed by a
// "Steps:" list of the distinct shell commands that succeeded (at most
// cfg.MaxSteps, the latest ones, first line of each, ≤ 200 chars). The
// injected memory block and [QA_REF] anchors are stripped from every field.
func Extract(in Input, cfg Config, r *redact.Redactor) (c Candidate, ok bool, reason string) {
	cfg = cfg.normalized()
	if !in.Passed {
		return c, false, ReasonRunFailed
	}
	if in.Covered {
		return c, false, ReasonCovered
	}
	if r == nil {
		r = redact.New()
	}
	mem := newMemoryFilter(in.MemoryBlock)

	question := normalizeQuestion(mem.strip(in.Query))
	if question == "" {
		return c, false, ReasonNoQuestion
	}
	// The question is cut to maxQuestionRune by redactField, after the
	// redaction: a cut first would leave part of a secret undetected.

	body := strings.TrimSpace(mem.strip(evidence.FinalAnswer(in.Events)))
	if body == "" {
		return c, false, ReasonNoAnswer
	}
	if utf8.RuneCountInString(body) < cfg.MinAnswerChars {
		return c, false, ReasonTooShort
	}
	var steps []string
	for _, s := range succeededCommands(in.Events, cfg.MaxSteps) {
		if s = strings.TrimSpace(mem.strip(s)); s != "" {
			steps = append(steps, s)
		}
	}
	answer := compose(body, steps, cfg.MaxAnswerChars)
	hasCode := strings.Contains(body, "```")
	tags := inferTags(question + "\n" + answer)
	strength := string(core.NormalizeStrength(string(in.Strength)))

	// Secrets: every field, findings named by field.
	var findings []redact.Finding
	question, findings = redactField(r, question, "question", findings, maxQuestionRune)
	answer, findings = redactField(r, answer, "answer", findings, cfg.MaxAnswerChars)
	for i, t := range tags {
		var fs []redact.Finding
		tags[i], fs = r.Redact(t)
		findings = append(findings, named(fs, "tags")...)
	}
	md := map[string]any{
		"extractor": Extractor,
		"steps":     len(steps),
		"has_code":  hasCode,
		"strength":  strength,
	}
	if cfg.StrictSecretBlock && len(findings) > 0 {
		return Candidate{Findings: findings}, false, ReasonSecretBlocked
	}
	if question == "" || answer == "" {
		// Nothing but secrets and anchors: nothing worth keeping.
		return Candidate{Findings: findings}, false, ReasonNoAnswer
	}

	c = Candidate{
		Question: question,
		Answer:   answer,
		Tags:     tags,
		Metadata: md,
		Findings: findings,
	}
	if why := quarantineReason(question + "\n" + answer); why != "" {
		c.Quarantined = true
		md["quarantine_reason"] = why
	}
	if len(findings) > 0 {
		md["redactions"] = len(findings)
	}
	c.Confidence = Confidence(ConfidenceInput{
		VerifyPassed: in.VerifyPassed,
		Strength:     core.Strength(strength),
		Steps:        len(steps),
		HasCode:      hasCode,
		AnswerChars:  utf8.RuneCountInString(body),
		Redactions:   len(findings),
		Quarantined:  c.Quarantined,
	}, cfg)
	mdv, fs := r.RedactValue(md)
	c.Metadata = mdv.(map[string]any)
	c.Findings = append(c.Findings, named(fs, "metadata")...)
	return c, true, ""
}

func (cfg Config) normalized() Config {
	d := DefaultConfig()
	if cfg.MaxAnswerChars <= 0 {
		cfg.MaxAnswerChars = d.MaxAnswerChars
	}
	if cfg.MinAnswerChars < 0 {
		cfg.MinAnswerChars = 0
	}
	if cfg.MaxSteps < 0 {
		cfg.MaxSteps = 0
	}
	return cfg
}

// redactField redacts s and cuts it to max runes, repeating until the result
// is both bounded and clean (cutting can expose a new match at the edge).
// It returns "" when that does not settle.
func redactField(r *redact.Redactor, s, field string, acc []redact.Finding, max int) (string, []redact.Finding) {
	out, fs := r.Redact(s)
	acc = append(acc, named(fs, field)...)
	if utf8.RuneCountInString(out) <= max && !strings.Contains(strings.ToUpper(out), "QA_REF") {
		return out, acc // Redact's output is clean by contract
	}
	for range 4 {
		cut := evidence.StripAnchors(truncateRunes(out, max))
		if !r.Has(cut) {
			return cut, acc
		}
		out, _ = r.Redact(cut)
	}
	return "", acc
}

func named(fs []redact.Finding, field string) []redact.Finding {
	for i := range fs {
		if fs[i].Field == "" {
			fs[i].Field = field
		} else {
			fs[i].Field = field + "." + fs[i].Field
		}
	}
	return fs
}

// --- question ---------------------------------------------------------------

var howToRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\s*(?:how\s+to\s*:\s*)+`) })

// normalizeQuestion collapses whitespace and drops "How to:" prefixes.
func normalizeQuestion(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	q = howToRE().ReplaceAllString(q, "")
	return strings.TrimSpace(q)
}

// --- memory block and anchors ---------------------------------------------

var (
	memoryBlockRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)\[MEMORY_CONTEXT[^\]\n]{0,40}\].*?\[/MEMORY_CONTEXT\]`)
	})
)

// memoryFilter strips the injected block (verbatim, as a tagged span, and
// line by line when the agent quoted parts of it) and anchors.
type memoryFilter struct {
	block string
	lines map[string]bool
}

func newMemoryFilter(block string) memoryFilter {
	m := memoryFilter{block: strings.TrimSpace(block), lines: map[string]bool{}}
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); utf8.RuneCountInString(l) >= 24 {
			m.lines[l] = true
		}
	}
	return m
}

func (m memoryFilter) strip(s string) string {
	if m.block != "" {
		s = strings.ReplaceAll(s, m.block, "")
	}
	s = memoryBlockRE().ReplaceAllString(s, "")
	if len(m.lines) > 0 {
		ls := strings.Split(s, "\n")
		out := ls[:0]
		for _, l := range ls {
			if !m.lines[strings.TrimSpace(l)] {
				out = append(out, l)
			}
		}
		s = strings.Join(out, "\n")
	}
	return evidence.StripAnchors(s)
}

// --- answer -----------------------------------------------------------------

// compose joins the body and the Steps section within max runes, cutting
// the body first and keeping at least half the budget for it.
func compose(body string, steps []string, max int) string {
	var sb strings.Builder
	if len(steps) > 0 {
		sb.WriteString("\n\nSteps:\n")
		for _, s := range steps {
			sb.WriteString("$ ")
			sb.WriteString(s)
			sb.WriteByte('\n')
		}
	}
	stepsText := strings.TrimRight(sb.String(), "\n")
	room := max - utf8.RuneCountInString(stepsText)
	if room < max/2 {
		stepsText = truncateRunes(stepsText, max/2)
		room = max - utf8.RuneCountInString(stepsText)
	}
	return truncateRunes(truncateRunes(body, room)+stepsText, max)
}

// truncateRunes cuts s to at most n runes, ending with "…" when cut.
func truncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return strings.TrimRightFunc(s[:i], unicode.IsSpace) + ellipsis
}

// --- steps ------------------------------------------------------------------

var shellWrapRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:/(?:usr/)?bin/)?(?:ba|z|da)?sh\s+-l?c\s+(?:'(.*)'|"(.*)")$`)
})

// succeededCommands returns the distinct shell commands whose results say
// they succeeded (exit 0 or ok), latest max of them, in run order; commands
// that only look around (evidence.ReadOnlyCommand) are left out.
func succeededCommands(evs []core.Event, max int) []string {
	if max == 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, st := range evidence.Steps(evs) {
		if !st.Succeeded() {
			continue
		}
		cmd := summarizeCommand(st.Command)
		if cmd == "" || seen[cmd] || evidence.ReadOnlyCommand(cmd) {
			continue
		}
		seen[cmd] = true
		out = append(out, cmd)
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// summarizeCommand unwraps `bash -lc '…'`, keeps the first line (a heredoc
// body is file content, not a step), collapses spaces and cuts the line to
// maxCommandChars.
func summarizeCommand(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	if strings.Contains(cmd[:min(len(cmd), 24)], "sh -") {
		if m := shellWrapRE().FindStringSubmatch(cmd); m != nil {
			cmd = m[1] + m[2]
		}
	}
	first, rest, multi := strings.Cut(cmd, "\n")
	first = strings.Join(strings.Fields(first), " ")
	if multi && strings.TrimSpace(rest) != "" {
		first += " " + ellipsis
	}
	return truncateRunes(first, maxCommandChars)
}

// --- tags -------------------------------------------------------------------

// tagRule infers a tag from whole words (never substrings: "pip" in
// "pipeline" is not python), word pairs ("go test") and file extensions
// (with a base name of at least minBase chars, so "r.ts" is not TypeScript).
type tagRule struct {
	tag     string
	words   []string
	pairs   []string // "first second"; a "*" second word matches any
	exts    []string
	minBase int
}

var tagRules = []tagRule{
	{tag: "go", words: []string{"golang", "gofmt", "goroutine", "goroutines", "go.mod", "go.sum"},
		pairs: []string{"go test", "go build", "go run", "go mod", "go vet", "go get", "go install", "go generate", "go work", "go fmt"},
		exts:  []string{"go"}, minBase: 2},
	{tag: "rust", words: []string{"rust", "cargo", "rustc", "rustup", "cargo.toml"}, exts: []string{"rs"}, minBase: 3},
	{tag: "python", words: []string{"python", "python3", "pytest", "pip", "pip3", "poetry", "virtualenv", "venv", "django", "flask", "pyproject.toml"},
		pairs: []string{"uv run", "uv pip", "uv sync", "uv add"}, exts: []string{"py"}, minBase: 3},
	{tag: "node", words: []string{"node.js", "nodejs", "npm", "pnpm", "yarn", "npx", "package.json"}},
	{tag: "typescript", words: []string{"typescript", "tsc", "tsconfig.json"}, exts: []string{"ts", "tsx"}, minBase: 3},
	{tag: "docker", words: []string{"docker", "dockerfile", "docker-compose", "compose.yml", "compose.yaml", "podman"}},
	{tag: "k8s", words: []string{"kubectl", "kubernetes", "k8s", "helm", "kustomize"}},
	{tag: "git", words: []string{"git", "github", "gitlab", ".gitignore"}},
	{tag: "sql", words: []string{"sql", "postgres", "postgresql", "mysql", "sqlite", "sqlite3", "psql", "mariadb"}},
	{tag: "redis", words: []string{"redis", "redis-cli"}},
	{tag: "java", words: []string{"java", "maven", "mvn", "gradle", "kotlin"}, exts: []string{"java"}, minBase: 3},
	{tag: "ruby", words: []string{"ruby", "rails", "gemfile"}, pairs: []string{"bundle exec", "bundle install"}, exts: []string{"rb"}, minBase: 3},
	{tag: "shell", words: []string{"bash", "zsh"}, pairs: []string{"shell script"}, exts: []string{"sh"}, minBase: 3},
	{tag: "terraform", words: []string{"terraform"}, exts: []string{"tf"}, minBase: 3},
	{tag: "aws", words: []string{"aws", "s3", "ec2"}, pairs: []string{"lambda function"}},
	{tag: "ci", words: []string{"gitlab-ci", ".gitlab-ci.yml", ".github/workflows"}, pairs: []string{"github actions", "ci pipeline"}},
	{tag: "make", words: []string{"makefile"}, pairs: []string{"make test", "make build", "make install", "make lint", "make all"}},
}

// tagWords splits lower-cased text into words of [a-z0-9._/+-], trimmed of
// edge punctuation; a path also yields its directories and base name.
func tagWords(lower string) []string {
	raw := strings.FieldsFunc(lower, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("._/+-", r))
	})
	out := make([]string, 0, len(raw))
	for _, w := range raw {
		w = strings.Trim(w, ".,:/+-")
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// inferTags returns the sorted tags that text's words point to.
func inferTags(text string) []string {
	ws := tagWords(strings.ToLower(text))
	words := make(map[string]bool, len(ws))
	pairs := make(map[string]bool, len(ws))
	exts := map[string]int{} // extension → longest base name
	for i, w := range ws {
		words[w] = true
		if strings.Contains(w, "/") {
			for _, part := range strings.Split(w, "/") {
				words[part] = true
			}
			if strings.Contains(w, ".github/workflows") {
				words[".github/workflows"] = true
			}
		}
		if i+1 < len(ws) {
			pairs[w+" "+ws[i+1]] = true
		}
		base := w[strings.LastIndexByte(w, '/')+1:]
		if j := strings.LastIndexByte(base, '.'); j > 0 {
			exts[base[j+1:]] = max(exts[base[j+1:]], j)
		}
	}
	tags := []string{}
	for _, tr := range tagRules {
		if tr.matches(words, pairs, exts) {
			tags = append(tags, tr.tag)
		}
	}
	slices.Sort(tags)
	if len(tags) > maxTags {
		tags = tags[:maxTags]
	}
	return tags
}

func (tr tagRule) matches(words, pairs map[string]bool, exts map[string]int) bool {
	for _, w := range tr.words {
		if words[w] {
			return true
		}
	}
	for _, p := range tr.pairs {
		if pairs[p] {
			return true
		}
	}
	for _, e := range tr.exts {
		if n, ok := exts[e]; ok && n >= tr.minBase {
			return true
		}
	}
	return false
}

// --- quarantine -------------------------------------------------------------

// quarantineReason returns why text reads like instructions to an agent,
// or "" (core.InstructionLike: the one detector, which stores apply too).
func quarantineReason(text string) string { return core.InstructionLike(text) }

// --- confidence -------------------------------------------------------------

// ConfidenceInput is the evidence confidence is computed from.
type ConfidenceInput struct {
	VerifyPassed bool
	Strength     core.Strength
	Steps        int
	HasCode      bool
	AnswerChars  int // runes of the answer body (without Steps)
	Redactions   int
	Quarantined  bool
}

// Confidence computes a candidate's confidence from its evidence:
//
//	0.30 base (the run passed)
//	+0.25 a --verify command passed
//	+0.15 strong evidence (tests or a build the agent ran passed, or verify),
//	      or +0.05 medium evidence
//	+0.10 the answer lists succeeded commands (Steps)
//	+0.05 the answer holds a code fence
//	+0.05 the answer body has a useful length (≥ 3×MinAnswerChars and
//	      ≤ 90% of MaxAnswerChars)
//	−0.10 secrets had to be redacted
//	−0.20 quarantined
//
// clamped to [0.05, 0.95] and rounded to two decimals.
func Confidence(ev ConfidenceInput, cfg Config) float64 {
	cfg = cfg.normalized()
	c := 0.30
	if ev.VerifyPassed {
		c += 0.25
	}
	switch core.NormalizeStrength(string(ev.Strength)) {
	case core.StrengthStrong:
		c += 0.15
	case core.StrengthMedium:
		c += 0.05
	}
	if ev.Steps > 0 {
		c += 0.10
	}
	if ev.HasCode {
		c += 0.05
	}
	if ev.AnswerChars >= 3*max(cfg.MinAnswerChars, 20) && ev.AnswerChars*10 <= 9*cfg.MaxAnswerChars {
		c += 0.05
	}
	if ev.Redactions > 0 {
		c -= 0.10
	}
	if ev.Quarantined {
		c -= 0.20
	}
	c = math.Max(0.05, math.Min(0.95, c))
	return math.Round(c*100) / 100
}
