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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpToolCalls calls each tool once, in an order where each call has what
// it needs; {qa} is replaced by the candidate's id.
var mcpToolCalls = []struct {
	tool string
	args map[string]any
}{
	{"memex_note_put", map[string]any{"scope": "project", "key": "race", "text": "run go test -race before every commit"}},
	{"memex_note_get", map[string]any{"scope": "project", "key": "race"}},
	{"memex_note_search", map[string]any{"query": "race"}},
	{"memex_record_candidate", map[string]any{"question": "how do I fix the data race on the cache map?", "answer": "Guard every access to the map with a sync.Mutex, then rerun go test -race ./cache/..."}},
	{"memex_search", map[string]any{"query": "data race cache map"}},
	{"memex_memory_block", map[string]any{"query": "go test -race reports a data race in the cache map"}},
	{"memex_validate", map[string]any{"qa_id": "{qa}", "result": "pass"}},
	{"memex_stats", map[string]any{}},
	{"memex_note_delete", map[string]any{"scope": "project", "key": "race"}},
}

// TestMCPStdioSDKClient drives `memex mcp` as a process over stdio with the
// SDK's own client: list the tools, call each.
func TestMCPStdioSDKClient(t *testing.T) {
	e := newHostEnv(t)
	cmd := exec.Command(memexBinary(t), "mcp", "--store", filepath.Join(e.home, "memex.db"), "--project", "mcp-test")
	cmd.Dir, cmd.Env = e.project, e.env
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memex-test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != len(mcpToolCalls) {
		t.Errorf("%d tools, want %d", len(tools.Tools), len(mcpToolCalls))
	}
	qa := ""
	for _, c := range mcpToolCalls {
		args := map[string]any{}
		for k, v := range c.args {
			if v == "{qa}" {
				v = qa
			}
			args[k] = v
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if c.tool == "memex_record_candidate" {
			var out struct {
				QAID string `json:"qa_id"`
			}
			_ = json.Unmarshal(b, &out)
			qa = out.QAID
		}
		if c.tool == "memex_stats" && !strings.Contains(string(b), `"total":1`) {
			t.Errorf("stats: %s", b)
		}
	}
}

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
