// Package redact finds and redacts secrets: a rule set written as data (id,
// keywords, regex, optional entropy threshold, true and false samples).
// Findings carry the rule id and position, never the secret.
package redact

import "regexp"

// Rule is one kind of secret.
type Rule struct {
	ID          string
	Description string
	Keywords    []string // lower-case prefilter; empty = always run
	Regex       *regexp.Regexp
	// SecretGroup is the submatch holding the secret (0 = whole match).
	SecretGroup int
	// MinEntropy, when > 0, requires the secret's Shannon entropy (bits per
	// char) to reach it.
	MinEntropy float64
	True       []string // samples that must be found
	False      []string // samples that must not
}

// Finding is one detected secret.
type Finding struct {
	Rule  string `json:"rule"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Redactor applies a rule set. Safe for concurrent use.
type Redactor struct{ rules []Rule }

// New returns a redactor with the default rules. PLACEHOLDER rule set.
func New() *Redactor {
	return &Redactor{rules: []Rule{{ID: "openai-api-key", Regex: regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`)}}}
}

// Rules returns the rule set.
func (r *Redactor) Rules() []Rule { return r.rules }

// Find returns the findings in s, ordered by position, non-overlapping.
func (r *Redactor) Find(s string) []Finding {
	var out []Finding
	for _, rule := range r.rules {
		for _, loc := range rule.Regex.FindAllStringIndex(s, -1) {
			out = append(out, Finding{Rule: rule.ID, Start: loc[0], End: loc[1]})
		}
	}
	return out
}

// Redact replaces every finding with "[REDACTED:<rule>]". Idempotent.
func (r *Redactor) Redact(s string) (string, []Finding) {
	fs := r.Find(s)
	if len(fs) == 0 {
		return s, nil
	}
	out, last := "", 0
	for _, f := range fs {
		out += s[last:f.Start] + "[REDACTED:" + f.Rule + "]"
		last = f.End
	}
	return out + s[last:], fs
}

// RedactValue redacts every string inside a decoded JSON value (maps,
// slices, strings; keys too), returning the new value and the findings.
func (r *Redactor) RedactValue(v any) (any, []Finding) {
	switch x := v.(type) {
	case string:
		return r.Redact(x)
	case map[string]any:
		var all []Finding
		out := make(map[string]any, len(x))
		for k, vv := range x {
			k2, f1 := r.Redact(k)
			v2, f2 := r.RedactValue(vv)
			out[k2] = v2
			all = append(all, f1...)
			all = append(all, f2...)
		}
		return out, all
	case []any:
		var all []Finding
		out := make([]any, len(x))
		for i, vv := range x {
			var f []Finding
			out[i], f = r.RedactValue(vv)
			all = append(all, f...)
		}
		return out, all
	}
	return v, nil
}
