package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
