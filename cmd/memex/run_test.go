package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
)

const raceQuery = "how do I find a data race in my Go tests?"

func TestRunDryRun(t *testing.T) {
	c := newCLI(t)
	marker := filepath.Join(c.dir, "ran")
	// A backend that would leave a marker and fail: --dry-run must run nothing.
	backend := "sh -c 'touch " + marker + "; exit 3'"
	code, out, errOut := c.run("", "run", "--dry-run", "--backend", backend, raceQuery)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("--dry-run ran the backend")
	}
	for _, want := range []string{"--- memex decision", "task grade: L2", "--- merged prompt ---", raceQuery} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunExitCodePassThrough(t *testing.T) {
	for _, want := range []int{0, 3, 7} {
		t.Run(strings.Repeat("x", 0)+string(rune('0'+want)), func(t *testing.T) {
			c := newCLI(t)
			backend := "env AGENT_EXIT=" + string(rune('0'+want)) + " " + agentPath(t)
			code, out, errOut := c.run("", "run", "--backend", backend, raceQuery)
			if code != want {
				t.Fatalf("exit %d, want %d; stderr: %s", code, want, errOut)
			}
			if !strings.Contains(out, "race detector") {
				t.Errorf("agent output not streamed to stdout: %q", out)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing prompt file", []string{"run", "--prompt-file", "/nonexistent/task.md"}, exitError, []string{"/nonexistent/task.md", "no such file"}},
		{"backend not installed", []string{"run", "--backend", "memex-no-such-agent-xyz", "q"}, exitError, []string{"--backend", "memex-no-such-agent-xyz"}},
		{"two query sources", []string{"run", "--stdin", "q"}, exitUsage, []string{"one way only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			code, _, errOut := c.run("", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

func TestRunPromptSources(t *testing.T) {
	c := newCLI(t)
	f := filepath.Join(c.dir, "task.md")
	if err := os.WriteFile(f, []byte("explain python venv setup\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.mustRun("", "run", "--backend", agentPath(t), "--prompt-file", f); !strings.Contains(out, "virtual environment") {
		t.Errorf("--prompt-file: agent did not get the prompt: %q", out)
	}
	if out := c.mustRun("explain python venv setup", "run", "--backend", agentPath(t), "--stdin"); !strings.Contains(out, "virtual environment") {
		t.Errorf("--stdin: agent did not get the prompt: %q", out)
	}
}

func TestRunMemoryFailsOpen(t *testing.T) {
	t.Parallel() // waits on an unreachable Redis
	c := newCLI(t)
	code, out, errOut := c.run("", "run", "--store", "redis://127.0.0.1:1", "--backend", agentPath(t), raceQuery)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (memory fails open); stderr: %s", code, errOut)
	}
	if !strings.Contains(out, "race detector") {
		t.Errorf("the agent did not run: %q", out)
	}
	if !strings.Contains(errOut, "running without it") {
		t.Errorf("the memory error is not reported on stderr: %q", errOut)
	}
}

func TestRunEventsRedacted(t *testing.T) {
	c := newCLI(t)
	secret := "sk-" + "abcdEFGHijklMNOPqrst" + "T3BlbkFJ" + "uvwxYZ0123456789abcd"
	events := filepath.Join(c.dir, "events.jsonl")
	backend := "env AGENT_ECHO_SECRET=" + secret + " " + agentPath(t)
	code, out, errOut := c.run("", "run", "--events", events, "--verify", "true", "--backend", backend, raceQuery)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, secret) {
		t.Fatalf("the agent did not print the secret (test setup): %q", out)
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || strings.Contains(string(b), "T3BlbkFJ") {
		t.Errorf("the events file holds the secret")
	}
	if !strings.Contains(string(b), "[REDACTED:") {
		t.Errorf("the events file shows no redaction")
	}
	types := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct {
			Type  string `json:"type"`
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events line %d is not JSON: %v", i+1, err)
		}
		if ev.RunID == "" {
			t.Errorf("events line %d has no run_id", i+1)
		}
		types[ev.Type] = true
	}
	for _, want := range []string{"run.start", "search", "decision", "agent.event", "verify", "evaluation", "candidate", "run.end"} {
		if !types[want] {
			t.Errorf("events file lacks a %q event (has %v)", want, types)
		}
	}
	// The candidate stored from this run must not hold the secret either.
	for _, r := range c.listRecords("test") {
		if strings.Contains(r.Answer, secret) || strings.Contains(r.Question, secret) {
			t.Errorf("candidate %s stored the secret", r.QAID)
		}
	}
}

// TestThreeRunLoop is the product loop end to end with the example agent:
// run 1 stores a candidate, run 2 injects it and the agent cites it, and
// the QA's trust and level rise.
func TestThreeRunLoop(t *testing.T) {
	c := newCLI(t)
	run := func() (string, string) {
		t.Helper()
		code, out, errOut := c.run("", "run", "--seed", "1", "--backend", agentPath(t), "--verify", "true", "--explain", raceQuery)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return out, errOut
	}

	out1, _ := run()
	if strings.Contains(out1, "[QA_REF") {
		t.Fatalf("run 1 had memory to cite: %q", out1)
	}
	recs := c.listRecords("test")
	if len(recs) != 1 {
		t.Fatalf("run 1 stored %d candidates, want 1", len(recs))
	}
	qa := recs[0]
	if qa.Question != raceQuery {
		t.Errorf("candidate question %q, want the query", qa.Question)
	}
	if strings.Contains(qa.Answer, "[QA_REF") {
		t.Error("candidate answer holds an anchor")
	}

	out2, err2 := run()
	if !strings.Contains(out2, "[QA_REF "+qa.QAID+"]") {
		t.Fatalf("run 2: the agent did not cite %s:\n%s\n%s", qa.QAID, out2, err2)
	}
	if !regexp.MustCompile(`inject: ` + regexp.QuoteMeta(qa.QAID)).MatchString(err2) {
		t.Errorf("run 2 --explain does not show the injection: %s", err2)
	}
	if !regexp.MustCompile(`timing: setup \S+, pre \S+ \(search [^)0][^)]*\), agent \S+ .*post \S+`).MatchString(err2) {
		t.Errorf("run 2 --explain does not show the phases' timings (with a search): %s", err2)
	}
	after2 := c.listRecords("test")
	if len(after2) != 1 {
		t.Fatalf("run 2 stored another candidate (%d QAs); a used QA covers the query", len(after2))
	}
	r2 := after2[0]
	if r2.TrustScore <= qa.TrustScore || r2.ValidationLevel <= qa.ValidationLevel {
		t.Errorf("run 2: trust %.3f → %.3f, level %d → %d; want both to rise", qa.TrustScore, r2.TrustScore, qa.ValidationLevel, r2.ValidationLevel)
	}
	if r2.UsageCount != 1 || r2.UseCount != 1 {
		t.Errorf("run 2: shown %d used %d, want 1 and 1", r2.UsageCount, r2.UseCount)
	}
	if r2.ValidationLevel < 2 {
		t.Errorf("run 2: level %d, want ≥ 2 (trusted)", r2.ValidationLevel)
	}

	out3, err3 := run()
	if !strings.Contains(out3, "[QA_REF "+qa.QAID+"]") {
		t.Fatalf("run 3: the agent did not cite %s", qa.QAID)
	}
	if !strings.Contains(err3, "[trusted]") {
		t.Errorf("run 3 did not inject the QA as trusted: %s", err3)
	}
	r3 := c.listRecords("test")[0]
	if r3.TrustScore <= r2.TrustScore {
		t.Errorf("run 3: trust %.3f → %.3f, want a rise", r2.TrustScore, r3.TrustScore)
	}

	var st core.ProjectStats
	if err := json.Unmarshal([]byte(c.mustRun("", "stats", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Total != 1 || st.Used != 2 {
		t.Errorf("stats: total %d used %d, want 1 and 2", st.Total, st.Used)
	}
}

// TestRunEventsRedactsKeyPrintedLineByLine: a text backend's stdout becomes
// one event per line, so a PEM key's body lines arrive alone; the events
// file must still hold none of it, nor must the stored candidate.
func TestRunEventsRedactsKeyPrintedLineByLine(t *testing.T) {
	c := newCLI(t)
	body := "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
	script := filepath.Join(c.dir, "keyagent.sh")
	src := "#!/bin/sh\ncat >/dev/null\necho 'Use this deploy key:'\necho '-----BEGIN OPENSSH PRIVATE KEY-----'\necho '" + body + "'\necho '-----END OPENSSH PRIVATE KEY-----'\necho 'Then run ssh-add.'\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(c.dir, "events.jsonl")
	code, out, errOut := c.run("", "run", "--events", events, "--verify", "true", "--backend", script, "How do I add the deploy key to the build agent?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, body) {
		t.Fatalf("the agent did not print the key (test setup): %q", out)
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), body[:24]) {
		t.Errorf("the events file holds key material")
	}
	for _, r := range c.listRecords("test") {
		if strings.Contains(r.Answer, body[:24]) {
			t.Errorf("candidate %s stored key material", r.QAID)
		}
	}
}
