package main

import (
	"strings"
	"testing"
)

func TestUIServesLoopbackOnly(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("", "ui", "--addr", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(stderr, "not a loopback address") {
		t.Fatalf("ui --addr 0.0.0.0:0: exit %d, stderr %q; want a usage error", code, stderr)
	}
	code, stdout, _ := c.run("", "ui", "--help")
	if code != 0 || !strings.Contains(stdout, "memex ui") || !strings.Contains(stdout, "--addr") {
		t.Fatalf("ui --help: exit %d, %q", code, stdout)
	}
}
