package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/hooks"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/plugins/embedded"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestMain lets the test binary stand in for the memex binary: with
// MEMEX_TEST_MAIN=1 it runs memex's main (the host-play tests copy it to a
// file named memex and run the commands a host would run).
func TestMain(m *testing.M) {
	if os.Getenv("MEMEX_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

var (
	memexBinOnce sync.Once
	memexBinPath string
	memexBinErr  error
)

// memexBinary is a copy of this test binary named memex (see TestMain).
func memexBinary(t *testing.T) string {
	t.Helper()
	memexBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memex-hook-bin-")
		if err != nil {
			memexBinErr = err
			return
		}
		self, err := os.Executable()
		if err != nil {
			memexBinErr = err
			return
		}
		b, err := os.ReadFile(self)
		if err != nil {
			memexBinErr = err
			return
		}
		memexBinPath = filepath.Join(dir, "memex")
		memexBinErr = os.WriteFile(memexBinPath, b, 0o755)
	})
	if memexBinErr != nil {
		t.Fatal(memexBinErr)
	}
	return memexBinPath
}

// hostEnv is a temporary home with a project directory, as a host sees it.
type hostEnv struct {
	t       *testing.T
	home    string
	project string
	env     []string
}

func newHostEnv(t *testing.T) *hostEnv {
	home := t.TempDir()
	project := filepath.Join(home, "src", "app")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	// MEMEX_SEED fixes the gatekeeper's probation draw (θ ~ Beta): the
	// sessions below expect the candidate to win its slot.
	// GORACE: a race-built memex (this test binary) otherwise sleeps 1 s
	// at exit.
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "MEMEX_TEST_MAIN=1", "MEMEX_SEED=1", "GORACE=atexit_sleep_ms=0"}
	return &hostEnv{t: t, home: home, project: project, env: env}
}

func (e *hostEnv) dataDir() string { return filepath.Join(e.home, ".local", "share", "memex") }

// memex runs the memex binary in the project directory.
func (e *hostEnv) memex(args ...string) (string, error) {
	cmd := exec.Command(memexBinary(e.t), args...)
	cmd.Dir, cmd.Env = e.project, e.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sh runs a configured hook command as the host does: sh -c, the hook JSON
// on stdin, in the project directory. It returns stdout and the duration.
func (e *hostEnv) sh(command string, input any) ([]byte, time.Duration) {
	e.t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.shRaw(command, b)
}

func (e *hostEnv) shRaw(command string, stdin []byte) ([]byte, time.Duration) {
	e.t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir, cmd.Env = e.project, e.env
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("hook %q: %v (a hook must exit 0)\nstderr: %s", command, err, stderr.String())
	}
	if stderr.Len() > 0 {
		e.t.Errorf("hook %q wrote to stderr: %s", command, stderr.String())
	}
	return stdout.Bytes(), time.Since(start)
}

func (e *hostEnv) log() string {
	b, _ := os.ReadFile(filepath.Join(e.dataDir(), "hooks.log"))
	return string(b)
}

// records opens the default store after the hooks ran.
func (e *hostEnv) records() []core.Record {
	e.t.Helper()
	s, err := embedded.Open(filepath.Join(e.dataDir(), "memex.db"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer s.Close()
	page, err := s.List(e.t.Context(), core.ListRequest{ProjectID: core.SanitizeProjectID(e.project), Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Items
}

// hostSpec is what a host-play test needs to know of a host.
type hostSpec struct {
	host        hooks.Host
	settings    string // relative to home
	prompt      string // event names
	stop        string
	transcript  string // template under testdata/hookplay
	ext         string
	promptInput func(e *hostEnv, session, turn, transcript, prompt string) map[string]any
	stopInput   func(e *hostEnv, session, turn, transcript, prompt, answer string) map[string]any
}

var hostSpecs = []hostSpec{
	{
		host: hooks.Claude, settings: ".claude/settings.json", prompt: "UserPromptSubmit", stop: "Stop",
		transcript: "claude_turn.jsonl.tmpl", ext: ".jsonl",
		promptInput: func(e *hostEnv, session, _, transcript, prompt string) map[string]any {
			return map[string]any{"session_id": session, "transcript_path": transcript, "cwd": e.project,
				"permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
		},
		stopInput: func(e *hostEnv, session, _, transcript, _, _ string) map[string]any {
			return map[string]any{"session_id": session, "transcript_path": transcript, "cwd": e.project,
				"permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": false}
		},
	},
	{
		host: hooks.Codex, settings: ".codex/hooks.json", prompt: "UserPromptSubmit", stop: "Stop",
		transcript: "codex_turn.jsonl.tmpl", ext: ".jsonl",
		promptInput: func(e *hostEnv, session, turn, transcript, prompt string) map[string]any {
			return map[string]any{"session_id": session, "turn_id": turn, "transcript_path": transcript, "cwd": e.project,
				"hook_event_name": "UserPromptSubmit", "model": "gpt-5-codex", "permission_mode": "default", "prompt": prompt}
		},
		stopInput: func(e *hostEnv, session, turn, transcript, _, answer string) map[string]any {
			return map[string]any{"session_id": session, "turn_id": turn, "transcript_path": transcript, "cwd": e.project,
				"hook_event_name": "Stop", "model": "gpt-5-codex", "permission_mode": "default",
				"stop_hook_active": false, "last_assistant_message": answer}
		},
	},
	{
		host: hooks.Gemini, settings: ".gemini/settings.json", prompt: "BeforeAgent", stop: "AfterAgent",
		transcript: "gemini_session.json.tmpl", ext: ".json",
		promptInput: func(e *hostEnv, session, _, transcript, prompt string) map[string]any {
			return map[string]any{"session_id": session, "transcript_path": transcript, "cwd": e.project,
				"hook_event_name": "BeforeAgent", "timestamp": "2026-11-20T10:01:00.000Z", "prompt": prompt}
		},
		stopInput: func(e *hostEnv, session, _, transcript, prompt, answer string) map[string]any {
			return map[string]any{"session_id": session, "transcript_path": transcript, "cwd": e.project,
				"hook_event_name": "AfterAgent", "timestamp": "2026-11-20T10:01:10.000Z",
				"prompt": prompt, "prompt_response": answer, "stop_hook_active": false}
		},
	},
}

// commands reads the settings file the host would read and returns the
// command configured for each event.
func (e *hostEnv) commands(spec hostSpec) map[string][]string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, spec.settings))
	if err != nil {
		e.t.Fatal(err)
	}
	var doc struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		e.t.Fatalf("%s: %v", spec.settings, err)
	}
	out := map[string][]string{}
	for event, raw := range doc.Hooks {
		var groups []struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		}
		if json.Unmarshal(raw, &groups) != nil {
			continue // "enabled": true and the like
		}
		for _, g := range groups {
			for _, h := range g.Hooks {
				if h.Type == "command" {
					out[event] = append(out[event], h.Command)
				}
			}
		}
	}
	return out
}

// writeTranscript writes a turn in the host's own format.
func (e *hostEnv) writeTranscript(spec hostSpec, session, prompt, answer string, fail bool) string {
	e.t.Helper()
	tmpl := template.Must(template.New(spec.transcript).Funcs(template.FuncMap{
		"json": func(v any) (string, error) { b, err := json.Marshal(v); return string(b), err },
	}).ParseFiles(filepath.Join("testdata", "hookplay", spec.transcript)))
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]any{"SessionID": session, "Cwd": e.project, "Prompt": prompt, "Answer": answer, "Fail": fail}); err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.home, "transcripts", session+spec.ext)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

var qaRef = regexp.MustCompile(`\[QA_REF ([A-Za-z0-9_.:\-]+)\]`)

// checkGolden compares a hook's output with testdata/hookplay/<name>.golden
// after replacing the run-specific QA id with QA_ID, and checks that it has
// exactly the documented keys.
func checkGolden(t *testing.T, spec hostSpec, name string, out []byte, id string) {
	t.Helper()
	var doc map[string]map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%s output is not JSON: %v\n%s", name, err, out)
	}
	if len(doc) != 1 || doc["hookSpecificOutput"] == nil {
		t.Errorf("%s output keys: want exactly hookSpecificOutput, got %v", name, keysOf(doc))
	}
	if got := keysOf(doc["hookSpecificOutput"]); strings.Join(got, ",") != "additionalContext,hookEventName" {
		t.Errorf("%s hookSpecificOutput keys = %v, want additionalContext, hookEventName", name, got)
	}
	if doc["hookSpecificOutput"]["hookEventName"] != spec.prompt {
		t.Errorf("hookEventName = %v, want %s", doc["hookSpecificOutput"]["hookEventName"], spec.prompt)
	}
	norm := strings.ReplaceAll(string(out), id, "QA_ID")
	norm = regexp.MustCompile(`verified [^)"]*ago|never validated|trust [0-9.]+`).ReplaceAllString(norm, "…")
	path := filepath.Join("testdata", "hookplay", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(norm), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if norm != string(want) {
		t.Errorf("%s output differs from %s:\n got: %s\nwant: %s", name, path, norm, want)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestHostPlay plays each host over three sessions: memex hook install into
// a temporary home, the settings file read back, and the configured
// commands run as the host runs them, with its documented inputs and
// transcripts in its own format.
func TestHostPlay(t *testing.T) {
	t.Parallel() // each host in its own HOME: the processes' waits overlap
	for _, spec := range hostSpecs {
		t.Run(string(spec.host), func(t *testing.T) {
			t.Parallel()
			e := newHostEnv(t)
			if out, err := e.memex("hook", "install", string(spec.host)); err != nil {
				t.Fatalf("install: %v\n%s", err, out)
			}
			cmds := e.commands(spec)
			if len(cmds[spec.prompt]) != 1 || len(cmds[spec.stop]) != 1 {
				t.Fatalf("settings hold %v; want one %s and one %s command", cmds, spec.prompt, spec.stop)
			}
			promptCmd, stopCmd := cmds[spec.prompt][0], cmds[spec.stop][0]

			session := func(n int, prompt, answer string, fail bool) []byte {
				t.Helper()
				sid := string(spec.host) + "-session-" + string(rune('0'+n))
				turn := "turn-" + string(rune('0'+n))
				transcript := filepath.Join(e.home, "transcripts", sid+spec.ext)
				out, _ := e.sh(promptCmd, spec.promptInput(e, sid, turn, transcript, prompt))
				e.writeTranscript(spec, sid, prompt, answer, fail)
				if stop, _ := e.sh(stopCmd, spec.stopInput(e, sid, turn, transcript, prompt, answer)); len(stop) != 0 {
					t.Errorf("session %d: the stop hook wrote %q; it must write nothing", n, stop)
				}
				return out
			}
			const answer1 = "The map in cache.go is written from two goroutines. Guard every read and write of c.m with a sync.Mutex (or use sync.Map), then rerun go test -race ./cache/... to confirm the race is gone."

			// Session 1: nothing to inject; the agent's tests pass → a candidate.
			if out := session(1, "How do I fix the data race on the cache map that go test -race reports?", answer1, false); len(out) != 0 {
				t.Fatalf("session 1 injected %q into an empty memory", out)
			}
			recs := e.records()
			if len(recs) != 1 || recs[0].SuccessCount != 1 || recs[0].Stats.StrongPass != 1 {
				t.Fatalf("after session 1: %d records %+v; want one new QA whose creating turn passed strongly\nlog: %s", len(recs), recs, e.log())
			}
			qa := recs[0]

			// Session 2: a paraphrase gets the candidate (probation); the
			// agent cites it and its tests pass → a validation, trust rises.
			out := session(2, "go test -race says there is a data race in the cache map. How can I fix it?",
				"Following [QA_REF "+qa.QAID+"], I guarded c.m with a sync.Mutex; go test -race ./cache/... passes now.", false)
			if m := qaRef.FindStringSubmatch(string(out)); m == nil || m[1] != qa.QAID {
				t.Fatalf("session 2 output does not inject %s: %s\nlog: %s", qa.QAID, out, e.log())
			}
			if !strings.Contains(string(out), "unverified") {
				t.Errorf("session 2: the candidate is not labelled as probation: %s", out)
			}
			checkGolden(t, spec, string(spec.host)+"_prompt_output", out, qa.QAID)
			recs = e.records()
			if len(recs) != 1 {
				t.Fatalf("after session 2: %d records; want the one QA (a used QA covers the query)", len(recs))
			}
			v2 := recs[0]
			if v2.SuccessCount != qa.SuccessCount+1 || v2.TrustScore <= qa.TrustScore || v2.UseCount != 1 {
				t.Errorf("after session 2: success %d→%d trust %.3f→%.3f uses %d; want one more success, higher trust, one use",
					qa.SuccessCount, v2.SuccessCount, qa.TrustScore, v2.TrustScore, v2.UseCount)
			}

			// Session 3: the tools fail → nothing stored, the cited QA loses trust.
			out = session(3, "How to get rid of the data race in the cache map (go test -race)?",
				"I applied [QA_REF "+qa.QAID+"] but go test -race ./cache/... still fails.", true)
			if !strings.Contains(string(out), qa.QAID) {
				t.Fatalf("session 3 did not inject %s: %s", qa.QAID, out)
			}
			recs = e.records()
			if len(recs) != 1 {
				t.Fatalf("after a failing turn: %d records; want no new one", len(recs))
			}
			v3 := recs[0]
			if v3.FailureCount != v2.FailureCount+1 || v3.TrustScore >= v2.TrustScore {
				t.Errorf("after session 3: failures %d→%d trust %.3f→%.3f; want one more failure and lower trust",
					v2.FailureCount, v3.FailureCount, v2.TrustScore, v3.TrustScore)
			}
			if l := e.log(); l != "" {
				t.Errorf("hooks.log after three clean sessions: %s", l)
			}
		})
	}
}

// TestHookInstallIdempotentAndReversible: installing twice leaves one entry
// per event, every other key and hook stays, and uninstall restores the
// file byte for byte.
func TestHookInstallIdempotentAndReversible(t *testing.T) {
	t.Parallel()
	originals := map[hooks.Host]string{
		hooks.Claude: `{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(go test:*)"
    ]
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'done <3'"
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "audit.sh",
            "timeout": 5
          }
        ]
      }
    ]
  },
  "env": {
    "A": "b\u001f\\\"c"
  }
}
`,
		hooks.Codex: `{"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]}}`,
		hooks.Gemini: `{
    "theme": "GitHub",
    "hooks": {
        "enabled": true,
        "BeforeAgent": [
            {
                "matcher": "*",
                "hooks": [
                    {
                        "name": "ctx",
                        "type": "command",
                        "command": "git log -1",
                        "timeout": 2000
                    }
                ]
            }
        ]
    }
}`,
	}
	for _, spec := range hostSpecs {
		t.Run(string(spec.host), func(t *testing.T) {
			e := newHostEnv(t)
			path := filepath.Join(e.home, spec.settings)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			orig := originals[spec.host]
			if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
				t.Fatal(err)
			}
			dry, err := e.memex("hook", "install", string(spec.host), "--dry-run")
			if err != nil || !strings.Contains(dry, "+") || !strings.Contains(dry, "hook "+string(spec.host)+" "+spec.prompt) {
				t.Fatalf("--dry-run: %v\n%s", err, dry)
			}
			if b, _ := os.ReadFile(path); string(b) != orig {
				t.Fatal("--dry-run changed the file")
			}
			for range 2 {
				if out, err := e.memex("hook", "install", string(spec.host)); err != nil {
					t.Fatalf("install: %v\n%s", err, out)
				}
			}
			cmds := e.commands(spec)
			var ours int
			for _, list := range cmds {
				for _, c := range list {
					if strings.Contains(c, " hook "+string(spec.host)+" ") {
						ours++
					}
				}
			}
			if want := len(spec.host.InstalledEvents()); ours != want {
				t.Errorf("after installing twice: %d memex commands, want %d: %v", ours, want, cmds)
			}
			after, _ := os.ReadFile(path)
			for _, keep := range []string{"notify-send", "audit.sh", "echo hi", "git log -1", `"theme"`, `"model"`, `"enabled": true`} {
				if strings.Contains(orig, keep) && !strings.Contains(string(after), keep) {
					t.Errorf("install lost %s:\n%s", keep, after)
				}
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
				t.Errorf("install changed the file mode to %v", st.Mode().Perm())
			}
			if b, err := os.ReadFile(path + ".memex.bak"); err != nil || string(b) != orig {
				t.Errorf("backup: %v %q", err, b)
			}
			status, err := e.memex("hook", "status", string(spec.host))
			if err != nil || strings.Count(status, "[ok]") != len(spec.host.InstalledEvents()) {
				t.Errorf("status: %v\n%s", err, status)
			}
			if out, err := e.memex("hook", "uninstall", string(spec.host)); err != nil {
				t.Fatalf("uninstall: %v\n%s", err, out)
			}
			if b, _ := os.ReadFile(path); string(b) != orig {
				t.Errorf("uninstall did not restore the file:\n got: %s\nwant: %s", b, orig)
			}
		})
	}
	t.Run("new file", func(t *testing.T) {
		e := newHostEnv(t)
		if out, err := e.memex("hook", "install", "claude", "--scope", "project"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		path := filepath.Join(e.project, ".claude", "settings.json")
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		if out, _ := e.memex("hook", "status", "claude"); !strings.Contains(out, "not installed") {
			t.Errorf("user-scope status sees the project install: %s", out)
		}
		if out, err := e.memex("hook", "uninstall", "claude", "--scope", "project"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("uninstall left the file it created: %v", err)
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		e := newHostEnv(t)
		path := filepath.Join(e.home, ".claude", "settings.json")
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		_ = os.WriteFile(path, []byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/nonexistent/bin/memex hook claude Stop"}]}]}}`), 0o644)
		if out, _ := e.memex("hook", "status", "claude"); !strings.Contains(out, "MISSING") {
			t.Errorf("status does not report the missing binary: %s", out)
		}
	})
}

// TestHookNeverBlocks: bad input, an unknown event, a missing transcript, a
// broken store or a locked store → exit 0, no output, within the budget,
// and the reason in hooks.log.
func TestHookNeverBlocks(t *testing.T) {
	prompt := func(e *hostEnv) map[string]any {
		return map[string]any{"session_id": "s", "transcript_path": filepath.Join(e.home, "t.jsonl"), "cwd": e.project,
			"hook_event_name": "UserPromptSubmit", "prompt": "how do I fix the data race in the cache map?"}
	}
	cases := []struct {
		name  string
		setup func(e *hostEnv) (command string, stdin []byte)
		want  string // in the log
	}{
		{"malformed JSON", func(e *hostEnv) (string, []byte) {
			return memexBinary(t) + " hook claude UserPromptSubmit", []byte(`{"session_id": "s", "prompt": `)
		}, "malformed JSON"},
		{"not an object", func(e *hostEnv) (string, []byte) {
			return memexBinary(t) + " hook codex Stop", []byte(`["Stop"]`)
		}, "not a JSON object"},
		{"unknown event", func(e *hostEnv) (string, []byte) {
			return memexBinary(t) + " hook gemini BeforeTool", []byte(`{"session_id":"s"}`)
		}, "unknown hook event"},
		{"unknown host", func(e *hostEnv) (string, []byte) {
			return memexBinary(t) + " hook cursor Stop", []byte(`{"session_id":"s"}`)
		}, "unknown host"},
		{"missing transcript", func(e *hostEnv) (string, []byte) {
			b, _ := json.Marshal(prompt(e))
			e.shRaw(memexBinary(t)+" hook claude UserPromptSubmit", b)
			stop := prompt(e)
			stop["hook_event_name"] = "Stop"
			delete(stop, "prompt")
			b, _ = json.Marshal(stop)
			return memexBinary(t) + " hook claude Stop", b
		}, "no transcript"},
		{"stop without prompt state", func(e *hostEnv) (string, []byte) {
			return memexBinary(t) + " hook claude Stop", []byte(`{"session_id":"never-prompted","hook_event_name":"Stop","transcript_path":"/nonexistent"}`)
		}, "no prompt state"},
		{"broken store", func(e *hostEnv) (string, []byte) {
			db := filepath.Join(e.home, "broken.db")
			_ = os.WriteFile(db, []byte("this is not a bbolt file, it is garbage garbage garbage"), 0o600)
			b, _ := json.Marshal(prompt(e))
			return memexBinary(t) + " hook claude UserPromptSubmit --store " + db, b
		}, "memory"},
		{"unreachable redis", func(e *hostEnv) (string, []byte) {
			b, _ := json.Marshal(prompt(e))
			return memexBinary(t) + " hook claude UserPromptSubmit --store redis://127.0.0.1:1/0", b
		}, "memory"},
		{"locked store", func(e *hostEnv) (string, []byte) {
			db := filepath.Join(e.home, "locked.db")
			s, err := embedded.Open(db, embedded.WithKeepOpen())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.RecordCandidate(context.Background(), core.CandidateRequest{ProjectID: core.SanitizeProjectID(e.project), Question: "how do I fix the data race in the cache map?", Answer: "Guard it with a sync.Mutex and rerun go test -race."}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			b, _ := json.Marshal(prompt(e))
			return memexBinary(t) + " hook claude UserPromptSubmit --store " + db, b
		}, "locked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newHostEnv(t)
			command, stdin := tc.setup(e)
			out, took := e.shRaw(command, stdin)
			if len(out) != 0 {
				t.Errorf("output %q; want none", out)
			}
			// The hook's own time, from its log line: within the budget
			// whatever the machine's load (the process's start and exit,
			// which the race detector and a loaded machine stretch, are
			// not in it). The whole process stays under the host's 10 s.
			if m := regexp.MustCompile(`\[([0-9a-zµ.]+)\]\n?$`).FindStringSubmatch(e.log()); m == nil {
				t.Errorf("hooks.log has no [elapsed] on its last line:\n%s", e.log())
			} else if d, err := time.ParseDuration(m[1]); err != nil || d > hookPromptBudget+250*time.Millisecond {
				t.Errorf("the hook ran %s (%v); the budget is %s", m[1], err, hookPromptBudget)
			}
			if took >= 10*time.Second {
				t.Errorf("the hook process took %s; the host kills it at 10 s", took)
			}
			if l := e.log(); !strings.Contains(l, tc.want) {
				t.Errorf("hooks.log does not say %q:\n%s", tc.want, l)
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		e := newHostEnv(t)
		e.env = append(e.env, "MEMEX_DISABLE=1")
		out, _ := e.shRaw(memexBinary(t)+" hook claude UserPromptSubmit", []byte(`garbage`))
		if len(out) != 0 || e.log() != "" {
			t.Errorf("MEMEX_DISABLE=1: output %q log %q", out, e.log())
		}
	})
}

// TestHookSecretsStayOut: a secret in the prompt, the transcript and a
// tool's output reaches neither the store, the log nor the turn state.
func TestHookSecretsStayOut(t *testing.T) {
	t.Parallel()
	const secret = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	spec := hostSpecs[0]
	e := newHostEnv(t)
	if out, err := e.memex("hook", "install", "claude"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cmds := e.commands(spec)
	prompt := "How do I fix the data race on the cache map? my token is " + secret
	transcript := filepath.Join(e.home, "transcripts", "s"+spec.ext)
	e.sh(cmds[spec.prompt][0], spec.promptInput(e, "s", "", transcript, prompt))
	// The state is on disk between the hooks: no secret in it.
	_ = filepath.WalkDir(e.dataDir(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret", p)
			}
		}
		return nil
	})
	e.writeTranscript(spec, "s", prompt, "Set GITHUB_TOKEN="+secret+" and guard the map in cache.go with a sync.Mutex, then rerun go test -race ./cache/... which passes now.", false)
	e.sh(cmds[spec.stop][0], spec.stopInput(e, "s", "", transcript, prompt, ""))
	recs := e.records()
	if len(recs) != 1 {
		t.Fatalf("%d records; want the candidate\nlog: %s", len(recs), e.log())
	}
	b, _ := json.Marshal(recs)
	if bytes.Contains(b, []byte(secret)) {
		t.Errorf("the store holds the secret: %s", b)
	}
	// A failing hook logs the input's error, redacted.
	e.shRaw(memexBinary(t)+" hook claude UserPromptSubmit", []byte(`{"session_id":"`+secret+`","hook_event_name":"Stop"}`))
	if l := e.log(); l == "" || strings.Contains(l, secret) {
		t.Errorf("hooks.log: %q", l)
	}
	_ = io.Discard
}

// playSession runs one prompt → transcript → stop turn of a host with the
// installed commands and returns the prompt hook's output.
func (e *hostEnv) playSession(spec hostSpec, cmds map[string][]string, sid, prompt, answer string, fail bool) []byte {
	e.t.Helper()
	transcript := filepath.Join(e.home, "transcripts", sid+spec.ext)
	out, _ := e.sh(cmds[spec.prompt][0], spec.promptInput(e, sid, "turn-1", transcript, prompt))
	e.writeTranscript(spec, sid, prompt, answer, fail)
	if stop, _ := e.sh(cmds[spec.stop][0], spec.stopInput(e, sid, "turn-1", transcript, prompt, answer)); len(stop) != 0 {
		e.t.Errorf("the stop hook wrote %q", stop)
	}
	return out
}

// TestHookStores: the hooks work on every store — Redis, and a memex serve
// over HTTP, whose records wait in the outbox while it is down.
func TestHookStores(t *testing.T) {
	t.Parallel()
	spec := hostSpecs[0]
	const answer = "The map in cache.go is written from two goroutines. Guard every read and write of c.m with a sync.Mutex (or use sync.Map), then rerun go test -race ./cache/... to confirm the race is gone."
	const prompt1 = "How do I fix the data race on the cache map that go test -race reports?"
	const prompt2 = "go test -race says there is a data race in the cache map. How can I fix it?"

	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartServer(t, redistest.ServerOptions{})
		e := newHostEnv(t)
		e.env = append(e.env, "MEMEX_STORE="+srv.URL())
		if out, err := e.memex("hook", "install", "claude"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		cmds := e.commands(spec)
		e.playSession(spec, cmds, "r1", prompt1, answer, false)
		out := e.playSession(spec, cmds, "r2", prompt2, "Done as [QA_REF x] says.", false)
		if !qaRef.Match(out) {
			t.Fatalf("session 2 on Redis injected nothing: %s\nlog: %s", out, e.log())
		}
		if l := e.log(); l != "" {
			t.Errorf("hooks.log: %s", l)
		}
	})

	t.Run("http with the service down", func(t *testing.T) {
		e := newHostEnv(t)
		addr := freeAddr(t)
		e.env = append(e.env, "MEMEX_STORE=http://"+addr)
		if out, err := e.memex("hook", "install", "claude"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		cmds := e.commands(spec)
		if out := e.playSession(spec, cmds, "h1", prompt1, answer, false); len(out) != 0 {
			t.Fatalf("output while the service is down: %s", out)
		}
		if !strings.Contains(e.log(), "memory unavailable") {
			t.Errorf("hooks.log does not say the memory was unavailable: %s", e.log())
		}
		served := serveAt(t, addr)
		if out, err := e.memex("outbox", "flush"); err != nil || !strings.Contains(out, "delivered: 1") {
			t.Fatalf("outbox flush: %v\n%s", err, out)
		}
		page, err := served.List(t.Context(), core.ListRequest{ProjectID: core.SanitizeProjectID(e.project)})
		if err != nil || len(page.Items) != 1 || page.Items[0].Question != prompt1 {
			t.Fatalf("the service holds %+v (%v); want the spooled candidate", page.Items, err)
		}
		out := e.playSession(spec, cmds, "h2", prompt2, "Done as [QA_REF "+page.Items[0].QAID+"] says; go test -race passes.", false)
		if !strings.Contains(string(out), page.Items[0].QAID) {
			t.Fatalf("session 2 over HTTP did not inject the QA: %s\nlog: %s", out, e.log())
		}
	})
}
