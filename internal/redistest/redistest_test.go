package redistest

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestServerKillRestart: a private AOF server keeps an acknowledged write
// across kill -9 and restart, on the same address.
func TestServerKillRestart(t *testing.T) {
	s := StartServer(t, ServerOptions{AOF: true})
	if out, err := s.Cli("SET", "k", "v"); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("SET: %q %v", out, err)
	}
	addr := s.Addr()
	s.Kill()
	if s.Running() {
		t.Fatal("still running after Kill")
	}
	if _, err := s.Cli("PING"); err == nil {
		if out, _ := s.Cli("PING"); strings.Contains(out, "PONG") {
			t.Fatal("server answers after Kill")
		}
	}
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("address changed: %s → %s", addr, s.Addr())
	}
	if out, err := s.Cli("GET", "k"); err != nil || strings.TrimSpace(out) != "v" {
		t.Errorf("GET after restart: %q %v, want v", out, err)
	}
}

func TestUniquePrefix(t *testing.T) {
	a, b := UniquePrefix(t), UniquePrefix(t)
	if a == b || !strings.Contains(a, "TestUniquePrefix") {
		t.Errorf("prefixes %q, %q", a, b)
	}
}

// TestSharedURLDefault: without MEMEX_TEST_REDIS_URL the Redis tests use
// the machine's server instead of skipping.
func TestSharedURLDefault(t *testing.T) {
	t.Setenv(EnvURL, "")
	if got := sharedURL(); got != DefaultURL {
		t.Errorf("sharedURL() = %q with %s unset, want %q", got, EnvURL, DefaultURL)
	}
	t.Setenv(EnvURL, "redis://10.0.0.1:6390/2")
	if got := sharedURL(); got != "redis://10.0.0.1:6390/2" {
		t.Errorf("sharedURL() = %q, want the variable's URL", got)
	}
	t.Setenv(EnvURL, "off")
	if got := sharedURL(); got != "" {
		t.Errorf("sharedURL() = %q with %s=off, want none", got, EnvURL)
	}
}

// TestMissingRedisFailsOnCI runs URL against a port nothing listens on in a
// child test process: with CI=true the test fails (never skips); without,
// it skips and says why.
func TestMissingRedisFailsOnCI(t *testing.T) {
	if os.Getenv("MEMEX_REDISTEST_CHILD") == "1" {
		URL(t)
		t.Log("URL returned")
		return
	}
	port := freePort(t) // nothing listens on it
	for _, ci := range []string{"true", ""} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingRedisFailsOnCI$", "-test.v")
		cmd.Env = append(os.Environ(), "MEMEX_REDISTEST_CHILD=1", "CI="+ci, EnvURL+"=redis://127.0.0.1:"+strconv.Itoa(port)+"/0")
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "true" && (err == nil || !strings.Contains(string(out), "CI=true: Redis is required")):
			t.Errorf("CI=true, no Redis: err %v, output:\n%s\nwant a failure", err, out)
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "does not answer")):
			t.Errorf("no CI, no Redis: err %v, output:\n%s\nwant a skip that says why", err, out)
		}
	}
}

// TestPrefixCleanupWithPassword: Prefix's cleanup deletes every key under
// the prefix (more than one SCAN page) on a server with a password, for a
// URL with an empty username (redis://:pw@host) and with one, and leaves
// other keys alone; a failing cleanup's error does not contain the
// password.
func TestPrefixCleanupWithPassword(t *testing.T) {
	const password = "pw:with@odd/chars"
	s := StartServer(t, ServerOptions{Args: []string{"--requirepass", password}})
	admin := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: password})
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	if err := admin.Set(ctx, "other:key", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"", "default"} {
		raw := (&url.URL{Scheme: "redis", User: url.UserPassword(user, password), Host: s.Addr(), Path: "/0"}).String()
		t.Setenv(EnvURL, raw)
		var prefix string
		t.Run("user="+user, func(t *testing.T) {
			prefix = Prefix(t)
			pipe := admin.Pipeline()
			for i := range 1200 {
				pipe.Set(ctx, prefix+":k"+strconv.Itoa(i), "v", 0)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		})
		left, err := admin.Keys(ctx, escapeGlob(prefix)+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Errorf("user %q: %d keys under %s left after the test's cleanup", user, len(left), prefix)
		}
	}
	if n, err := admin.Exists(ctx, "other:key").Result(); err != nil || n != 1 {
		t.Errorf("key outside the prefix: exists %d %v, want kept", n, err)
	}
	wrong := (&url.URL{Scheme: "redis", User: url.UserPassword("", password+"x"), Host: s.Addr(), Path: "/0"}).String()
	malformed := (&url.URL{Scheme: "redis", User: url.UserPassword("", password), Host: s.Addr(), Path: "/notadb"}).String()
	for _, raw := range []string{wrong, malformed} {
		err := deletePrefix(raw, "t:none")
		if err == nil {
			t.Errorf("deletePrefix with a wrong password or database: no error")
			continue
		}
		if strings.Contains(err.Error(), "pw:with") || strings.Contains(err.Error(), url.QueryEscape(password)) {
			t.Errorf("deletePrefix error contains the password: %v", err)
		}
	}
}

// TestPrefixCleanupFailureFailsTheTest runs a child test whose Prefix
// cleanup cannot delete its keys (the URL's password is wrong: the server
// answers PING with NOAUTH, so URL accepts it): the child test fails, says
// why, and never prints the password.
func TestPrefixCleanupFailureFailsTheTest(t *testing.T) {
	if os.Getenv("MEMEX_REDISTEST_CHILD") == "cleanup" {
		t.Log("prefix", Prefix(t))
		return
	}
	const password = "right-pw-7f3a"
	s := StartServer(t, ServerOptions{Args: []string{"--requirepass", password}})
	wrong := (&url.URL{Scheme: "redis", User: url.UserPassword("", "wrong-pw-c21e"), Host: s.Addr(), Path: "/0"}).String()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrefixCleanupFailureFailsTheTest$", "-test.v")
	cmd.Env = append(os.Environ(), "MEMEX_REDISTEST_CHILD=cleanup", "CI=", EnvURL+"="+wrong)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), "left its keys") {
		t.Errorf("child test with a failing cleanup: err %v, output:\n%s\nwant a failure that says its keys were left", err, out)
	}
	if strings.Contains(string(out), "wrong-pw") || strings.Contains(string(out), password) {
		t.Errorf("child output carries a password:\n%s", out)
	}
}
