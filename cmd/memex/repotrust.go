package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// A repository's .memex.toml comes with whatever the user clones: it may
// only set keys that can neither run a command nor send data anywhere
// (gatekeeper and prompt tuning, the project id, the memory knobs other than
// the store, candidate extraction limits, scopes.recall, and hooks.enabled
// = false). Every other key — [run] (backend, verify, model, events,
// timeout), memory.store, [semantic], [serve], [trust], the rest of
// [scopes], candidate_extract.strict_secret_block — comes from the user's own
// config, the environment or flags, or from a repository file the user
// trusted with 'memex config trust', which records the file's path and the
// SHA-256 of its content: any change to the file voids the trust.

// repoSafeKey reports whether an untrusted repository file may set k.
func repoSafeKey(k toml.Key) bool {
	if len(k) == 0 {
		return false
	}
	switch k[0] {
	case "gatekeeper", "prompt_inject":
		return true
	case "hooks":
		return true // enabled: a repository may turn hooks off, not on (applyRepoFile)
	case "scopes":
		return len(k) < 2 || k[1] == "recall"
	case "memory":
		return len(k) < 2 || k[1] != "store"
	case "candidate_extract":
		return len(k) < 2 || k[1] != "strict_secret_block"
	}
	return false
}

// unsafeRepoKeys lists the keys of md an untrusted repository file may not
// set (leaf keys, "run.verify"), sorted.
func unsafeRepoKeys(md toml.MetaData) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range md.Keys() {
		if repoSafeKey(k) {
			continue
		}
		if len(k) == 1 {
			if t := md.Type(k...); t == "Hash" || t == "ArrayHash" {
				continue // a table header: its keys are listed themselves
			}
		}
		name := k.String()
		if len(k) > 2 && k[0] == "serve" {
			name = strings.Join(k[:2], ".")
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// dropRepoUnsafe returns text without the keys repoSafeKey refuses.
func dropRepoUnsafe(text string) (string, error) {
	var m map[string]any
	if _, err := toml.Decode(text, &m); err != nil {
		return "", err
	}
	for sect, v := range m {
		sub, ok := v.(map[string]any)
		if !ok {
			if !repoSafeKey(toml.Key{sect}) {
				delete(m, sect)
			}
			continue
		}
		for k := range sub {
			if !repoSafeKey(toml.Key{sect, k}) {
				delete(sub, k)
			}
		}
		if len(sub) == 0 {
			delete(m, sect)
		}
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(m); err != nil {
		return "", err
	}
	return b.String(), nil
}

// trustFile is where 'memex config trust' records trusted repository
// files: one "sha256:<hex> <absolute path>" per line, in the user's config
// directory (never in a repository).
func trustFile(getenv func(string) string) string {
	if dir := userConfigDir(getenv); dir != "" {
		return filepath.Join(dir, "memex", "trusted")
	}
	return ""
}

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// trustEntry is one trusted file.
type trustEntry struct{ hash, path string }

func readTrust(getenv func(string) string) ([]trustEntry, error) {
	f := trustFile(getenv)
	if f == "" {
		return nil, nil
	}
	b, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trusted config files %s: %w", f, err)
	}
	var out []trustEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		h, p, ok := strings.Cut(line, " ")
		if ok && strings.HasPrefix(h, "sha256:") {
			out = append(out, trustEntry{hash: h, path: strings.TrimSpace(p)})
		}
	}
	return out, nil
}

func writeTrust(getenv func(string) string, es []trustEntry) error {
	f := trustFile(getenv)
	if f == "" {
		return errors.New("cannot find the user config directory: set XDG_CONFIG_HOME or HOME")
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Repository config files memex trusts (memex config trust); a changed file is no longer trusted.\n")
	for _, e := range es {
		fmt.Fprintf(&b, "%s %s\n", e.hash, e.path)
	}
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f)
}

// repoTrusted reports whether the user trusted path with exactly content b.
func repoTrusted(getenv func(string) string, path string, b []byte) (bool, error) {
	es, err := readTrust(getenv)
	if err != nil {
		return false, err
	}
	h := contentHash(b)
	for _, e := range es {
		if e.path == path && e.hash == h {
			return true, nil
		}
	}
	return false, nil
}

// applyRepoFile applies a repository's .memex.toml: all of it when the
// user trusted this content, else only the keys repoSafeKey allows; the
// ignored keys come back for a warning.
func applyRepoFile(cfg *Config, getenv func(string) string, path string, b []byte) (ignored []string, err error) {
	// Syntax and unknown keys are checked on the file as written (the
	// errors name its lines).
	var fc fileConfig
	md, err := toml.Decode(string(b), &fc)
	if err != nil || len(md.Undecoded()) > 0 {
		return nil, applyFile(cfg, path, b)
	}
	ignored = unsafeRepoKeys(md)
	if len(ignored) == 0 && !(fc.Hooks.Enabled != nil && *fc.Hooks.Enabled && !cfg.HooksEnabled) {
		return nil, applyFile(cfg, path, b)
	}
	trusted, err := repoTrusted(getenv, path, b)
	if err != nil {
		return nil, err
	}
	if trusted {
		return nil, applyFile(cfg, path, b)
	}
	if md.IsDefined("serve", "keys") {
		return nil, applyFile(cfg, path, b) // refused with its own error
	}
	safe, err := dropRepoUnsafe(string(b))
	if err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	hooks := cfg.HooksEnabled
	err = applyFile(cfg, path, []byte(safe))
	if cfg.HooksEnabled && !hooks {
		cfg.HooksEnabled = false // a repository may turn hooks off, never on
		ignored = append(ignored, "hooks.enabled")
	}
	return ignored, err
}

// ignoredWarning is the warning for the keys an untrusted repository file
// tried to set.
func ignoredWarning(path string, keys []string) string {
	return fmt.Sprintf("config %s: ignored %s: a repository's .memex.toml may not run commands or choose where data goes "+
		"(set them in your own config, the environment or flags, or run 'memex config trust' after reading the file)",
		path, strings.Join(keys, ", "))
}
