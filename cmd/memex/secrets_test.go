package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memex-dev/memex/extract/redact"
)

// TestNoSecretSurvivesARun is SPEC §10 "no secrets stored": the true sample
// of every secret rule (≥ 50 kinds) is printed by the agent during a passing
// `memex run` with --events; none of the secrets may reach the events file,
// the stored records (export), or memex's own stdout/stderr diagnostics.
func TestNoSecretSurvivesARun(t *testing.T) {
	red := redact.New()
	var corpus strings.Builder
	var secrets []string
	kinds := 0
	for _, rule := range red.Rules() {
		if len(rule.True) == 0 {
			continue
		}
		kinds++
		sample := rule.True[0]
		for _, f := range red.Find(sample) {
			secrets = append(secrets, sample[f.Start:f.End])
		}
		corpus.WriteString(sample)
		corpus.WriteString("\n")
	}
	if kinds < 50 {
		t.Fatalf("only %d kinds of secrets in the rule set, want ≥ 50", kinds)
	}
	c := newCLI(t)
	corpusPath := filepath.Join(c.dir, "secrets.txt")
	if err := os.WriteFile(corpusPath, []byte(corpus.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(c.dir, "leaky.sh")
	src := "#!/bin/sh\ncat >/dev/null\necho 'Here is how to configure the deploy credentials:'\ncat '" + corpusPath + "'\necho 'Steps: export them and run make deploy.'\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(c.dir, "events.jsonl")
	code, _, errOut := c.run("", "run", "--events", events, "--verify", "true", "--explain", "--backend", script,
		"How do I configure the deploy credentials for the payment service?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ev, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	export := c.mustRun("", "qa", "export")
	if !strings.Contains(export, "[REDACTED:") {
		t.Fatalf("no candidate with redactions was stored (test setup): %q", export)
	}
	for _, s := range secrets {
		probe := s
		if len(probe) > 48 {
			probe = probe[:48]
		}
		for name, text := range map[string]string{"events file": string(ev), "stored records": export, "memex diagnostics (stderr)": errOut} {
			if strings.Contains(text, probe) {
				t.Errorf("%s holds a secret (%d chars starting %.6q…)", name, len(s), s)
			}
		}
	}
}
