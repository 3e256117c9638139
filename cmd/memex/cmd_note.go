package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

const noteUsage = "note add|put|get|list|search|rm|clear [flags] [args]"

const noteExamples = `  memex note add --scope user "prefers table-driven tests"
  memex note add "this repository formats SQL with sqlfluff"          # project scope
  memex note add --scope conversation --session s1 "the bug is in the parser"
  memex note put --scope user editor '{"text":"uses helix","kind":"tool"}'
  memex note get --scope user editor --json
  memex note list --scope user
  memex note search --scope project "sql format"
  memex note search --ns user/alice --filter '{"kind":"tool"}'
  memex note rm --scope user editor
  memex note clear --scope conversation --session s1

Scopes: conversation (--session, MEMEX_SESSION), user ([scopes] user,
MEMEX_USER or the OS user), project (--project or the repository), global.
--ns names any namespace instead ("a/b/c"). --json prints exactly what the
/v1/store/… API returns.`

// noteFlags are the flags every note subcommand takes.
type noteFlags struct {
	g       *globalFlags
	scope   string
	ns      string
	session string
	asJSON  bool
	limit   int
	cursor  string
	filter  string
	key     string
}

func cmdNote(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fs, _ := a.newFlagSet("note", noteUsage, noteExamples)
		a.printUsage(fs)
		if len(args) == 0 {
			return usagef("note: a subcommand is required (add, put, get, list, search, rm, clear)")
		}
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	fs, g := a.newFlagSet("note "+sub, noteUsage, noteExamples)
	f := &noteFlags{g: g}
	fs.StringVar(&f.scope, "scope", "project", "conversation, user, project or global")
	fs.StringVar(&f.ns, "ns", "", "a namespace in text form (a/b/c) instead of --scope")
	fs.StringVar(&f.session, "session", "", "the conversation's session id (default: MEMEX_SESSION)")
	fs.BoolVar(&f.asJSON, "json", false, "print the API's JSON answer")
	fs.IntVar(&f.limit, "limit", 0, "list: page size (default 100); search: results (default 10)")
	fs.StringVar(&f.cursor, "cursor", "", "list: the next_cursor of the page before")
	fs.StringVar(&f.filter, "filter", "", `search: a JSON object of value fields to match ({"kind":"tool"})`)
	fs.StringVar(&f.key, "key", "", "add: the key (default: a generated one)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	want := map[string][2]int{"add": {1, 1}, "put": {2, 2}, "get": {1, 1}, "list": {0, 0}, "search": {0, 1}, "rm": {1, 1}, "clear": {0, 0}}
	n, ok := want[sub]
	if !ok {
		return usagef("note: unknown subcommand %q (add, put, get, list, search, rm, clear)", sub)
	}
	if len(pos) < n[0] || len(pos) > n[1] {
		return usagef("note %s: wrong number of arguments (see memex note --help)", sub)
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	st, err := a.items(s)
	if err != nil {
		return err
	}
	ns, err := a.noteNamespace(s, f)
	if err != nil {
		return err
	}
	ctx = core.WithPrincipal(ctx, core.Principal{ID: "local:" + a.scopeUser(s.cfg), Human: true})
	switch sub {
	case "add":
		key := f.key
		if key == "" {
			key = newNoteKey()
		}
		v, _ := json.Marshal(map[string]string{"text": pos[0]})
		return a.notePut(ctx, st, f, ns, key, v)
	case "put":
		return a.notePut(ctx, st, f, ns, pos[0], json.RawMessage(pos[1]))
	case "get":
		it, found, err := st.Get(ctx, ns, pos[0])
		if err != nil {
			return fmt.Errorf("note get: %w", err)
		}
		if f.asJSON {
			r := wire.ItemResponse{}
			if found {
				r.Item = &it
			}
			return jsonOut(a.stdout, r)
		}
		if !found {
			return fmt.Errorf("note get: no entry %q in %s", pos[0], ns)
		}
		fmt.Fprintln(a.stdout, noteText(it))
		return nil
	case "list":
		page, err := st.List(ctx, core.ListItemsRequest{Prefix: ns, Limit: f.limit, Cursor: f.cursor})
		if err != nil {
			return fmt.Errorf("note list: %w", err)
		}
		if f.asJSON {
			return jsonOut(a.stdout, page)
		}
		a.printNotes(page.Items)
		if page.NextCursor != "" {
			fmt.Fprintf(a.stdout, "(more: --cursor %s)\n", page.NextCursor)
		}
		return nil
	case "search":
		req := core.SearchItemsRequest{Prefix: ns, Limit: f.limit}
		if len(pos) == 1 {
			req.Query = pos[0]
		}
		if f.filter != "" {
			if err := json.Unmarshal([]byte(f.filter), &req.Filter); err != nil {
				return usagef("note search: --filter must be a JSON object")
			}
		}
		items, err := st.Search(ctx, req)
		if err != nil {
			return fmt.Errorf("note search: %w", err)
		}
		if items == nil {
			items = []core.Item{}
		}
		if f.asJSON {
			return jsonOut(a.stdout, wire.SearchItemsResponse{Items: items})
		}
		a.printNotes(items)
		return nil
	case "rm":
		it, found, err := st.Delete(ctx, ns, pos[0])
		if err != nil {
			return fmt.Errorf("note rm: %w", err)
		}
		if f.asJSON {
			r := wire.DeleteItemResponse{Deleted: found}
			if found {
				r.Item = &it
			}
			return jsonOut(a.stdout, r)
		}
		if !found {
			return fmt.Errorf("note rm: no entry %q in %s", pos[0], ns)
		}
		fmt.Fprintf(a.stdout, "removed %s from %s\n", pos[0], ns)
		return nil
	default: // clear
		n, err := st.Clear(ctx, ns)
		if err != nil {
			return fmt.Errorf("note clear: %w", err)
		}
		if f.asJSON {
			return jsonOut(a.stdout, wire.ClearItemsResponse{Deleted: n})
		}
		fmt.Fprintf(a.stdout, "removed %d entries under %s\n", n, ns)
		return nil
	}
}

// noteNamespace is --ns, else the namespace of --scope (a missing id is
// a clear error naming where it comes from).
func (a *app) noteNamespace(s *session, f *noteFlags) (core.Namespace, error) {
	if f.ns != "" {
		ns, err := core.ParseNamespace(f.ns)
		if err != nil {
			return nil, usagef("note: --ns: %v", err)
		}
		if len(ns) == 0 {
			return nil, usagef("note: --ns: must name a namespace")
		}
		return ns, nil
	}
	scope, err := core.ParseScope(f.scope)
	if err != nil {
		return nil, usagef("note: --scope: %v", err)
	}
	session := f.session
	if session == "" {
		session = s.cfg.Scopes.Session
	}
	ns, err := scope.Namespace(a.scopeContext(s, session))
	if err != nil {
		return nil, usagef("note: %v", err)
	}
	return ns, nil
}

func (a *app) notePut(ctx context.Context, st core.ItemStore, f *noteFlags, ns core.Namespace, key string, v json.RawMessage) error {
	res, err := st.Put(ctx, core.PutRequest{Namespace: ns, Key: key, Value: v})
	if err != nil {
		return fmt.Errorf("note put: %w", err)
	}
	if f.asJSON {
		return jsonOut(a.stdout, res)
	}
	verb := "stored"
	if res.Previous != nil {
		verb = "replaced"
	}
	fmt.Fprintf(a.stdout, "%s %s in %s\n", verb, key, ns)
	return nil
}

func (a *app) printNotes(items []core.Item) {
	for _, it := range items {
		score := ""
		if it.Score > 0 {
			score = fmt.Sprintf("  (%.2f)", it.Score)
		}
		fmt.Fprintf(a.stdout, "%s  %s%s\n  %s\n", it.Namespace, it.Key, score, oneLine(noteText(it), 200))
	}
}

// newNoteKey is a fresh key that sorts by time: n-<unix ms, base 36>-<random>.
func newNoteKey() string {
	return "n-" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strings.ToLower(rand.Text()[:6])
}
