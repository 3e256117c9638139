package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memex-dev/memex/core"
)

// WithNotes adds the scoped-note tools (docs/SCOPES.md) over items, with
// the scopes resolved from sc (the project is Config.ProjectID). cmd/memex
// passes its namespaced store behind the policy and the redaction.
func WithNotes(items core.ItemStore, sc core.ScopeContext) Option {
	return func(s *Server) { s.items, s.scopes = items, sc }
}

// NotePutInput is memex_note_put's input.
type NotePutInput struct {
	Scope string `json:"scope,omitempty" jsonschema:"where the note lives: conversation, user, project (default) or global"`
	Key   string `json:"key,omitempty" jsonschema:"the note's key; putting an existing key replaces it (default: a new key)"`
	Text  string `json:"text" jsonschema:"the note: a preference, convention or fact worth keeping; no secrets"`
}

// NoteRefInput names one note.
type NoteRefInput struct {
	Scope string `json:"scope,omitempty" jsonschema:"conversation, user, project (default) or global"`
	Key   string `json:"key" jsonschema:"the note's key"`
}

// NoteSearchInput is memex_note_search's input.
type NoteSearchInput struct {
	Scope string `json:"scope,omitempty" jsonschema:"conversation, user, project (default) or global"`
	Query string `json:"query,omitempty" jsonschema:"words to rank the notes by; empty lists them"`
	Limit int    `json:"limit,omitempty" jsonschema:"most notes to return (1-100, default 10)"`
}

// Note is one scoped note.
type Note struct {
	Scope     string    `json:"scope"`
	Key       string    `json:"key"`
	Text      string    `json:"text"`
	UpdatedAt time.Time `json:"updated_at"`
	Score     float64   `json:"score,omitempty" jsonschema:"relevance to the query, 0-1"`
}

// NoteOutput is the answer of memex_note_put, memex_note_get and
// memex_note_delete.
type NoteOutput struct {
	Found bool  `json:"found" jsonschema:"false when there is no such note"`
	Note  *Note `json:"note,omitempty"`
}

// NotesOutput is memex_note_search's answer.
type NotesOutput struct {
	Notes []Note `json:"notes"`
}

func (s *Server) addNoteTools(srv *mcp.Server) {
	if s.items == nil {
		return
	}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_note_put",
		Title:       "Keep a note",
		Description: "Keep a note for later runs in a scope: conversation (this session), user (you, across projects), project, or global. memex shows the notes of a task's scopes in the memory block. Secrets are removed before storing.",
	}, s.notePut)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_note_get",
		Title:       "Read a note",
		Description: "Read one note by scope and key.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.noteGet)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_note_search",
		Title:       "Search notes",
		Description: "Search the notes of a scope by words (most relevant first), or list them without a query.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.noteSearch)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_note_delete",
		Title:       "Remove a note",
		Description: "Remove one note by scope and key.",
	}, s.noteDelete)
}

// noteNS resolves a scope name (default project).
func (s *Server) noteNS(scope string) (core.Namespace, core.Scope, error) {
	if scope == "" {
		scope = string(core.ScopeProject)
	}
	sc, err := core.ParseScope(scope)
	if err != nil {
		return nil, "", err
	}
	ctx := s.scopes
	ctx.Project = s.cfg.ProjectID
	ns, err := sc.Namespace(ctx)
	return ns, sc, err
}

func toNote(sc core.Scope, it core.Item) *Note {
	n := &Note{Scope: string(sc), Key: it.Key, UpdatedAt: it.UpdatedAt, Score: it.Score}
	var v struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(it.Value, &v) == nil && v.Text != nil {
		n.Text = *v.Text
	} else {
		n.Text = string(it.Value)
	}
	return n
}

func (s *Server) notePut(ctx context.Context, _ *mcp.CallToolRequest, in NotePutInput) (*mcp.CallToolResult, NoteOutput, error) {
	if in.Text == "" {
		return nil, NoteOutput{}, errors.New("text is required")
	}
	ns, sc, err := s.noteNS(in.Scope)
	if err != nil {
		return nil, NoteOutput{}, err
	}
	key := in.Key
	if key == "" {
		key = "n-" + strconv.FormatInt(s.now().UnixNano(), 36)
	}
	v, _ := json.Marshal(map[string]string{"text": in.Text})
	res, err := s.items.Put(ctx, core.PutRequest{Namespace: ns, Key: key, Value: v})
	if err != nil {
		return nil, NoteOutput{}, fmt.Errorf("note put: %w", err)
	}
	return nil, NoteOutput{Found: true, Note: toNote(sc, res.Item)}, nil
}

func (s *Server) noteGet(ctx context.Context, _ *mcp.CallToolRequest, in NoteRefInput) (*mcp.CallToolResult, NoteOutput, error) {
	ns, sc, err := s.noteNS(in.Scope)
	if err != nil {
		return nil, NoteOutput{}, err
	}
	it, ok, err := s.items.Get(ctx, ns, in.Key)
	if err != nil || !ok {
		return nil, NoteOutput{}, err
	}
	return nil, NoteOutput{Found: true, Note: toNote(sc, it)}, nil
}

func (s *Server) noteSearch(ctx context.Context, _ *mcp.CallToolRequest, in NoteSearchInput) (*mcp.CallToolResult, NotesOutput, error) {
	ns, sc, err := s.noteNS(in.Scope)
	if err != nil {
		return nil, NotesOutput{}, err
	}
	items, err := s.items.Search(ctx, core.SearchItemsRequest{Prefix: ns, Query: in.Query, Limit: in.Limit})
	if err != nil {
		return nil, NotesOutput{}, fmt.Errorf("note search: %w", err)
	}
	out := NotesOutput{Notes: make([]Note, 0, len(items))}
	for _, it := range items {
		out.Notes = append(out.Notes, *toNote(sc, it))
	}
	return nil, out, nil
}

func (s *Server) noteDelete(ctx context.Context, _ *mcp.CallToolRequest, in NoteRefInput) (*mcp.CallToolResult, NoteOutput, error) {
	ns, sc, err := s.noteNS(in.Scope)
	if err != nil {
		return nil, NoteOutput{}, err
	}
	it, ok, err := s.items.Delete(ctx, ns, in.Key)
	if err != nil || !ok {
		return nil, NoteOutput{}, err
	}
	return nil, NoteOutput{Found: true, Note: toNote(sc, it)}, nil
}
