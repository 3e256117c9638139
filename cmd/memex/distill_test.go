package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// fakeDistiller is a fake agent CLI of distill/testdata.
func fakeDistiller(t *testing.T, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "distill", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// distillCLI is a CLI with [distill] on, the given fake distiller and
// timeout, whose memex run starts this test binary as memex.
func distillCLI(t *testing.T, script, timeout string, enabled bool) *cli {
	t.Helper()
	c := newCLI(t)
	c.self, c.selfEnv = []string{memexBinary(t)}, []string{"MEMEX_TEST_MAIN=1"}
	cfg := filepath.Join(c.env["XDG_CONFIG_HOME"], "memex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	body := "[distill]\nenabled = " + map[bool]string{true: "true", false: "false"}[enabled] +
		"\nkeep_transcripts = true\ncommand = \"" + fakeDistiller(t, script) + "\"\ntimeout = \"" + timeout + "\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

type event struct {
	Type  string          `json:"type"`
	RunID string          `json:"run_id"`
	Data  json.RawMessage `json:"data"`
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("events line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// runWithDistill runs the example agent with --verify true and an events
// file; it returns the run id, the exit code and how long memex run took.
func (c *cli) runWithDistill(t *testing.T, extraEnv string) (string, string, int, time.Duration) {
	t.Helper()
	events := filepath.Join(c.dir, "events.jsonl")
	backend := agentPath(t)
	if extraEnv != "" {
		backend = "env " + extraEnv + " " + backend
	}
	start := time.Now()
	code, _, errOut := c.run("", "run", "--backend", backend, "--verify", "true", "--events", events, raceQuery)
	took := time.Since(start)
	evs := readEvents(t, events)
	if len(evs) == 0 {
		t.Fatalf("no events; stderr %s", errOut)
	}
	return evs[0].RunID, events, code, took
}

// waitDistill waits for the distillation record of runID.
func (c *cli) waitDistill(t *testing.T, runID string) distillRecord {
	t.Helper()
	p := filepath.Join(c.env["XDG_DATA_HOME"], "memex", "runs", runID+".distill.json")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p); err == nil {
			var rec distillRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			return rec
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no distillation record for %s after 60s", runID)
	return distillRecord{}
}

func distilled(c *cli) []core.Record {
	var out []core.Record
	for _, r := range c.listRecords("test") {
		if r.Source == "distill" {
			out = append(out, r)
		}
	}
	return out
}

func lastEvent(t *testing.T, path, typ string) map[string]any {
	t.Helper()
	var data map[string]any
	for _, e := range readEvents(t, path) {
		if e.Type == typ {
			data = nil
			if err := json.Unmarshal(e.Data, &data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if data == nil {
		t.Fatalf("no %s event in %s", typ, path)
	}
	return data
}

func TestDistillAfterAPassingRun(t *testing.T) {
	c := distillCLI(t, "valid.sh", "30s", true)
	runID, events, code, _ := c.runWithDistill(t, "")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	rec := c.waitDistill(t, runID)
	if rec.Status != "ok" || len(rec.Candidates) != 2 || rec.Usage.InputTokens != 1500 || rec.Usage.OutputTokens != 150 {
		t.Fatalf("record %+v", rec)
	}
	end := lastEvent(t, events, "distill.end")
	if end["status"] != "ok" || end["usage"].(map[string]any)["input_tokens"].(float64) != 1500 {
		t.Errorf("distill.end event %v", end)
	}
	lastEvent(t, events, "distill.spawned")
	ds := distilled(c)
	if len(ds) != 2 {
		t.Fatalf("%d distilled QAs: %+v", len(ds), ds)
	}
	for _, r := range ds {
		// Never trusted by birth: like an extracted candidate, below the
		// gatekeeper's trusted level until other runs validate it.
		if r.ValidationLevel >= 2 || r.Metadata["distilled_from"] != runID {
			t.Errorf("%s: level %d metadata %v", r.QAID, r.ValidationLevel, r.Metadata)
		}
		if r.SuccessCount < 1 {
			t.Errorf("%s carries no evidence of the run that passed: %+v", r.QAID, r)
		}
	}
	out := c.mustRun("", "stats")
	if !strings.Contains(out, "distillation: 1 runs (1 ok, 0 failed), 2 candidates, tokens 1500 in / 150 out, $0.0123") {
		t.Errorf("stats:\n%s", out)
	}
}

func TestDistillFailuresChangeNothing(t *testing.T) {
	tests := []struct{ script, timeout, reason string }{
		{"malformed.sh", "30s", "malformed_json"},
		{"crash.sh", "30s", "crash"},
		{"hang.sh", "8s", "timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.script, func(t *testing.T) {
			t.Parallel()
			c := distillCLI(t, tc.script, tc.timeout, true)
			runID, events, code, took := c.runWithDistill(t, "")
			if code != 0 {
				t.Fatalf("exit %d, want the agent's 0", code)
			}
			if tc.reason == "timeout" && took >= 8*time.Second {
				t.Errorf("memex run took %s: it waited for the distiller", took)
			}
			rec := c.waitDistill(t, runID)
			if rec.Status != "failed" || rec.Reason != tc.reason {
				t.Errorf("record %+v, want reason %s", rec, tc.reason)
			}
			if end := lastEvent(t, events, "distill.end"); end["reason"] != tc.reason {
				t.Errorf("distill.end %v", end)
			}
			if ds := distilled(c); len(ds) != 0 {
				t.Errorf("stored %+v", ds)
			}
		})
	}
}

func TestDistillHarmfulAnswers(t *testing.T) {
	c := distillCLI(t, "secret.sh", "30s", true)
	runID, _, code, _ := c.runWithDistill(t, "")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if rec := c.waitDistill(t, runID); rec.Status != "ok" {
		t.Fatalf("%+v", rec)
	}
	dump := c.mustRun("", "qa", "export")
	if strings.Contains(dump, "ghp_R7xQk2mN9pL4sT8vW3yZ6aB1cD5eF0gH2jK4") {
		t.Error("a secret from the distiller's answer was stored")
	}
	runs, _ := os.ReadFile(filepath.Join(c.env["XDG_DATA_HOME"], "memex", "runs", runID+".distill.json"))
	if strings.Contains(string(runs), "ghp_R7xQk2") {
		t.Error("a secret reached the distillation record")
	}

	c = distillCLI(t, "inject.sh", "30s", true)
	runID, _, _, _ = c.runWithDistill(t, "")
	if rec := c.waitDistill(t, runID); rec.Status != "ok" || len(rec.Candidates) != 1 || !rec.Candidates[0].Quarantined {
		t.Fatalf("%+v", rec)
	}
	for _, r := range distilled(c) {
		if !r.Quarantined {
			t.Errorf("an instruction-like learning is not quarantined: %+v", r)
		}
	}
}

func TestDistillSkipsFailingRunsAndRunsByHand(t *testing.T) {
	c := distillCLI(t, "valid.sh", "30s", true)
	_, events, code, _ := c.runWithDistill(t, "AGENT_EXIT=3")
	if code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
	if sk := lastEvent(t, events, "distill.skipped"); sk["reason"] != "run_failed" {
		t.Errorf("distill.skipped %v", sk)
	}

	c = distillCLI(t, "valid.sh", "30s", false) // transcripts kept, nothing automatic
	runID, events, _, _ := c.runWithDistill(t, "")
	for _, e := range readEvents(t, events) {
		if strings.HasPrefix(e.Type, "distill.") {
			t.Errorf("distillation off, yet %s", e.Type)
		}
	}
	out := c.mustRun("", "distill", runID)
	if !strings.Contains(out, "distilled "+runID) || !strings.Contains(out, "tokens: 1500 in, 150 out, $0.0123") {
		t.Errorf("memex distill:\n%s", out)
	}
	if out := c.mustRun("", "distill", "--dry-run", runID); !strings.Contains(out, "not instructions to you") {
		t.Errorf("--dry-run:\n%s", out)
	}
	code, _, errOut := c.run("", "distill", "--command", fakeDistiller(t, "crash.sh"), runID)
	if code != exitError || !strings.Contains(errOut, "crash") {
		t.Errorf("a crashing distiller by hand: exit %d %s", code, errOut)
	}
	for _, args := range [][]string{{"distill"}, {"distill", "../etc/passwd"}} {
		if code, _, _ := c.run("", args...); code != exitUsage {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	if code, _, errOut := c.run("", "distill", "run-nosuchrun"); code != exitError || !strings.Contains(errOut, "no transcript") {
		t.Errorf("unknown run: %d %s", code, errOut)
	}
}

func TestDistillConfigFromARepository(t *testing.T) {
	for _, body := range []string{"[distill]\nenabled = true\n", "[distill]\ncommand = \"sh -c evil\"\n"} {
		cfg := DefaultConfig()
		if err := applyFile(&cfg, "/repo/.memex.toml", []byte(body)); err == nil {
			t.Errorf("a repository's .memex.toml set %q", body)
		}
	}
	cfg := DefaultConfig()
	if err := applyFile(&cfg, "/repo/.memex.toml", []byte("[distill]\nenabled = false\n")); err != nil {
		t.Errorf("turning distillation off: %v", err)
	}
	if err := applyFile(&cfg, "/home/u/.config/memex/config.toml", []byte("[distill]\nenabled = true\ntimeout = \"30s\"\nmax_candidates = 3\n")); err != nil || !cfg.Distill.Enabled || cfg.Distill.Timeout != 30*time.Second {
		t.Errorf("user config: %v %+v", err, cfg.Distill)
	}
	if err := applyFile(&cfg, "x.toml", []byte("[distill]\nmax_candidates = 99\n")); err == nil {
		t.Error("max_candidates 99 accepted")
	}
}

func TestPruneTranscriptsKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i := range 10 {
		p := filepath.Join(dir, "run-"+string(rune('a'+i))+".json")
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(p, base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute))
		_ = os.WriteFile(filepath.Join(dir, "run-"+string(rune('a'+i))+".distill.json"), []byte("{}"), 0o600)
	}
	pruneTranscripts(dir, 3)
	left, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	var kept []string
	for _, f := range left {
		if !strings.HasSuffix(f, ".distill.json") {
			kept = append(kept, filepath.Base(f))
		}
	}
	if strings.Join(kept, ",") != "run-h.json,run-i.json,run-j.json" || len(left) != 13 {
		t.Errorf("kept %v of %d files", kept, len(left))
	}
}
