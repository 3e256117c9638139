package core

import "context"

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
