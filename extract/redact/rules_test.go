package redact

import (
	"strings"
	"testing"
)

func TestRulesWellFormed(t *testing.T) {
	rules := DefaultRules()
	if len(rules) < 60 {
		t.Fatalf("%d rules, want at least 60", len(rules))
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.ID] {
			t.Errorf("duplicate rule id %q", r.ID)
		}
		seen[r.ID] = true
		if r.Description == "" {
			t.Errorf("%s: no description", r.ID)
		}
		if len(r.True) == 0 || len(r.False) == 0 {
			t.Errorf("%s: needs at least one true and one false sample", r.ID)
		}
		for _, k := range r.Keywords {
			if k != strings.ToLower(k) {
				t.Errorf("%s: keyword %q is not lower case", r.ID, k)
			}
		}
	}
	if _, err := NewWithRules(rules); err != nil {
		t.Fatal(err)
	}
}

// TestRuleSamples checks every rule against its own samples: each true
// sample is found by the rule itself (so the keywords and regex agree), and
// each false sample is found by no rule of the whole set.
func TestRuleSamples(t *testing.T) {
	r := New()
	for _, rule := range r.Rules() {
		t.Run(rule.ID, func(t *testing.T) {
			for i, s := range rule.True {
				if !r.hasRule(s, rule.ID) {
					t.Errorf("true[%d] not found by %s: %q", i, rule.ID, s)
				}
				out, fs := r.Redact(s)
				if len(fs) == 0 || !strings.Contains(out, "[REDACTED:") {
					t.Errorf("true[%d] not redacted: %q", i, out)
				}
			}
			for i, s := range rule.False {
				if fs := r.Find(s); len(fs) > 0 {
					t.Errorf("false[%d] found by %s at %d:%d: %q", i, fs[0].Rule, fs[0].Start, fs[0].End, s)
				}
			}
		})
	}
	if err := r.CheckRules(); err != nil {
		t.Error(err)
	}
}

func TestNewWithRulesRejects(t *testing.T) {
	good := DefaultRules()[0]
	tests := []struct {
		name  string
		rules []Rule
	}{
		{"duplicate id", []Rule{good, good}},
		{"bad id", []Rule{{ID: "Bad ID", Pattern: good.Pattern}}},
		{"no regex", []Rule{{ID: "x"}}},
		{"group out of range", []Rule{{ID: "x", Pattern: good.Pattern, SecretGroup: 5}}},
		{"upper keyword", []Rule{{ID: "x", Pattern: good.Pattern, Keywords: []string{"ABC"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewWithRules(tt.rules); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// TestDefaultRulesCompileEagerly: New compiles the default rules lazily and
// skips their checks; compiled eagerly they must all pass them.
func TestDefaultRulesCompileEagerly(t *testing.T) {
	if _, err := NewWithRules(DefaultRules()); err != nil {
		t.Fatal(err)
	}
}
