package core

import (
	"fmt"
	"strings"
)

// Scope is where a scoped entry lives (SPEC §11, docs/SCOPES.md).
type Scope string

// The scopes, narrowest first.
const (
	// ScopeConversation: one session of one user (a hook's session id, a
	// memex run's run id or --session).
	ScopeConversation Scope = "conversation"
	// ScopeUser: one user across projects (the OS user, [scopes] user, or
	// the authenticated key's identity on memex serve).
	ScopeUser Scope = "user"
	// ScopeProject: one project (the project id of SPEC §8).
	ScopeProject Scope = "project"
	// ScopeGlobal: everyone.
	ScopeGlobal Scope = "global"
)

// Scopes lists every scope, narrowest first.
var Scopes = []Scope{ScopeConversation, ScopeUser, ScopeProject, ScopeGlobal}

// ParseScope reads a scope name.
func ParseScope(s string) (Scope, error) {
	for _, sc := range Scopes {
		if string(sc) == s {
			return sc, nil
		}
	}
	return "", Invalid("scope", "unknown scope %q (conversation, user, project or global)", s)
}

// ScopeContext holds the ids scopes are resolved from.
type ScopeContext struct {
	Session string // conversation
	User    string // user, conversation
	Project string // project
}

// Namespace resolves the scope's namespace:
//
//	conversation → {"conversation", <user>, <session>}
//	user         → {"user", <user>}
//	project      → {"project", <project>}
//	global       → {"global"}
//
// A conversation lives under its user, so a session id never reaches
// another user's entries. A missing id is a clear error naming the scope
// and where the id comes from.
func (s Scope) Namespace(c ScopeContext) (Namespace, error) {
	var ns Namespace
	switch s {
	case ScopeConversation:
		if c.Session == "" {
			return nil, Invalid("scope", "the conversation scope needs a session id (a hook's session_id, memex run's run, or --session)")
		}
		if c.User == "" {
			return nil, Invalid("scope", "the conversation scope needs a user id ([scopes] user, MEMEX_USER or the OS user)")
		}
		ns = Namespace{string(s), c.User, c.Session}
	case ScopeUser:
		if c.User == "" {
			return nil, Invalid("scope", "the user scope needs a user id ([scopes] user, MEMEX_USER or the OS user)")
		}
		ns = Namespace{string(s), c.User}
	case ScopeProject:
		if c.Project == "" {
			return nil, Invalid("scope", "the project scope needs a project id (--project or the repository)")
		}
		ns = Namespace{string(s), c.Project}
	case ScopeGlobal:
		ns = Namespace{string(s)}
	default:
		return nil, Invalid("scope", "unknown scope %q", string(s))
	}
	if err := ns.Validate(); err != nil {
		return nil, fmt.Errorf("%s scope: %w", s, err)
	}
	return ns, nil
}

// ScopeOf names the scope of a namespace resolved by Scope.Namespace ("" for
// a namespace outside the scopes).
func ScopeOf(ns Namespace) Scope {
	if len(ns) == 0 {
		return ""
	}
	switch sc := Scope(ns[0]); sc {
	case ScopeConversation:
		if len(ns) >= 3 {
			return sc
		}
	case ScopeUser, ScopeProject:
		if len(ns) >= 2 {
			return sc
		}
	case ScopeGlobal:
		return sc
	}
	return ""
}

// ItemPolicy limits what a caller may do in the namespaced store (seed 000
// §9): which namespace prefixes it may read and write, how many entries a
// namespace may hold and how large a value may be.
type ItemPolicy struct {
	// Read and Write are namespace patterns in text form ("user/alice",
	// "project/acme-*", "conversation/alice"); a "*" in a segment
	// matches any run of characters within that segment. A namespace is
	// allowed when a pattern matches its first segments. nil allows every
	// namespace; an empty, non-nil list none.
	Read, Write []string
	// MaxEntries is the most items one namespace may hold (0: no limit).
	MaxEntries int
	// MaxValueBytes is the largest compacted value (0: MaxItemValueBytes).
	MaxValueBytes int
}

// CheckRead returns ErrForbidden ("access denied") unless the policy lets
// the caller read every namespace under prefix.
func (p ItemPolicy) CheckRead(prefix Namespace) error {
	if !covered(p.Read, prefix) {
		return fmt.Errorf("access denied: namespace %q is outside the read prefixes: %w", prefix.String(), ErrForbidden)
	}
	return nil
}

// CheckWrite returns ErrForbidden unless the policy lets the caller write
// under ns.
func (p ItemPolicy) CheckWrite(ns Namespace) error {
	if !covered(p.Write, ns) {
		return fmt.Errorf("access denied: namespace %q is outside the write prefixes: %w", ns.String(), ErrForbidden)
	}
	return nil
}

// CheckValue returns a *QuotaError when value is over MaxValueBytes.
func (p ItemPolicy) CheckValue(value []byte) error {
	if p.MaxValueBytes > 0 && len(value) > p.MaxValueBytes {
		return &QuotaError{Limit: "value bytes", Max: p.MaxValueBytes, Got: len(value)}
	}
	return nil
}

// covered reports whether a pattern matches the first segments of ns.
func covered(patterns []string, ns Namespace) bool {
	if patterns == nil {
		return true
	}
	for _, pat := range patterns {
		segs := strings.Split(pat, "/")
		if pat == "" || len(segs) > len(ns) {
			continue
		}
		ok := true
		for i, g := range segs {
			if !matchSegment(g, ns[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// matchSegment matches one segment against a glob of literal characters
// and "*" (any run of characters): segments never hold "/", so this is
// path.Match without its classes and escapes, which a pattern from a config
// file does not need.
func matchSegment(glob, s string) bool {
	star := strings.IndexByte(glob, '*')
	if star < 0 {
		return glob == s
	}
	if !strings.HasPrefix(s, glob[:star]) {
		return false
	}
	rest := glob[star+1:]
	for i := star; i <= len(s); i++ {
		if matchSegment(rest, s[i:]) {
			return true
		}
	}
	return false
}
