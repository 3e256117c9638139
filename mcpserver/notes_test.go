package mcpserver_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/mcpserver"
	"github.com/memex-dev/memex/plugins/embedded"
)

// TestNoteTools: put, get, search and delete a scoped note through the
// SDK's client; a scope without its id is a tool error naming it.
func TestNoteTools(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "memex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := mcpserver.New(store, mcpserver.Config{ProjectID: "p"},
		mcpserver.WithNotes(store.Items(), core.ScopeContext{User: "alice"}))
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

	var put mcpserver.NoteOutput
	call(t, cs, "memex_note_put", map[string]any{"scope": "user", "key": "tests", "text": "prefers table-driven tests"}, &put)
	if !put.Found || put.Note.Key != "tests" || put.Note.Scope != "user" {
		t.Fatalf("put: %+v", put)
	}
	if it, ok, _ := store.Items().Get(t.Context(), core.Namespace{"user", "alice"}, "tests"); !ok || !strings.Contains(string(it.Value), "table-driven") {
		t.Fatalf("the note is not in user/alice: %s", it.Value)
	}
	var got mcpserver.NoteOutput
	call(t, cs, "memex_note_get", map[string]any{"scope": "user", "key": "tests"}, &got)
	if got.Note == nil || got.Note.Text != "prefers table-driven tests" {
		t.Fatalf("get: %+v", got)
	}
	var found mcpserver.NotesOutput
	call(t, cs, "memex_note_search", map[string]any{"scope": "user", "query": "table tests"}, &found)
	if len(found.Notes) != 1 || found.Notes[0].Score <= 0 {
		t.Fatalf("search: %+v", found)
	}
	call(t, cs, "memex_note_search", map[string]any{"query": "table tests"}, &found)
	if len(found.Notes) != 0 {
		t.Errorf("the project scope holds the user's note: %+v", found)
	}
	if res := call(t, cs, "memex_note_put", map[string]any{"scope": "conversation", "text": "x"}, nil); !res.IsError {
		t.Errorf("a conversation note without a session id succeeded")
	}
	var del mcpserver.NoteOutput
	call(t, cs, "memex_note_delete", map[string]any{"scope": "user", "key": "tests"}, &del)
	call(t, cs, "memex_note_get", map[string]any{"scope": "user", "key": "tests"}, &got)
	if !del.Found || got.Found {
		t.Errorf("delete: %+v, then get: %+v", del, got)
	}
}
