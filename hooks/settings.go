package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Scope is where a host's settings live.
type Scope string

const (
	ScopeUser    Scope = "user"    // the user's home (every project)
	ScopeProject Scope = "project" // the project's directory
)

// ParseScope returns the scope named s.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeUser, ScopeProject:
		return Scope(s), nil
	}
	return "", fmt.Errorf("unknown scope %q (user or project)", s)
}

// SettingsPath is the file host h reads its hooks from: under home for
// ScopeUser, under project for ScopeProject.
func SettingsPath(h Host, scope Scope, home, project string) string {
	base := home
	if scope == ScopeProject {
		base = project
	}
	switch h {
	case Codex:
		return filepath.Join(base, ".codex", "hooks.json")
	case Gemini:
		return filepath.Join(base, ".gemini", "settings.json")
	default:
		return filepath.Join(base, ".claude", "settings.json")
	}
}

// Hook timeouts written into the settings: each host kills a hook after
// this long (memex's own budgets are well below it).
const (
	installTimeoutSeconds = 10
	geminiTimeoutMillis   = 10000
)

// Command is the command line a host runs for event: the memex executable
// (quoted for sh when needed), "hook", the host and the event.
func Command(exe string, h Host, event string) string {
	return shellQuote(exe) + " hook " + string(h) + " " + event
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ourCommand matches a command memex installed: a memex executable (any
// path, quoted or not) running `hook <host> <event>`.
var ourCommand = regexp.MustCompile(`^\s*(?:'((?:[^']|'\\'')*)'|"([^"]*)"|(\S+))\s+hook\s+(claude|codex|gemini)\s+(\w+)\s*$`)

// parseOurs returns the executable, host and event of a memex hook command.
func parseOurs(cmd string) (exe string, h Host, event string, ok bool) {
	m := ourCommand.FindStringSubmatch(cmd)
	if m == nil {
		return "", "", "", false
	}
	exe = m[3]
	if m[1] != "" {
		exe = strings.ReplaceAll(m[1], `'\''`, "'")
	} else if m[2] != "" {
		exe = m[2]
	}
	base := filepath.Base(exe)
	if base != "memex" && base != "memex.exe" {
		return "", "", "", false
	}
	return exe, Host(m[4]), m[5], true
}

func hookEntry(h Host, cmd string) *object {
	hk := newObject()
	if h == Gemini {
		hk.set("name", "memex")
	}
	hk.set("type", "command")
	hk.set("command", cmd)
	if h == Gemini {
		hk.set("timeout", json.Number(fmt.Sprint(geminiTimeoutMillis)))
		hk.set("description", "memex: trusted memory for this turn")
	} else {
		hk.set("timeout", json.Number(fmt.Sprint(installTimeoutSeconds)))
	}
	group := newObject()
	group.set("hooks", []any{hk})
	return group
}

// Plan is a settings change: the file's bytes before and after.
type Plan struct {
	Path    string
	Existed bool
	Before  []byte
	After   []byte
	// Remove: the change deletes the file (uninstall of a file install
	// created).
	Remove bool
}

// Changed reports whether the plan changes anything.
func (p Plan) Changed() bool {
	if p.Remove {
		return p.Existed
	}
	return !p.Existed || !bytes.Equal(p.Before, p.After)
}

func readSettings(path string) (doc *object, before []byte, existed bool, err error) {
	before, err = os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newObject(), nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	if len(bytes.TrimSpace(before)) == 0 {
		return newObject(), before, true, nil
	}
	doc, err = parseObject(before)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%s is not JSON memex can edit (%v); add the hooks by hand (docs/INTEGRATIONS.md)", path, err)
	}
	return doc, before, true, nil
}

func render(doc *object, before []byte) []byte {
	out := encode(doc, detectIndent(before))
	if len(before) == 0 || bytes.HasSuffix(before, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// hooksOf returns the document's "hooks" object, creating it when create.
func hooksOf(doc *object, create bool) (*object, error) {
	v, ok := doc.get("hooks")
	if !ok {
		if !create {
			return nil, nil
		}
		hs := newObject()
		doc.set("hooks", hs)
		return hs, nil
	}
	hs, isObj := v.(*object)
	if !isObj {
		return nil, errors.New(`"hooks" is not an object`)
	}
	return hs, nil
}

// PlanInstall merges memex's hooks for h (InstalledEvents, each running
// Command(exe, h, event)) into the settings file at path. Every other key
// and hook stays as it is; an entry memex installed before is updated in
// place, so installing twice leaves one entry.
func PlanInstall(h Host, path, exe string) (Plan, error) {
	doc, before, existed, err := readSettings(path)
	if err != nil {
		return Plan{}, err
	}
	hs, err := hooksOf(doc, true)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, event := range h.InstalledEvents() {
		cmd := Command(exe, h, event)
		var groups []any
		if v, ok := hs.get(event); ok {
			if groups, ok = v.([]any); !ok {
				return Plan{}, fmt.Errorf("%s: hooks.%s is not an array", path, event)
			}
		}
		found := false
		for _, g := range groups {
			forEachOurs(g, func(hk *object, _ string, eh Host, ev string) {
				if eh == h && ev == event {
					hk.set("command", cmd)
					found = true
				}
			})
		}
		if !found {
			groups = append(groups, hookEntry(h, cmd))
		}
		hs.set(event, groups)
	}
	return Plan{Path: path, Existed: existed, Before: before, After: render(doc, before)}, nil
}

// forEachOurs calls f for each memex hook in a matcher group.
func forEachOurs(g any, f func(hk *object, exe string, h Host, event string)) {
	grp, ok := g.(*object)
	if !ok {
		return
	}
	v, _ := grp.get("hooks")
	list, _ := v.([]any)
	for _, e := range list {
		hk, ok := e.(*object)
		if !ok {
			continue
		}
		c, _ := hk.get("command")
		cmd, _ := c.(string)
		if exe, eh, ev, ok := parseOurs(cmd); ok {
			f(hk, exe, eh, ev)
		}
	}
}

// PlanUninstall takes exactly memex's hooks for h out of the settings file:
// the hook entries, then the groups, event lists and "hooks" object they
// leave empty. A file that is left an empty object is removed (install
// created it).
func PlanUninstall(h Host, path string) (Plan, error) {
	doc, before, existed, err := readSettings(path)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Path: path, Existed: existed, Before: before, After: before}
	if !existed {
		return p, nil
	}
	hs, err := hooksOf(doc, false)
	if err != nil || hs == nil {
		return p, err
	}
	for _, event := range append([]string(nil), hs.keys...) {
		groups, ok := hs.vals[event].([]any)
		if !ok {
			continue
		}
		var keptGroups []any
		for _, g := range groups {
			grp, ok := g.(*object)
			if !ok {
				keptGroups = append(keptGroups, g)
				continue
			}
			v, _ := grp.get("hooks")
			list, isList := v.([]any)
			if !isList {
				keptGroups = append(keptGroups, g)
				continue
			}
			var kept []any
			for _, e := range list {
				if hk, ok := e.(*object); ok {
					c, _ := hk.get("command")
					cmd, _ := c.(string)
					if _, eh, _, ours := parseOurs(cmd); ours && eh == h {
						continue
					}
				}
				kept = append(kept, e)
			}
			if len(kept) == len(list) {
				keptGroups = append(keptGroups, g)
				continue
			}
			if len(kept) > 0 {
				grp.set("hooks", kept)
				keptGroups = append(keptGroups, grp)
			}
		}
		if len(keptGroups) == len(groups) {
			continue
		}
		if len(keptGroups) == 0 {
			hs.del(event)
		} else {
			hs.set(event, keptGroups)
		}
	}
	if len(hs.keys) == 0 {
		doc.del("hooks")
	}
	if len(doc.keys) == 0 {
		p.Remove = true
		p.After = nil
		return p, nil
	}
	p.After = render(doc, before)
	// The file install backed up, when it is the same document, gives the
	// exact bytes back (install re-indents a file it edits).
	if bak, err := os.ReadFile(path + ".memex.bak"); err == nil {
		if bd, err := parseObject(bak); err == nil && bytes.Equal(encode(bd, "  "), encode(doc, "  ")) {
			p.After = bak
		}
	}
	return p, nil
}

// Apply carries the plan out: the previous file is copied to
// <path>.memex.bak, the new one written to a temporary file and renamed
// over it (so the host never reads half a file).
func Apply(p Plan) error {
	if !p.Changed() {
		return nil
	}
	if p.Existed {
		if err := os.WriteFile(p.Path+".memex.bak", p.Before, 0o600); err != nil {
			return fmt.Errorf("backup of %s: %w", p.Path, err)
		}
	}
	if p.Remove {
		if err := os.Remove(p.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(p.Path); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(p.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".memex-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(p.After)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p.Path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Installed is one memex hook found in a settings file.
type Installed struct {
	Event   string
	Command string
	// Exe is the executable the command runs; ExeFound whether it exists
	// (or, for a bare name, is on PATH).
	Exe      string
	ExeFound bool
}

// Status lists memex's hooks for h in the settings file at path. lookPath
// resolves a bare executable name (exec.LookPath).
func Status(h Host, path string, lookPath func(string) (string, error)) ([]Installed, error) {
	doc, _, existed, err := readSettings(path)
	if err != nil || !existed {
		return nil, err
	}
	hs, err := hooksOf(doc, false)
	if err != nil || hs == nil {
		return nil, err
	}
	var out []Installed
	for _, event := range hs.keys {
		groups, _ := hs.vals[event].([]any)
		for _, g := range groups {
			forEachOurs(g, func(hk *object, exe string, eh Host, ev string) {
				if eh != h {
					return
				}
				c, _ := hk.get("command")
				cmd, _ := c.(string)
				in := Installed{Event: event, Command: cmd, Exe: exe}
				if strings.ContainsRune(exe, filepath.Separator) {
					st, err := os.Stat(exe)
					in.ExeFound = err == nil && !st.IsDir()
				} else if lookPath != nil {
					_, err := lookPath(exe)
					in.ExeFound = err == nil
				}
				out = append(out, in)
			})
		}
	}
	return out, nil
}

// NextStep is what the user still has to do in the host after an install.
func NextStep(h Host) string {
	switch h {
	case Codex:
		return "Codex runs hooks only when they are enabled and trusted: make sure ~/.codex/config.toml has\n" +
			"  [features]\n  hooks = true\n" +
			"then start codex and run /hooks to review and trust memex's two hooks (Codex skips untrusted hooks silently)."
	case Gemini:
		return "Gemini CLI reads the hooks at its next start; run /hooks there to check them. Older releases also\n" +
			"need hooks enabled in settings.json (\"tools\": {\"enableHooks\": true} and \"hooks\": {\"enabled\": true})."
	default:
		return "Claude Code reads the hooks at its next session; run /hooks there to review them."
	}
}
