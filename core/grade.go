package core

import (
	"regexp"
	"strings"
)

var (
	gradeL2 = regexp.MustCompile(`(?i)\b(architect\w*|debug\w*|refactor\w*|compil\w*|stack ?trace|benchmark\w*|implement\w*|fix(es|ed|ing)?|bug\w*|error|panic\w*|test(s|ing)?|function|program\w*|design|algorithm\w*|optimi[sz]\w*|deploy\w*|migrat\w*|cargo|go test|pytest|npm|segfault|race|deadlock|regex|sql|api)\b`)
	gradeL3 = regexp.MustCompile(`(?i)\b(story|stories|novel|poem|poetry|brand\w*|marketing|slogan|style of|creative|lyrics|fiction|screenplay)\b`)
	gradeL0 = regexp.MustCompile(`(?i)\b(translate|translation|format|reformat|json|yaml|csv|rewrite|extract|convert|uppercase|lowercase|spell ?check)\b`)
	gradeL1 = regexp.MustCompile(`(?i)\b(explain|summar\w*|describe|what is|what are|why|how does|compare|list)\b`)
)

// GradeTask is the deterministic local task grader (SPEC §3.5): L0 trivial
// (translate, format, extract), L1 standard (explain, summarise), L2
// reasoning (program, debug, design, or any code fence), L3 creative. When a
// prompt fits several levels the highest wins, as in the original service;
// a short L0 keyword prompt stays L0.
func GradeTask(prompt string) TaskGrade {
	p := strings.TrimSpace(prompt)
	g := TaskGrade{RecommendedModel: "", RecommendedModelProvider: ""}
	switch {
	case p == "":
		g.TaskLevel, g.Reason, g.Confidence = "L1", "empty prompt", 0.2
	case gradeL3.MatchString(p):
		g.TaskLevel, g.Reason, g.Confidence = "L3", "creative keywords: "+gradeL3.FindString(p), 0.7
	case strings.Contains(p, "```"):
		g.TaskLevel, g.Reason, g.Confidence = "L2", "contains a code block", 0.8
	case gradeL2.MatchString(p):
		g.TaskLevel, g.Reason, g.Confidence = "L2", "reasoning keywords: "+strings.ToLower(gradeL2.FindString(p)), 0.7
	case len(p) <= 200 && gradeL0.MatchString(p):
		g.TaskLevel, g.Reason, g.Confidence = "L0", "short transformation task: "+strings.ToLower(gradeL0.FindString(p)), 0.7
	case gradeL1.MatchString(p):
		g.TaskLevel, g.Reason, g.Confidence = "L1", "explanation keywords: "+strings.ToLower(gradeL1.FindString(p)), 0.6
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
