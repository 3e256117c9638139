//go:build integration

// The integration tier (docs/TESTING.md): memex mcp driven by the MCP
// Inspector's CLI, a client memex does not write (Node.js).

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMCPInspector drives `memex mcp` with the MCP Inspector's CLI (npm
// @modelcontextprotocol/inspector-cli, pinned in tools/mcp-inspector): a
// client nobody here wrote. It is skipped only where Node is missing, and
// never under CI=true.
func TestMCPInspector(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed; CI must run the MCP Inspector test (apt-get install nodejs npm)")
		}
		t.Skip("node is not installed: the MCP Inspector test needs Node.js")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "tools", "mcp-inspector")
	build := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build")
	if _, err := os.Stat(filepath.Join(build, "index.js")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatal("node is installed but npm is not: cannot install the MCP Inspector (make mcp-inspector)")
		}
		ci := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		ci.Dir = dir
		if out, err := ci.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in tools/mcp-inspector: %v\n%s", err, out)
		}
	}
	e := newHostEnv(t)
	store := filepath.Join(e.home, "memex.db")
	inspect := func(args ...string) map[string]any {
		t.Helper()
		full := append([]string{"index.js", memexBinary(t), "mcp", "--store", store, "--project", "mcp-test"}, args...)
		cmd := exec.Command(node, full...)
		// The CLI finds its own package.json relative to the working
		// directory: run it from its build directory.
		cmd.Dir, cmd.Env = build, e.env
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("inspector %v: timed out", args)
		}
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		s := string(out)
		if i := strings.Index(s, "{"); i > 0 {
			s = s[i:] // a deprecation notice may come first
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return v
	}
	list := inspect("--method", "tools/list")
	tools, _ := list["tools"].([]any)
	if len(tools) != len(mcpToolCalls) {
		t.Fatalf("inspector lists %d tools: %v", len(tools), list)
	}
	qa := ""
	for _, c := range mcpToolCalls {
		args := []string{"--method", "tools/call", "--tool-name", c.tool}
		for k, v := range c.args {
			if v == "{qa}" {
				v = qa
			}
			args = append(args, "--tool-arg", k+"="+v.(string))
		}
		res := inspect(args...)
		if res["isError"] == true {
			t.Fatalf("%s: %v", c.tool, res)
		}
		sc, _ := res["structuredContent"].(map[string]any)
		if c.tool == "memex_record_candidate" {
			qa, _ = sc["qa_id"].(string)
		}
		if sc == nil {
			t.Errorf("%s: no structured content: %v", c.tool, res)
		}
	}
}
