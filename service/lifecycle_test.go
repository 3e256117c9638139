package service

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/plugins/embedded"
)

// countingExpirer counts the expiry job's runs.
type countingExpirer struct {
	*embedded.Store
	runs atomic.Int64
}

func (c *countingExpirer) Expire(ctx context.Context, now time.Time, batch int) (int, error) {
	c.runs.Add(1)
	return c.Store.Expire(ctx, now, batch)
}

func TestServeRunsExpiryAndShutsDown(t *testing.T) {
	store := &countingExpirer{Store: newEmbedded(t)}
	cfg := defaultTestConfig()
	cfg.ExpiryInterval = 10 * time.Millisecond
	srv, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	res, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("healthz %d", res.StatusCode)
	}
	deadline := time.Now().Add(5 * time.Second)
	for store.runs.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if store.runs.Load() < 2 {
		t.Fatalf("expiry ran %d times, want ≥ 2", store.runs.Load())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	// Serve returns after the expiry job has (TestRunExpiryEveryInterval
	// pins that the job stops with its context).
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

func TestConfigValidate(t *testing.T) {
	good := Key{ID: "k", SecretSHA256: HashSecret("s"), Role: RoleAgent, Projects: []string{"acme-*"}}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"no keys", func(c *Config) { c.Keys = nil }, "no API keys"},
		{"no keys but insecure", func(c *Config) { c.Keys, c.InsecureLocal = nil, true }, ""},
		{"no id", func(c *Config) { c.Keys[0].ID = "" }, "id is required"},
		{"dup id", func(c *Config) { c.Keys = append(c.Keys, c.Keys[0]) }, "duplicate id"},
		{"bad hash", func(c *Config) { c.Keys[0].SecretSHA256 = "abc" }, "secret_sha256"},
		{"bad role", func(c *Config) { c.Keys[0].Role = "root" }, "role"},
		{"no projects", func(c *Config) { c.Keys[0].Projects = nil }, "projects is required"},
		{"bad pattern", func(c *Config) { c.Keys[0].Projects = []string{"ACME/*"} }, "pattern"},
		{"bad quota pattern", func(c *Config) { c.ProjectQuotas = map[string]Quota{"[": {}} }, "pattern"},
		{"negative quota", func(c *Config) { c.Quota.MaxQAs = -1 }, "≥ 0"},
		{"negative rate", func(c *Config) { c.RateLimit = -1 }, "rate_limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Keys = []Key{good}
			tc.mod(&cfg)
			err := cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), HashSecret("s")) {
				t.Errorf("error holds the hash: %v", err)
			}
		})
	}
}

func TestQuotaFor(t *testing.T) {
	cfg := Config{Quota: Quota{MaxQAs: 1}, ProjectQuotas: map[string]Quota{"acme-*": {MaxQAs: 2}, "acme-big": {MaxQAs: 3}}}
	for _, tc := range []struct {
		project string
		want    int
	}{{"other", 1}, {"acme-x", 2}, {"acme-big", 3}} {
		if got := cfg.quotaFor(tc.project).MaxQAs; got != tc.want {
			t.Errorf("quotaFor(%s) = %d, want %d", tc.project, got, tc.want)
		}
	}
}

func TestNewKey(t *testing.T) {
	s1, h1, err := NewKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, _ := NewKey(nil)
	if s1 == s2 || !strings.HasPrefix(s1, "mx_") || len(s1) < 40 {
		t.Errorf("secrets %q %q", s1, s2)
	}
	if h1 != HashSecret(s1) || len(h1) != 64 {
		t.Errorf("hash %q", h1)
	}
	// Deterministic with a given source.
	a, _, _ := NewKey(bytes.NewReader(make([]byte, 32)))
	b, _, _ := NewKey(bytes.NewReader(make([]byte, 32)))
	if a != b {
		t.Error("NewKey ignores its random source")
	}
	if _, _, err := NewKey(bytes.NewReader(nil)); err == nil {
		t.Error("NewKey with an empty source succeeded")
	}
}

func TestRecoverPanic(t *testing.T) {
	e := newEnvFor(t, panicStore{})
	r := e.must(500, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "x"})
	if r.apiErr(t).Code != "internal" {
		t.Errorf("body %s", r.body)
	}
}

type panicStore struct{ errStore }

func (panicStore) Search(context.Context, core.SearchRequest) ([]core.Match, error) { panic("boom") }

func TestSearchReceipt(t *testing.T) {
	for in, want := range map[string]string{"rcpt_ab": "rcpt_ab", "rcpt_ab.3": "rcpt_ab", "rcpt_ab.12": "rcpt_ab", "a.b": "a.b", "x.": "x.", ".1": ".1", "": ""} {
		if got := searchReceipt(in); got != want {
			t.Errorf("searchReceipt(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRunExpiryEveryInterval: the expiry job runs once per interval and
// stops with its context (fake time: exact counts, whatever the load).
func TestRunExpiryEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &countingExpirer{Store: newEmbedded(t)}
		cfg := defaultTestConfig()
		cfg.ExpiryInterval = time.Minute
		srv, err := New(store, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			srv.RunExpiry(ctx)
			close(done)
		}()
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		if n := store.runs.Load(); n != 3 {
			t.Errorf("expiry ran %d times in 3 intervals, want 3", n)
		}
		cancel()
		<-done
		stopped := store.runs.Load()
		time.Sleep(10 * time.Minute)
		if n := store.runs.Load(); n != stopped {
			t.Errorf("expiry ran %d more times after its context ended", n-stopped)
		}
	})
}
