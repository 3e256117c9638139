package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is where the dashboard is served.
const Prefix = "/ui/"

// CookieName is the cookie that holds the signed-in key.
const CookieName = "memex_ui_key"

// cookieMaxAge is how long a sign-in lasts.
const cookieMaxAge = 12 * time.Hour

// Config configures the dashboard.
type Config struct {
	// API is the memex HTTP API (service.Server), called in process.
	API http.Handler
	// Local: the API needs no key (memex ui, memex serve --insecure-local):
	// there is no login and every request acts as the local admin.
	Local bool
	// Projects are listed when the store cannot list its projects (the
	// embedded store): memex ui passes the current project.
	Projects []string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger logs unexpected errors (silent by default).
	Logger *slog.Logger
	// Random is the source of the CSRF secret (default crypto/rand).
	Random io.Reader
}

// Handler serves the dashboard under Prefix. It is an http.Handler.
type Handler struct {
	cfg    Config
	mux    *http.ServeMux
	tmpl   map[string]*template.Template
	static http.Handler
	csrf   []byte // HMAC key of the CSRF tokens, fresh at every start
	log    *slog.Logger
}

// New builds the dashboard over cfg.API.
func New(cfg Config) (*Handler, error) {
	if cfg.API == nil {
		return nil, errors.New("ui: nil API handler")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	h := &Handler{cfg: cfg, log: cfg.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.csrf = make([]byte, 32)
	if _, err := io.ReadFull(cfg.Random, h.csrf); err != nil {
		return nil, errors.New("ui: reading the CSRF secret: " + err.Error())
	}
	tm, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	h.tmpl = tm
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	h.static = http.StripPrefix(Prefix+"static/", http.FileServerFS(static))

	m := http.NewServeMux()
	m.HandleFunc("GET "+Prefix+"static/", h.serveStatic)
	m.HandleFunc("GET "+Prefix+"login", h.loginForm)
	m.HandleFunc("POST "+Prefix+"login", h.login)
	m.HandleFunc("POST "+Prefix+"logout", h.logout)
	m.HandleFunc("GET "+Prefix+"{$}", h.authed(h.projectsPage))
	m.HandleFunc("GET "+Prefix+"p/{project}", h.authed(h.projectPage))
	m.HandleFunc("GET "+Prefix+"p/{project}/qas", h.authed(h.qasPage))
	m.HandleFunc("GET "+Prefix+"p/{project}/qa/{id}", h.authed(h.qaPage))
	m.HandleFunc("POST "+Prefix+"p/{project}/qa/{id}/verdict", h.authed(h.verdict))
	m.HandleFunc("POST "+Prefix+"p/{project}/qa/{id}/edit", h.authed(h.edit))
	m.HandleFunc("GET "+Prefix+"audit", h.authed(h.auditPage))
	m.HandleFunc("GET "+Prefix+"runs", h.authed(h.runsPage))
	m.HandleFunc(Prefix, h.notFound)
	h.mux = m
	return h, nil
}

// ServeHTTP implements http.Handler: every response carries the security
// headers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusFound)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) serveStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	h.static.ServeHTTP(w, r)
}

// session is the signed-in visitor of one request.
type session struct {
	key  string // the API key; "" in local mode
	csrf string // the token its forms carry
}

type pageFunc func(w http.ResponseWriter, r *http.Request, s session)

// authed resolves the session (the cookie, or local mode) and sends
// visitors without one to the login form. POSTs must carry the session's
// CSRF token and come from this origin.
func (h *Handler) authed(next pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var s session
		if !h.cfg.Local {
			c, err := r.Cookie(CookieName)
			if err != nil || c.Value == "" {
				h.toLogin(w, r)
				return
			}
			s.key = c.Value
		}
		s.csrf = h.csrfToken(s.key)
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodPost {
			if !sameOrigin(r) || !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) {
				h.fail(w, r, s, http.StatusForbidden, "This form is stale or came from another site (CSRF check failed). Reload the page and try again.")
				return
			}
		}
		next(w, r, s)
	}
}

func (h *Handler) toLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		h.fail(w, r, session{}, http.StatusUnauthorized, "Sign in first.")
		return
	}
	http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

// csrfToken is HMAC(secret, SHA-256(key)): bound to the key and to this
// process.
func (h *Handler) csrfToken(key string) string {
	sum := sha256.Sum256([]byte(key))
	m := hmac.New(sha256.New, h.csrf)
	m.Write([]byte("memex-ui-csrf\x00"))
	m.Write(sum[:])
	return hex.EncodeToString(m.Sum(nil))
}

// sameOrigin rejects cross-site form posts by their Fetch metadata and
// Origin headers (browsers send them; a request without either passes to
// the token check).
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	return true
}

// safeNext keeps a post-login redirect inside the dashboard.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Local {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	h.render(w, r, http.StatusOK, "login", page{Title: "Sign in", NoNav: true, Data: loginView{Next: safeNext(r.URL.Query().Get("next"))}})
}

type loginView struct {
	Next  string
	Error string
}

// login checks the key against the API (an admin route: an agent key is
// refused) and keeps it in the cookie.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Local {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	next := safeNext(r.PostFormValue("next"))
	key := strings.TrimSpace(r.PostFormValue("key"))
	fail := func(code int, msg string) {
		h.render(w, r, code, "login", page{Title: "Sign in", NoNav: true, Data: loginView{Next: next, Error: msg}})
	}
	if !sameOrigin(r) {
		fail(http.StatusForbidden, "Sign-in refused: the form came from another site.")
		return
	}
	if key == "" {
		fail(http.StatusBadRequest, "Enter an API key.")
		return
	}
	var out struct{}
	err := h.api(r, session{key: key}, http.MethodGet, "/admin/v1/projects", nil, &out)
	var ae *apiError
	switch {
	case err == nil:
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		fail(http.StatusUnauthorized, "Unknown API key.")
		return
	case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
		fail(http.StatusForbidden, "This key is not an admin key: the dashboard needs the admin role.")
		return
	case errors.As(err, &ae) && ae.Status == http.StatusNotImplemented:
		// The store cannot list projects; the key is still good.
	default:
		fail(http.StatusBadGateway, "Could not check the key: "+err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: key, Path: Prefix, MaxAge: int(cookieMaxAge / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, session{}, http.StatusNotFound, "No such page.")
}
