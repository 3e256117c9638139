package redistest

import (
	"strings"
	"testing"
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
