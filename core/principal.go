package core

import (
	"context"
	"path"
)

// Principal is who is calling: the authenticated key of the service, or the
// local user of the embedded store. It travels in the context, never in a
// request body, so nobody can vouch in someone else's name (SPEC §5.1).
type Principal struct {
	// ID identifies the evidence source (a key id, "local", ...).
	ID string
	// Admin marks a human with the right to give verdicts (verified, frozen,
	// deprecated) and whose validations are strong human votes.
	Admin bool
	// Human marks a verdict given by a person (memex qa validate, admin API).
	Human bool
	// Trusted marks a source whose verdicts anchor reputation (CI runners).
	Trusted bool
	// Projects are the project patterns (path.Match) the key may touch;
	// nil: every project (the local user, insecure local mode). A key may
	// vote only on QAs whose own project they cover (SPEC §5.4).
	Projects []string
}

// Covers reports whether p may touch project.
func (p Principal) Covers(project string) bool {
	return p.Projects == nil || MatchProject(p.Projects, project)
}

// MatchProject reports whether project matches one of patterns
// (path.Match syntax: "a-*", "global", "*").
func MatchProject(patterns []string, project string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, project); ok {
			return true
		}
	}
	return false
}

type principalKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx and whether there was one.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
