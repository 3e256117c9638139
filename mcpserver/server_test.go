package mcpserver_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/mcpserver"
	"github.com/memex-dev/memex/plugins/embedded"
)

func connect(t *testing.T) (*mcp.ClientSession, *embedded.Store) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "memex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := mcpserver.New(store, mcpserver.Config{ProjectID: "p", Engine: engine.DefaultConfig()},
		mcpserver.WithEngineOptions(engine.WithRand(rand.New(rand.NewPCG(1, 1))))) // a fixed probation draw
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, store
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
	}
	return res
}

// TestToolsOverTheSDKClient lists the tools and calls each through the
// SDK's own client: a candidate recorded, found, shown in the gatekeeper's
// block with its receipt, validated, counted in the stats.
func TestToolsOverTheSDKClient(t *testing.T) {
	cs, store := connect(t)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if len(tl.Description) < 40 || tl.InputSchema == nil {
			t.Errorf("%s: description %q, schema %v", tl.Name, tl.Description, tl.InputSchema)
		}
	}
	if got := strings.Join(names, ","); got != "memex_memory_block,memex_record_candidate,memex_search,memex_stats,memex_validate" {
		t.Errorf("tools = %s", got)
	}

	const secret = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	var cand mcpserver.CandidateOutput
	call(t, cs, "memex_record_candidate", map[string]any{
		"question": "how do I fix the data race on the cache map?",
		"answer":   "Guard every access to the map with a sync.Mutex, then rerun go test -race ./... (token " + secret + ")",
		"tags":     []string{"go"},
	}, &cand)
	if cand.QAID == "" || cand.Redacted != 1 {
		t.Fatalf("candidate: %+v", cand)
	}
	rec, err := store.Get(t.Context(), "p", cand.QAID)
	if err != nil || strings.Contains(rec.Answer, secret) {
		t.Fatalf("stored %+v, %v: the secret must not be stored", rec.Answer, err)
	}

	var found mcpserver.SearchOutput
	call(t, cs, "memex_search", map[string]any{"query": "data race in the cache map"}, &found)
	if len(found.Matches) != 1 || found.Matches[0].QAID != cand.QAID {
		t.Fatalf("search: %+v", found)
	}

	var block mcpserver.BlockOutput
	call(t, cs, "memex_memory_block", map[string]any{"query": "go test -race reports a data race in the cache map"}, &block)
	if !strings.Contains(block.Block, "[QA_REF "+cand.QAID+"]") || len(block.Items) != 1 || !block.Items[0].Probation {
		t.Errorf("block: %+v; want the candidate on probation", block)
	}

	var v mcpserver.ValidateOutput
	call(t, cs, "memex_validate", map[string]any{"qa_id": cand.QAID, "result": "pass", "strength": "medium", "receipt_id": found.Matches[0].ReceiptID}, &v)
	if v.QAID != cand.QAID || v.Trust <= 0 {
		t.Errorf("validate: %+v", v)
	}

	var stats core.ProjectStats
	call(t, cs, "memex_stats", map[string]any{}, &stats)
	if stats.Total != 1 {
		t.Errorf("stats: %+v", stats)
	}

	// Bad calls are tool errors, not crashes.
	for name, args := range map[string]map[string]any{
		"memex_validate":         {"qa_id": cand.QAID, "result": "maybe"},
		"memex_search":           {"query": " "},
		"memex_record_candidate": {"question": "q"},
	} {
		if res := call(t, cs, name, args, nil); !res.IsError {
			t.Errorf("%s %v: no tool error", name, args)
		}
	}
	if res := call(t, cs, "memex_validate", map[string]any{"qa_id": "qa_missing", "result": "strong"}, nil); !res.IsError {
		t.Error("a bad result was accepted")
	}
}
