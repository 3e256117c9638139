package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
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
	st, err := redisstore.Open(t.Context(), redistest.URL(t), redisstore.WithPrefix(redistest.Prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := service.DefaultConfig()
	cfg.ExpiryInterval = -1
	cfg.RequireReceipts = false
	for _, id := range []string{"alice", "bob"} {
		cfg.Keys = append(cfg.Keys, service.Key{ID: id, SecretSHA256: service.HashSecret("sk-" + id), Role: service.RoleAgent, Projects: []string{"*"}})
	}
	srv, err := service.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	w := scopeWorld{t: t, c: newCLI(t), store: ts.URL, env: func(user string) map[string]string {
		return map[string]string{"MEMEX_USER": user, "MEMEX_API_KEY": "sk-" + user}
	}}
	testScopes(w)
	// bob's key may not name alice's namespace.
	code, _, errOut := w.run("bob", "note", "list", "--ns", "user/alice")
	if code == 0 || !strings.Contains(errOut, "access denied") {
		t.Errorf("bob listing user/alice: exit %d, %s", code, errOut)
	}
}
