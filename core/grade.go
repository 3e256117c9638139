package core

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// gradeRule is one level's keywords: whole words, word prefixes ("debug"
// matches debugging) and two-word phrases. Matching is on lower-cased
// words, so the grader costs no regexp compilation at start-up.
type gradeRule struct {
	words    map[string]bool
	prefixes []string
	phrases  []string // "first second"
}

func (r gradeRule) find(words []string) string {
	for i, w := range words {
		if r.words[w] {
			return w
		}
		for _, p := range r.prefixes {
			if strings.HasPrefix(w, p) {
				return w
			}
		}
		if i+1 < len(words) {
			pair := w + " " + words[i+1]
			for _, ph := range r.phrases {
				if pair == ph {
					return pair
				}
			}
		}
	}
	return ""
}

func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

var (
	gradeL3 = gradeRule{
		words:    wordSet("story", "stories", "novel", "poem", "poetry", "marketing", "slogan", "creative", "lyrics", "fiction", "screenplay"),
		prefixes: []string{"brand"},
		phrases:  []string{"style of"},
	}
	gradeL2 = gradeRule{
		words: wordSet("fix", "fixes", "fixed", "fixing", "error", "test", "tests", "testing", "function", "design", "cargo",
			"pytest", "npm", "segfault", "race", "deadlock", "regex", "sql", "api", "stacktrace"),
		prefixes: []string{"architect", "debug", "refactor", "compil", "benchmark", "implement", "bug", "panic", "program",
			"algorithm", "optimis", "optimiz", "deploy", "migrat"},
		phrases: []string{"stack trace", "go test"},
	}
	gradeL0 = gradeRule{
		words: wordSet("translate", "translation", "format", "reformat", "json", "yaml", "csv", "rewrite", "extract", "convert",
			"uppercase", "lowercase", "spellcheck"),
		phrases: []string{"spell check"},
	}
	gradeL1 = gradeRule{
		words:    wordSet("explain", "describe", "why", "compare", "list"),
		prefixes: []string{"summar"},
		phrases:  []string{"what is", "what are", "how does"},
	}
)

func gradeWords(p string) []string {
	return strings.FieldsFunc(strings.ToLower(p), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// GradeTask is the deterministic local task grader (SPEC §3.5): L0 trivial
// (translate, format, extract), L1 standard (explain, summarise), L2
// reasoning (program, debug, design, or any code fence), L3 creative. When a
// prompt fits several levels the highest wins, as in the original service;
// a short L0 keyword prompt stays L0.
func GradeTask(prompt string) TaskGrade {
	p := strings.TrimSpace(prompt)
	words := gradeWords(p)
	var g TaskGrade
	switch {
	case p == "":
		g.TaskLevel, g.Reason, g.Confidence = "L1", "empty prompt", 0.2
	case gradeL3.find(words) != "":
		g.TaskLevel, g.Reason, g.Confidence = "L3", "creative keywords: "+gradeL3.find(words), 0.7
	case strings.Contains(p, "```"):
		g.TaskLevel, g.Reason, g.Confidence = "L2", "contains a code block", 0.8
	case gradeL2.find(words) != "":
		g.TaskLevel, g.Reason, g.Confidence = "L2", "reasoning keywords: "+gradeL2.find(words), 0.7
	case len(p) <= 200 && gradeL0.find(words) != "":
		g.TaskLevel, g.Reason, g.Confidence = "L0", "short transformation task: "+gradeL0.find(words), 0.7
	case gradeL1.find(words) != "":
		g.TaskLevel, g.Reason, g.Confidence = "L1", "explanation keywords: "+gradeL1.find(words), 0.6
	default:
		g.TaskLevel, g.Reason, g.Confidence = "L1", "no specific signal", 0.4
	}
	switch g.TaskLevel {
	case "L0":
		g.RecommendedModel, g.RecommendedModelProvider = "small", "local"
	case "L2", "L3":
		g.RecommendedModel, g.RecommendedModelProvider = "large", "local"
	default:
		g.RecommendedModel, g.RecommendedModelProvider = "medium", "local"
	}
	return g
}

// LocalGrader is the TaskGrade of a plugin that grades prompts itself
// with GradeTask (the embedded and Redis stores embed it): a store adds
// nothing to the grade, which reads no stored data.
type LocalGrader struct{}

// TaskGrade grades req.Prompt with GradeTask, unless ctx is done.
func (LocalGrader) TaskGrade(ctx context.Context, req TaskGradeRequest) (TaskGrade, error) {
	if err := ctx.Err(); err != nil {
		return TaskGrade{}, fmt.Errorf("task grade: %w", err)
	}
	return GradeTask(req.Prompt), nil
}
