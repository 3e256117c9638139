package hooks

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/gatekeeper"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestReadTurnGolden reads a transcript of each host, in its own format,
// back into the turn's events: only what follows the turn's prompt (an
// earlier turn's citation and failing test are not this turn's), no
// subagent lines, the tools' outcomes and the final answer.
func TestReadTurnGolden(t *testing.T) {
	for _, h := range Hosts() {
		for _, kind := range []string{"pass", "fail"} {
			name := string(h) + "_" + kind
			t.Run(name, func(t *testing.T) {
				ext := ".jsonl"
				if h == Gemini {
					ext = ".json"
				}
				in := Input{SessionID: "sess-1", TranscriptPath: filepath.Join("testdata", name+ext)}
				turn, err := ReadTurn(h, in)
				if err != nil {
					t.Fatal(err)
				}
				if turn.Prompt != "fix the data race in the cache map" {
					t.Errorf("prompt = %q", turn.Prompt)
				}
				got, _ := json.MarshalIndent(turn.Events, "", "  ")
				golden := filepath.Join("testdata", name+".events.golden")
				if *update {
					if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if string(got)+"\n" != string(want) {
					t.Errorf("events differ from %s:\n%s", golden, got)
				}
				// What the gatekeeper makes of it: the cited item, and
				// strong evidence (tests after the last edit).
				ev := gatekeeper.EvaluateRun([]string{"qa_cited", "qa-from-an-earlier-turn", "qa-cited-by-a-subagent"}, gatekeeper.Outcome{Events: turn.Events})
				if strings.Join(ev.Used, ",") != "qa_cited" {
					t.Errorf("used = %v, want only qa_cited", ev.Used)
				}
				wantPass := kind == "pass"
				if ev.Passed != wantPass || ev.Strength != core.StrengthStrong {
					t.Errorf("evaluation: passed %v strength %s, want %v strong (%v)", ev.Passed, ev.Strength, wantPass, ev.Reasons)
				}
			})
		}
	}
}

func TestReadTurnErrors(t *testing.T) {
	if _, err := ReadTurn(Claude, Input{}); !errors.Is(err, ErrNoTranscript) {
		t.Errorf("no path: %v", err)
	}
	if _, err := ReadTurn(Codex, Input{TranscriptPath: filepath.Join(t.TempDir(), "gone.jsonl")}); !errors.Is(err, ErrNoTranscript) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte("not json at all"), 0o600)
	if _, err := ReadTurn(Gemini, Input{TranscriptPath: bad}); err == nil {
		t.Error("a garbage Gemini transcript was accepted")
	}
	// Garbage lines in a JSONL transcript are skipped, the final message
	// from the hook input still counts.
	junk := filepath.Join(t.TempDir(), "junk.jsonl")
	_ = os.WriteFile(junk, []byte("{\n[1,2]\n\"x\"\n"), 0o600)
	turn, err := ReadTurn(Claude, Input{TranscriptPath: junk, LastAssistantMessage: "done [QA_REF qa_1]"})
	if err != nil || len(turn.Events) != 1 || turn.Events[0].Kind != core.EventResult {
		t.Errorf("junk transcript: %v %+v", err, turn.Events)
	}
}

func TestDecodeInput(t *testing.T) {
	cases := []struct {
		host        Host
		event, json string
		want        string // error substring; "" = ok
	}{
		{Claude, "UserPromptSubmit", `{"session_id":"s","prompt":"p","hook_event_name":"UserPromptSubmit","permission_mode":"default"}`, ""},
		{Codex, "Stop", `{"session_id":"s","turn_id":"t","transcript_path":null,"last_assistant_message":null,"stop_hook_active":true,"hook_event_name":"Stop"}`, ""},
		{Gemini, "AfterAgent", `{"session_id":"s","prompt":"p","prompt_response":"r","stop_hook_active":false}`, ""},
		{Claude, "UserPromptSubmit", `{"session_id":"s","prompt":"  "}`, "prompt is missing"},
		{Claude, "Stop", `{"prompt":"p"}`, "session_id is missing"},
		{Claude, "Stop", `{"session_id":"s","hook_event_name":"UserPromptSubmit"}`, "is for event"},
		{Claude, "Stop", `{"session_id":5}`, "session_id must be a string"},
		{Claude, "Stop", `{"session_id":"s","stop_hook_active":"yes"}`, "must be a boolean"},
		{Claude, "Stop", `{"session_id":`, "malformed JSON"},
		{Claude, "Stop", ``, "not a JSON object"},
		{Gemini, "UserPromptSubmit", `{"session_id":"s","prompt":"p"}`, "unknown hook event"},
	}
	for _, c := range cases {
		in, _, err := DecodeInput(c.host, c.event, strings.NewReader(c.json))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s %s: %v", c.host, c.event, c.json, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s %s: error %v, want %q", c.host, c.event, c.json, err, c.want)
		}
		if c.host == Codex && err == nil && !in.StopHookActive {
			t.Error("stop_hook_active lost")
		}
	}
}

func TestBudgets(t *testing.T) {
	if got := EstimateTokens("abcdef"); got != 2 {
		t.Errorf("6 ASCII chars = %d tokens, want 2", got)
	}
	cjk := strings.Repeat("数据竞争", 400) // 1,600 characters
	if EstimateTokens(cjk) != 3200 || Codex.Fits(cjk) {
		t.Errorf("1,600 CJK characters: %d tokens, fits %v; want 3,200 and not fitting", EstimateTokens(cjk), Codex.Fits(cjk))
	}
	if !Claude.Fits(strings.Repeat("é", 9000)) || Claude.Fits(strings.Repeat("a", 9001)) {
		t.Error("Claude's budget is 9,000 characters")
	}
	out, err := PromptOutput(Gemini, "BeforeAgent", "cite [QA_REF <qa_id>] & go")
	if err != nil || strings.ContainsAny(string(out), "<>") || !strings.Contains(string(out), "‹qa_id›") || !strings.Contains(string(out), "&") {
		t.Errorf("gemini output %s %v", out, err)
	}
	if out, _ := PromptOutput(Claude, "UserPromptSubmit", "  "); out != nil {
		t.Errorf("an empty block gave output %q", out)
	}
}

func TestStatesTakeOnce(t *testing.T) {
	s := NewStates(filepath.Join(t.TempDir(), "turns"))
	st := TurnState{Host: Claude, SessionID: "s", RunID: "run-1", Shown: []string{"qa_1"}}
	if err := s.Save(st); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, ok, err := s.Take(Claude, "s", "")
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				taken++
				mu.Unlock()
				if got.RunID != "run-1" {
					t.Errorf("run id %q", got.RunID)
				}
			}
		}()
	}
	wg.Wait()
	if taken != 1 {
		t.Errorf("the turn was taken %d times, want once", taken)
	}
	// Another session's state is its own.
	_ = s.Save(TurnState{Host: Codex, SessionID: "s", TurnID: "t1", RunID: "run-2"})
	if _, ok, _ := s.Take(Codex, "s", "t2"); ok {
		t.Error("took another turn's state")
	}
	if _, ok, _ := s.Take(Claude, "s", "t1"); ok {
		t.Error("took another host's state")
	}
}

func TestStatesPrune(t *testing.T) {
	s := NewStates(t.TempDir())
	s.max = 5
	for i := range 12 {
		if err := s.Save(TurnState{Host: Claude, SessionID: "s" + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	old := TurnState{Host: Claude, SessionID: "old", Created: time.Now().Add(-48 * time.Hour)}
	_ = s.Save(old)
	if _, ok, _ := s.Take(Claude, "old", ""); ok {
		t.Error("an expired state was taken")
	}
	if err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(s.dir)
	if len(ents) != 5 {
		t.Errorf("%d states after pruning, want 5", len(ents))
	}
}

func TestOrderedJSONRoundTrip(t *testing.T) {
	src := "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null,\n    {}\n  ],\n  \"s\": \"<tag> & \\\"q\\\" \\u0001 é\",\n  \"e\": []\n}"
	o, err := parseObject([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(encode(o, detectIndent([]byte(src)))); got != src {
		t.Errorf("round trip:\n%s\nwant\n%s", got, src)
	}
	for _, bad := range []string{"[1]", "{} {}", "{", `{"a":}`} {
		if _, err := parseObject([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCommandRecognition(t *testing.T) {
	for cmd, want := range map[string]bool{
		"/usr/local/bin/memex hook claude Stop":          true,
		"memex hook gemini AfterAgent":                   true,
		"'/Users/a b/memex' hook codex UserPromptSubmit": true,
		"/opt/other/memex-wrapper hook claude Stop":      false,
		"notify-send done":                               false,
		"memex hook claude Stop; rm -rf /":               false,
	} {
		if _, _, _, ok := parseOurs(cmd); ok != want {
			t.Errorf("%q recognised %v, want %v", cmd, ok, want)
		}
	}
	if c := Command("/Users/a b/memex", Claude, "Stop"); c != "'/Users/a b/memex' hook claude Stop" {
		t.Errorf("Command = %q", c)
	}
}

func TestSessionEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env")
	id := `s-1 it's "$(rm -rf x)"`
	if err := SessionEnv(path, id); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", `. "$0" && printf %s "$MEMEX_SESSION"`, path).Output()
	if err != nil || string(out) != id {
		t.Errorf("sourced MEMEX_SESSION = %q (%v), want %q", out, err, id)
	}
	for _, bad := range []string{"", "a\nb", "a\x00"} {
		if err := SessionEnv(path, bad); err == nil {
			t.Errorf("SessionEnv(%q): no error", bad)
		}
	}
}
