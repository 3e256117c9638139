package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/gatekeeper"
)

// scopesConfig is [scopes] (docs/SCOPES.md).
type scopesConfig struct {
	// User is the user scope's id: [scopes] user, MEMEX_USER, else the OS
	// user. Against a shared memex serve, use the API key's id (its
	// default store policy is user/<key id>).
	User string
	// Session is MEMEX_SESSION: the conversation of memex run and memex
	// note (--session overrides it; memex run falls back to its run id).
	Session string
	// Recall is how many entries of each scope go into the memory block
	// (0 leaves a scope out).
	Recall map[core.Scope]int
	// Placement is where each scope's entries go: before the query
	// (gatekeeper.PlaceBeforeQuery, the default) or in the backend's
	// system prompt (gatekeeper.PlaceSystemPrompt; before the query for a
	// backend without one).
	Placement map[core.Scope]string
	// MaxEntries and MaxValueBytes are the local store policy (0: none).
	MaxEntries    int
	MaxValueBytes int
}

func defaultScopesConfig() scopesConfig {
	return scopesConfig{Recall: map[core.Scope]int{
		core.ScopeConversation: 5, core.ScopeUser: 3, core.ScopeProject: 3, core.ScopeGlobal: 3,
	}, Placement: map[core.Scope]string{}}
}

// scopesFile is the [scopes] section of a config file.
type scopesFile struct {
	User          *string `toml:"user"`
	MaxEntries    *int    `toml:"max_entries_per_namespace"`
	MaxValueBytes *int    `toml:"max_value_bytes"`
	Recall        struct {
		Conversation *int `toml:"conversation"`
		User         *int `toml:"user"`
		Project      *int `toml:"project"`
		Global       *int `toml:"global"`
	} `toml:"recall"`
	Placement struct {
		Conversation *string `toml:"conversation"`
		User         *string `toml:"user"`
		Project      *string `toml:"project"`
		Global       *string `toml:"global"`
	} `toml:"placement"`
}

func (sf scopesFile) apply(cfg *Config, path string) error {
	bad := func(key, msg string) error { return fmt.Errorf("config %s: %s: %s", path, key, msg) }
	sc := &cfg.Scopes
	set(&sc.User, sf.User)
	if sc.User != "" {
		if _, err := core.ScopeUser.Namespace(core.ScopeContext{User: sc.User}); err != nil {
			return bad("scopes.user", "must be 1–128 bytes without \"/\" or control characters")
		}
	}
	set(&sc.MaxEntries, sf.MaxEntries)
	set(&sc.MaxValueBytes, sf.MaxValueBytes)
	if sc.MaxEntries < 0 || sc.MaxValueBytes < 0 {
		return bad("scopes", "max_entries_per_namespace and max_value_bytes must be ≥ 0")
	}
	recall := map[core.Scope]*int{core.ScopeConversation: sf.Recall.Conversation, core.ScopeUser: sf.Recall.User,
		core.ScopeProject: sf.Recall.Project, core.ScopeGlobal: sf.Recall.Global}
	for scope, n := range recall {
		if n == nil {
			continue
		}
		if *n < 0 || *n > core.MaxItemTopK {
			return bad("scopes.recall."+string(scope), fmt.Sprintf("must be between 0 and %d", core.MaxItemTopK))
		}
		sc.Recall[scope] = *n
	}
	placement := map[core.Scope]*string{core.ScopeConversation: sf.Placement.Conversation, core.ScopeUser: sf.Placement.User,
		core.ScopeProject: sf.Placement.Project, core.ScopeGlobal: sf.Placement.Global}
	for scope, p := range placement {
		if p == nil {
			continue
		}
		if *p != gatekeeper.PlaceBeforeQuery && *p != gatekeeper.PlaceSystemPrompt {
			return bad("scopes.placement."+string(scope), fmt.Sprintf("must be %q or %q", gatekeeper.PlaceBeforeQuery, gatekeeper.PlaceSystemPrompt))
		}
		sc.Placement[scope] = *p
	}
	return nil
}

// scopeUser is the user scope's id: the config's, else the OS user's name
// (without a Windows domain), else $USER.
func (a *app) scopeUser(cfg Config) string {
	if cfg.Scopes.User != "" {
		return cfg.Scopes.User
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		name := u.Username
		if i := strings.LastIndexByte(name, '\\'); i >= 0 {
			name = name[i+1:]
		}
		return name
	}
	return a.getenv("USER")
}

// scopeContext is the context scopes resolve from for s, in conversation
// session ("" when there is none).
func (a *app) scopeContext(s *session, conversation string) core.ScopeContext {
	return core.ScopeContext{Session: conversation, User: a.scopeUser(s.cfg), Project: s.project}
}

// items is the namespaced store of the session's store, behind the local
// policy and the audit log (the store's, when it keeps one), with every
// value redacted before it is written.
func (a *app) items(s *session) (core.ItemStore, error) {
	// The store is behind extract/redact.Store (plugins.go): its Items
	// redact every value before it is written.
	ip, ok := core.As[core.ItemsProvider](s.store)
	if !ok {
		return nil, fmt.Errorf("the %s store has no namespaced store", s.store.Name())
	}
	var audit core.Auditor
	if au, ok := core.As[core.Auditor](s.store); ok {
		audit = au
	} else if dir, err := dataDir(a.getenv); err == nil {
		audit = &fileAudit{path: filepath.Join(dir, "audit.jsonl")}
	}
	policy := core.ItemPolicy{MaxEntries: s.cfg.Scopes.MaxEntries, MaxValueBytes: s.cfg.Scopes.MaxValueBytes}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	inner := withSemanticItems(ip.Items(), s.storeURL, s.cfg.Semantic, log)
	return core.GuardItems(inner, policy, audit, nil), nil
}

// noteText is what the memory block shows of an item: its "text" when it
// is a string, else the compact value.
func noteText(it core.Item) string {
	var v struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(it.Value, &v) == nil && v.Text != nil {
		return *v.Text
	}
	return string(it.Value)
}

// noteRecaller recalls, for each scope of cfg.Scopes.Recall (narrowest
// first), the entries most relevant to the query, then the others in list
// order, up to the scope's top_k. A scope whose id is missing (no session)
// is left out.
func (a *app) noteRecaller(s *session, st core.ItemStore, conversation string) engine.NoteRecaller {
	return func(ctx context.Context, t engine.Task, runID string) ([]gatekeeper.Note, error) {
		sc := a.scopeContext(s, conversation)
		if sc.Session == "" {
			sc.Session = runID
		}
		sc.Project = t.ProjectID
		var out []gatekeeper.Note
		for _, scope := range core.Scopes {
			k := s.cfg.Scopes.Recall[scope]
			if k <= 0 {
				continue
			}
			ns, err := scope.Namespace(sc)
			if err != nil {
				continue
			}
			got, err := st.Search(ctx, core.SearchItemsRequest{Prefix: ns, Query: t.Query, Limit: k})
			if err != nil {
				return out, err
			}
			if len(got) < k {
				rest, err := st.Search(ctx, core.SearchItemsRequest{Prefix: ns, Limit: k})
				if err != nil {
					return out, err
				}
				for _, it := range rest {
					if len(got) == k {
						break
					}
					if !containsItem(got, it) {
						got = append(got, it)
					}
				}
			}
			for _, it := range got {
				out = append(out, gatekeeper.Note{Scope: string(scope), Key: it.Key, Text: noteText(it), Placement: s.cfg.Scopes.Placement[scope]})
			}
		}
		return out, nil
	}
}

func containsItem(items []core.Item, it core.Item) bool {
	for _, x := range items {
		if x.Key == it.Key && x.Namespace.String() == it.Namespace.String() {
			return true
		}
	}
	return false
}

// runNotes is the namespaced store memex run recalls notes from and notes
// itself in, or nil (memory off, no store, a store without one).
func (a *app) runNotes(s *session, memoryOn bool) core.ItemStore {
	if !memoryOn || s.store == nil {
		return nil
	}
	st, err := a.items(s)
	if err != nil {
		return nil
	}
	return st
}

// runEnv is the agent's environment for a run: memex's own, plus what
// makes a `memex note` the agent runs land in the run's scopes (docs/SCOPES.md):
// MEMEX_SESSION (the run's conversation: --session, MEMEX_SESSION, else the
// run id, the conversation memex run recalls from), MEMEX_RUN_ID,
// MEMEX_USER, MEMEX_PROJECT and MEMEX_STORE (unless the store URL holds a
// password: the agent's memex then finds the store the way this one did).
func (a *app) runEnv(s *session, conversation, runID string) []string {
	env := append(os.Environ(),
		"MEMEX_SESSION="+cmp.Or(conversation, runID),
		"MEMEX_RUN_ID="+runID,
		"MEMEX_PROJECT="+s.project,
	)
	if u := a.scopeUser(s.cfg); u != "" {
		env = append(env, "MEMEX_USER="+u)
	}
	if s.storeURL != "" {
		if u, err := url.Parse(s.storeURL); err != nil || u.User == nil {
			env = append(env, "MEMEX_STORE="+s.storeURL)
		}
	}
	return env
}

// noteRun records, in the run's conversation (only one named by --session
// or MEMEX_SESSION), what the run was asked and how it ended, so the next
// run of the conversation sees it (redacted like every write).
func (a *app) noteRun(ctx context.Context, s *session, st core.ItemStore, conversation string, pre engine.PreResult, result string) error {
	if st == nil || conversation == "" || pre.Skipped != "" {
		return nil
	}
	ns, err := core.ScopeConversation.Namespace(a.scopeContext(s, conversation))
	if err != nil {
		return err
	}
	q := pre.Query
	if r := []rune(q); len(r) > 500 {
		q = string(r[:500]) + " …"
	}
	v, err := json.Marshal(map[string]string{"text": "asked: " + q + " (result: " + cmp.Or(result, "unknown") + ")", "run_id": pre.RunID, "result": result})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Engine.MemoryTimeout)
	defer cancel()
	_, err = st.Put(ctx, core.PutRequest{Namespace: ns, Key: pre.RunID, Value: v})
	return err
}
