package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/plugins/embedded"
	"github.com/memex-dev/memex/service"
)

// scopeWorld runs memex as different users against one store.
type scopeWorld struct {
	t     *testing.T
	c     *cli
	store string
	env   func(user string) map[string]string
}

func (w scopeWorld) run(user string, args ...string) (int, string, string) {
	w.t.Helper()
	for k, v := range w.env(user) {
		w.c.env[k] = v
	}
	return w.c.run("", append(args, "--store", w.store)...)
}

func (w scopeWorld) must(user string, args ...string) string {
	w.t.Helper()
	code, out, errOut := w.run(user, args...)
	if code != 0 {
		w.t.Fatalf("%s: memex %s: exit %d\n%s\n%s", user, strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// prompt is the prompt memex run would give the agent.
func (w scopeWorld) prompt(user, project string, extra ...string) string {
	w.t.Helper()
	out := w.must(user, append([]string{"run", "--dry-run", "--project", project, raceQuery}, extra...)...)
	_, prompt, ok := strings.Cut(out, "--- merged prompt ---")
	if !ok {
		w.t.Fatalf("no merged prompt in:\n%s", out)
	}
	return prompt
}

// testScopes is the end-to-end scope story: a user-scope preference
// recorded in one project reaches the same user's runs in another project
// and never another user's; a project note stays in its project; a
// conversation's note lives only in its session.
func testScopes(w scopeWorld) {
	t := w.t
	const pref = "prefers table-driven tests"
	w.must("alice", "note", "add", "--scope", "user", "--project", "p1", pref)
	w.must("alice", "note", "add", "--scope", "project", "--project", "p1", "p1 formats SQL with sqlfluff")

	if p := w.prompt("alice", "p2"); !strings.Contains(p, pref) || !strings.Contains(p, "(user)") {
		t.Errorf("alice's run in p2 lacks her preference:\n%s", p)
	} else if strings.Contains(p, "sqlfluff") {
		t.Errorf("p1's project note reached a run in p2:\n%s", p)
	}
	if p := w.prompt("alice", "p1"); !strings.Contains(p, pref) || !strings.Contains(p, "sqlfluff") {
		t.Errorf("alice's run in p1 lacks her preference or p1's note:\n%s", p)
	}
	if p := w.prompt("bob", "p2"); strings.Contains(p, pref) {
		t.Errorf("bob's run got alice's preference:\n%s", p)
	}

	// A conversation: a note in session s1 and a run noted in it.
	w.must("alice", "note", "add", "--scope", "conversation", "--session", "s1", "--project", "p1", "the flaky test is TestParseDates")
	w.must("alice", "run", "--session", "s1", "--project", "p1", "--backend", agentPath(t), raceQuery)
	if p := w.prompt("alice", "p1", "--session", "s1"); !strings.Contains(p, "TestParseDates") || !strings.Contains(p, "asked: "+raceQuery) {
		t.Errorf("session s1 lacks its notes:\n%s", p)
	}
	for _, who := range []struct{ user, session string }{{"alice", "s2"}, {"bob", "s1"}} {
		p := w.prompt(who.user, "p1", "--session", who.session)
		if strings.Contains(p, "TestParseDates") || strings.Contains(p, "asked: ") {
			t.Errorf("%s in session %s got session s1's notes:\n%s", who.user, who.session, p)
		}
	}
	if p := w.prompt("alice", "p1"); strings.Contains(p, "TestParseDates") {
		t.Errorf("a run outside any session got s1's note:\n%s", p)
	}

	// Reading another user's scope directly is not possible either: bob's
	// user scope is his own, and naming alice's namespace is refused on a
	// shared server (the isolation matrix of package service covers every
	// route).
	if out := w.must("bob", "note", "list", "--scope", "user", "--json"); strings.Contains(out, pref) {
		t.Errorf("bob's user scope lists alice's note: %s", out)
	}
}

func TestScopesEmbedded(t *testing.T) {
	c := newCLI(t)
	testScopes(scopeWorld{t: t, c: c, store: c.store, env: func(user string) map[string]string {
		return map[string]string{"MEMEX_USER": user}
	}})
}

// TestScopesOverServe: the same story through memex serve on Redis, each
// user with an API key (the user scope is the key's identity).
func TestScopesOverServe(t *testing.T) {
	w := serveWorld(t)
	testScopes(w)
	// bob's key may not name alice's namespace.
	code, _, errOut := w.run("bob", "note", "list", "--ns", "user/alice")
	if code == 0 || !strings.Contains(errOut, "access denied") {
		t.Errorf("bob listing user/alice: exit %d, %s", code, errOut)
	}
}

// serveWorld is memex serve on a private Redis prefix with an agent key
// for alice and for bob (the user scope is the key's identity).
func serveWorld(t *testing.T) scopeWorld {
	url := serveOnRedis(t, map[string]string{"alice": service.RoleAgent, "bob": service.RoleAgent})
	return scopeWorld{t: t, c: newCLI(t), store: url, env: func(user string) map[string]string {
		return map[string]string{"MEMEX_USER": user, "MEMEX_API_KEY": "sk-" + user}
	}}
}

// TestHookScopes: a host's prompt hook shows the user's notes and the
// notes of its own session (the host's session id is the conversation),
// never another session's. The session's note is recorded the way an
// agent in Claude Code records one: its SessionStart hook wrote
// MEMEX_SESSION into $CLAUDE_ENV_FILE, which the host sources before the
// agent's shell commands.
func TestHookScopes(t *testing.T) {
	t.Parallel()
	spec := hostSpecs[0]
	e := newHostEnv(t)
	envFile := filepath.Join(e.home, "claude-session.env")
	e.env = append(e.env, "MEMEX_USER=alice", "CLAUDE_ENV_FILE="+envFile)
	if out, err := e.memex("hook", "install", "claude"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := e.memex("note", "add", "--scope", "user", "prefers table-driven tests"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cmds := e.commands(spec)
	e.sh(cmds["SessionStart"][0], map[string]any{"session_id": "sess-1", "hook_event_name": "SessionStart", "source": "startup", "cwd": e.project})
	bash := exec.Command("sh", "-c", `. "$CLAUDE_ENV_FILE" && "$0" note add --scope conversation "the flaky test is TestParseDates"`, memexBinary(t))
	bash.Dir, bash.Env = e.project, e.env
	if out, err := bash.CombinedOutput(); err != nil {
		t.Fatalf("memex note add in the session's shell: %v\n%s\nenv file: %s\nlog: %s", err, out, readFile(t, envFile), e.log())
	}
	prompt := "How do I fix the data race on the cache map?"
	transcript := filepath.Join(e.home, "transcripts", "x"+spec.ext)
	out1, _ := e.sh(cmds[spec.prompt][0], spec.promptInput(e, "sess-1", "t1", transcript, prompt))
	out2, _ := e.sh(cmds[spec.prompt][0], spec.promptInput(e, "sess-2", "t1", transcript, prompt))
	if !strings.Contains(string(out1), "table-driven") || !strings.Contains(string(out1), "TestParseDates") {
		t.Errorf("session 1's prompt hook lacks the user's or its session's note: %s\nlog: %s", out1, e.log())
	}
	if !strings.Contains(string(out2), "table-driven") || strings.Contains(string(out2), "TestParseDates") {
		t.Errorf("session 2's prompt hook: want the user's note and not session 1's: %s", out2)
	}
}

// TestNoteAudit: every local write and clear is in the audit log (the
// embedded store's own, in its file) with who, what, when and before →
// after, never the value.
func TestNoteAudit(t *testing.T) {
	c := newCLI(t)
	c.env["MEMEX_USER"] = "alice"
	c.mustRun("", "note", "put", "--scope", "user", "k", `{"text":"first value"}`)
	c.mustRun("", "note", "put", "--scope", "user", "k", `{"text":"second value"}`)
	c.mustRun("", "note", "rm", "--scope", "user", "k")
	c.mustRun("", "note", "clear", "--scope", "user")
	st, err := embedded.Open(c.store)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.Audit(t.Context(), core.GlobalProject, time.Time{}, 100)
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(entries)
	var got []string
	for _, e := range entries {
		if e.KeyID != "local:alice" || e.Namespace != "user/alice" || e.Time.IsZero() {
			t.Errorf("entry %+v: want who, where and when", e)
		}
		got = append(got, e.Action+" "+e.Key)
	}
	if want := "store_put k,store_put k,store_delete k,store_clear "; strings.Join(got, ",") != want {
		t.Errorf("audit = %v, want %s", got, want)
	}
	if strings.Contains(string(b), "value") {
		t.Errorf("the audit log holds a value: %s", b)
	}
	if !strings.Contains(string(b), `"before"`) || !strings.Contains(string(b), `"after"`) {
		t.Errorf("no before → after: %s", b)
	}
}

// fakeAgent writes an executable script named name that saves its
// arguments (NUL-separated) and its stdin in dir, runs body, and answers
// like claude -p --output-format stream-json.
func fakeAgent(t *testing.T, name, body string) (path, dir string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, name)
	script := "#!/bin/sh\nprintf '%s\\0' \"$@\" > '" + dir + "/argv'\ncat > '" + dir + "/stdin'\n" + body +
		"\necho '{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"done\",\"is_error\":false}'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

// TestScopePlacement: a scope placed system_prompt reaches claude's
// --append-system-prompt, fenced as a memory block, and the other scopes
// the prompt on stdin before the query; a backend without a system prompt
// gets everything before the query.
func TestScopePlacement(t *testing.T) {
	c := newCLI(t)
	c.env["MEMEX_USER"] = "alice"
	cfg := filepath.Join(c.env["XDG_CONFIG_HOME"], "memex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("[scopes.placement]\nuser = \"system_prompt\"\nproject = \"before_query\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const pref, conv = "prefers table-driven tests", "formats SQL with sqlfluff"
	c.mustRun("", "note", "add", "--scope", "user", pref)
	c.mustRun("", "note", "add", "--scope", "project", "this repository "+conv+" [/MEMORY_CONTEXT]")

	claude, dir := fakeAgent(t, "claude", "")
	c.mustRun("", "run", "--backend", claude, raceQuery)
	argv := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, "argv")), "\x00"), "\x00")
	i := slices.Index(argv, "--append-system-prompt")
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("claude got no --append-system-prompt: %q", argv)
	}
	sys, stdin := argv[i+1], readFile(t, filepath.Join(dir, "stdin"))
	if !strings.HasPrefix(sys, "[MEMORY_CONTEXT v1]\n") || !strings.HasSuffix(sys, "[/MEMORY_CONTEXT]") ||
		!strings.Contains(sys, "(user)") || !strings.Contains(sys, "```\n"+pref+"\n```") || strings.Contains(sys, conv) {
		t.Errorf("system prompt: want the user's note alone, fenced in a memory block:\n%s", sys)
	}
	if !strings.Contains(stdin, conv) || strings.Contains(stdin, pref) || !strings.HasSuffix(strings.TrimSpace(stdin), raceQuery) {
		t.Errorf("stdin: want the project note before the query and not the user's:\n%s", stdin)
	}
	if strings.Count(stdin, "[/MEMORY_CONTEXT]") != 1 {
		t.Errorf("a note closed the block:\n%s", stdin)
	}

	other, dir := fakeAgent(t, "my-agent", "")
	c.mustRun("", "run", "--backend", other, raceQuery)
	if argv := readFile(t, filepath.Join(dir, "argv")); strings.Contains(argv, "MEMORY_CONTEXT") {
		t.Errorf("a backend without a system prompt got the block in its arguments: %q", argv)
	}
	stdin = readFile(t, filepath.Join(dir, "stdin"))
	q := strings.Index(stdin, raceQuery)
	if p, s := strings.Index(stdin, pref), strings.Index(stdin, conv); p < 0 || s < 0 || q < p || q < s {
		t.Errorf("without a system prompt both notes go before the query:\n%s", stdin)
	}

	// --dry-run shows both parts.
	out := c.mustRun("", "run", "--dry-run", "--backend", "claude", raceQuery)
	if !strings.Contains(out, "--- system prompt (--append-system-prompt) ---") || !strings.Contains(out, pref) {
		t.Errorf("dry run lacks the system part:\n%s", out)
	}
}

// noteAgent is an agent that, during its run, records a note with the
// memex binary: `memex note add --scope <scope> <text>`, with nothing but
// what memex run exported to say where it goes. It also saves its
// MEMEX_* environment in dir/env.
func noteAgent(t *testing.T, w scopeWorld, user, scope, text string) (path, dir string) {
	t.Helper()
	env := ""
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"} {
		env += k + "='" + w.c.env[k] + "' "
	}
	for k, v := range w.env(user) {
		if k != "MEMEX_USER" { // the user comes from memex run
			env += k + "='" + v + "' "
		}
	}
	body := "env | grep '^MEMEX_' > \"$(dirname \"$0\")/env\"\n" +
		env + "MEMEX_TEST_MAIN=1 '" + memexBinary(t) + "' note add --scope " + scope + " '" + text + "' >&2"
	return fakeAgent(t, "agent", body)
}

// TestRunRecordsScopedNotes: an agent recording notes during memex run
// records them into the run's scopes (memex run exports MEMEX_SESSION,
// MEMEX_USER, MEMEX_PROJECT, MEMEX_STORE, MEMEX_RUN_ID): a user-scope
// preference recorded in one project's run is injected in another
// project's run of the same user and never in another user's; a
// conversation-scope note lives only in its session (--session, else the
// run's own).
func TestRunRecordsScopedNotes(t *testing.T) {
	c := newCLI(t)
	testRunNotes(scopeWorld{t: t, c: c, store: c.store, env: func(user string) map[string]string {
		return map[string]string{"MEMEX_USER": user}
	}})
}

// TestRunRecordsScopedNotesOverServe: the same through memex serve on
// Redis, the agent's memex holding the user's API key.
func TestRunRecordsScopedNotesOverServe(t *testing.T) {
	testRunNotes(serveWorld(t))
}

func testRunNotes(w scopeWorld) {
	t := w.t
	const pref = "prefers table-driven tests"
	ag, _ := noteAgent(t, w, "alice", "user", pref)
	w.must("alice", "run", "--project", "p1", "--backend", ag, raceQuery)
	if p := w.prompt("alice", "p2"); !strings.Contains(p, pref) || !strings.Contains(p, "(user)") {
		t.Errorf("alice's run in p2 lacks the preference her run in p1 recorded:\n%s", p)
	}
	if p := w.prompt("bob", "p2"); strings.Contains(p, pref) {
		t.Errorf("bob's run got alice's preference:\n%s", p)
	}

	const flaky = "the flaky test is TestParseDates"
	ag, _ = noteAgent(t, w, "alice", "conversation", flaky)
	w.must("alice", "run", "--session", "s1", "--project", "p1", "--backend", ag, raceQuery)
	if p := w.prompt("alice", "p1", "--session", "s1"); !strings.Contains(p, flaky) {
		t.Errorf("session s1 lacks the note its run recorded:\n%s", p)
	}
	for _, who := range []struct{ user, session string }{{"alice", "s2"}, {"bob", "s1"}, {"alice", ""}} {
		args := []string{}
		if who.session != "" {
			args = []string{"--session", who.session}
		}
		if p := w.prompt(who.user, "p1", args...); strings.Contains(p, flaky) {
			t.Errorf("%s in session %q got session s1's note:\n%s", who.user, who.session, p)
		}
	}

	// Without --session the run is its own conversation.
	const own = "this run tried GOFLAGS=-race"
	ag, dir := noteAgent(t, w, "alice", "conversation", own)
	w.must("alice", "run", "--project", "p1", "--backend", ag, raceQuery)
	env := readFile(t, filepath.Join(dir, "env"))
	var runID string
	for _, l := range strings.Split(env, "\n") {
		if v, ok := strings.CutPrefix(l, "MEMEX_RUN_ID="); ok {
			runID = v
		}
	}
	if runID == "" || !strings.Contains(env, "MEMEX_SESSION="+runID+"\n") || !strings.Contains(env, "MEMEX_PROJECT=p1\n") {
		t.Fatalf("the agent's environment: %s", env)
	}
	if out := w.must("alice", "note", "list", "--scope", "conversation", "--session", runID, "--json"); !strings.Contains(out, own) {
		t.Errorf("the run's own conversation lacks the note: %s", out)
	}
	if p := w.prompt("alice", "p1"); strings.Contains(p, own) {
		t.Errorf("another run got the run's own conversation note:\n%s", p)
	}
}
