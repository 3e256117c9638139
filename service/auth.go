package service

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
)

// localPrincipal is who every request is in InsecureLocal mode.
const localPrincipal = "local"

type compiledKey struct {
	Key
	hash [sha256.Size]byte
}

func compileKeys(keys []Key) []compiledKey {
	out := make([]compiledKey, 0, len(keys))
	for _, k := range keys {
		ck := compiledKey{Key: k}
		b, _ := hex.DecodeString(k.SecretSHA256) // checked by Config.Validate
		copy(ck.hash[:], b)
		out = append(out, ck)
	}
	return out
}

// caller is the authenticated key of a request.
type caller struct {
	id       string
	admin    bool
	trusted  bool
	projects []string // nil: every project (insecure local mode)
	// storeRead, storeWrite: the key's namespace patterns (nil: defaults,
	// Server.policy).
	storeRead, storeWrite []string
}

const callerKey = "memex.caller"

func callerOf(c echo.Context) caller {
	if v, ok := c.Get(callerKey).(caller); ok {
		return v
	}
	return caller{}
}

// may reports whether the caller may read and write project.
func (k caller) may(project string) bool {
	return k.projects == nil || core.MatchProject(k.projects, project)
}

// authorize returns ErrForbidden (403) when the caller may not touch
// project: never a silent filter.
func authorize(c echo.Context, project string) error {
	if !callerOf(c).may(project) {
		return fmt.Errorf("key %s may not access project %s: %w", callerOf(c).id, project, core.ErrForbidden)
	}
	return nil
}

// secretFrom reads the bearer secret: Authorization: Bearer, else
// X-Api-Key.
func secretFrom(c echo.Context) string {
	h := c.Request().Header
	if a := h.Get(echo.HeaderAuthorization); a != "" {
		if scheme, tok, ok := strings.Cut(a, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	return strings.TrimSpace(h.Get("X-Api-Key"))
}

// lookup finds the key whose hash matches secret, comparing in constant
// time against every key (no early exit).
func (s *Server) lookup(secret string) (compiledKey, bool) {
	sum := sha256.Sum256([]byte(secret))
	found := -1
	for i := range s.keys {
		if subtle.ConstantTimeCompare(sum[:], s.keys[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return compiledKey{}, false
	}
	return s.keys[found], true
}

// authenticate resolves the caller and puts its core.Principal (the
// evidence source) in the request context.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var who caller
		secret := secretFrom(c)
		switch {
		case secret != "":
			k, ok := s.lookup(secret)
			if !ok {
				if s.cfg.InsecureLocal && len(s.keys) == 0 {
					who = caller{id: localPrincipal, admin: true}
					break
				}
				return s.authFailed(c, "unknown API key")
			}
			who = caller{id: k.ID, admin: k.Role == RoleAdmin, trusted: k.Trusted, projects: k.Projects, storeRead: k.StoreRead, storeWrite: k.StoreWrite}
		case s.cfg.InsecureLocal && len(s.keys) == 0:
			who = caller{id: localPrincipal, admin: true}
		default:
			return s.authFailed(c, "no API key")
		}
		c.Set(callerKey, who)
		p := core.Principal{ID: who.id, Admin: who.admin, Trusted: who.trusted, Projects: who.projects}
		if who.admin && strings.HasPrefix(c.Path(), "/admin/") {
			p.Human = true
		}
		r := c.Request()
		c.SetRequest(r.WithContext(core.WithPrincipal(r.Context(), p)))
		return next(c)
	}
}

// authFailed answers 401, or 429 once the client's address has used up
// its bucket of failed attempts: unauthenticated requests are rate limited
// too (per remote address, never a header a client chooses).
func (s *Server) authFailed(c echo.Context, why string) error {
	s.metrics.authFailures.Inc()
	if ok, wait := s.anon.allow("addr:" + remoteHost(c.Request().RemoteAddr)); !ok {
		s.metrics.rateLimited.WithLabelValues("unauthenticated").Inc()
		return &rateLimitedError{retryAfter: wait}
	}
	return fmt.Errorf("%s: %w", why, core.ErrUnauthorized)
}

func remoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// requireAdmin answers 403 unless the caller has the admin role.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !callerOf(c).admin {
			return fmt.Errorf("key %s: this route needs the admin role: %w", callerOf(c).id, core.ErrForbidden)
		}
		return next(c)
	}
}

// NewKey makes a fresh random secret (32 bytes, base64url, prefixed
// "mx_") and the hex SHA-256 to put in [[serve.keys]] secret_sha256.
func NewKey(random io.Reader) (secret, sha string, err error) {
	if random == nil {
		random = rand.Reader
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", "", fmt.Errorf("new key: %w", err)
	}
	secret = "mx_" + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashSecret(secret), nil
}

// HashSecret is the hex SHA-256 of a bearer secret (secret_sha256).
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
