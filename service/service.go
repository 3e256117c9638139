package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/memex-dev/memex/core"
)

// Option configures a Server.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	reg      prometheus.Registerer
	clock    func() time.Time
	injector Injector
	items    core.ItemStore
	mounts   []mount
}

// mount is a handler served under a path prefix (the dashboard).
type mount struct {
	prefix string
	h      http.Handler
}

// WithItems sets the namespaced store of /v1/store/… (default: the
// store's own, when it is a core.ItemsProvider; without one those routes
// answer 501).
func WithItems(st core.ItemStore) Option { return func(o *options) { o.items = st } }

// WithLogger sets the logger (silent by default). Only unexpected (5xx)
// errors and lifecycle events are logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRegisterer registers the server's metrics on reg instead of its own
// prometheus.NewRegistry. /metrics serves reg when it is also a
// prometheus.Gatherer (a *prometheus.Registry is both).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// WithClock injects the clock (receipts, audit times, expiry).
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithInjector sets the server-side gatekeeper of POST /v1/qa/inject
// (cmd/memex wires gatekeeper.Select + Render). Without it the route
// answers 501.
func WithInjector(f Injector) Option { return func(o *options) { o.injector = f } }

// WithHandler serves h for every path under prefix (which ends in "/"),
// behind the request id, panic recovery, metrics and body limit but not the
// API's authentication: h does its own (cmd/memex mounts the dashboard,
// package ui, at /ui/).
func WithHandler(prefix string, h http.Handler) Option {
	return func(o *options) { o.mounts = append(o.mounts, mount{prefix: prefix, h: h}) }
}

// Server is the memex HTTP API. It is an http.Handler.
type Server struct {
	e        *echo.Echo
	store    core.MemoryPlugin
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	injector Injector
	gatherer prometheus.Gatherer
	routeSet map[string]bool // "METHOD /path/:param" of every route
	metrics  *metrics

	mounts []mount
	stats  *statsCache

	keys      []compiledKey
	limiter   *limiter
	anon      *limiter // failed authentications, per remote address
	idem      *idemCache
	receipts  core.Receipts  // nil: receipts are off
	auditor   core.Auditor   // the store's, else an in-memory log
	itemStore core.ItemStore // nil: /v1/store/… answer 501
}

// New builds the server for store. It validates cfg (no keys without
// InsecureLocal is an error) and registers the metrics.
func New(store core.MemoryPlugin, cfg Config, opts ...Option) (*Server, error) {
	if store == nil {
		return nil, errors.New("service: nil store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{clock: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		store:    store,
		cfg:      cfg,
		log:      o.logger.With("component", "service"),
		now:      o.clock,
		injector: o.injector,
		mounts:   o.mounts,
		stats:    newStatsCache(),
		keys:     compileKeys(cfg.Keys),
		limiter:  newLimiter(cfg.RateLimit, cfg.RateBurst, o.clock),
		anon:     newLimiter(AuthFailRate, AuthFailBurst, o.clock),
		idem:     newIdemCache(cfg.IdempotencyTTL, cfg.IdempotencyMaxBytes, o.clock),
	}
	if r, ok := core.As[core.Receipts](store); ok {
		s.receipts = r
	}
	s.itemStore = o.items
	if ip, ok := core.As[core.ItemsProvider](store); ok && s.itemStore == nil {
		s.itemStore = ip.Items()
	}
	if a, ok := core.As[core.Auditor](store); ok {
		s.auditor = a
	} else {
		s.auditor = newMemAudit(10000)
	}
	reg := o.reg
	if reg == nil {
		// The server's own registry carries the Go runtime's and the
		// process's series too (memory, GC, goroutines, CPU, open files).
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg, s.gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		s.gatherer = g
	}
	m, err := newMetrics(reg, s)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.e = s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// Serve serves on ln until ctx is done, runs the expiry job on its timer,
// then shuts down gracefully within Config.ShutdownTimeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytesHard,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	jobCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.RunExpiry(jobCtx)
	}()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "store", s.store.Name())
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		err = hs.Shutdown(sctx)
		cancel()
		_ = <-errc // http.ErrServerClosed, after Shutdown
	}
	stopJobs()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// RunExpiry runs the expiry job every Config.ExpiryInterval until ctx is
// done. It does nothing when the interval is negative or the store cannot
// expire.
func (s *Server) RunExpiry(ctx context.Context) {
	ex, ok := core.As[core.Expirer](s.store)
	if !ok || s.cfg.ExpiryInterval < 0 {
		return
	}
	t := time.NewTicker(s.cfg.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			n, err := ex.Expire(rctx, s.now(), s.cfg.ExpiryBatch)
			cancel()
			if err != nil {
				s.metrics.storeErrors.WithLabelValues("expire").Inc()
				s.log.Warn("expiry job failed", "op", "expire", "error", err)
				continue
			}
			s.metrics.expired.Add(float64(n))
			if n > 0 {
				s.audit(context.WithoutCancel(ctx), core.AuditEntry{KeyID: "system", ProjectID: core.GlobalProject, Action: "expire", Weight: 1, After: map[string]any{"expired": n, "scope": "all projects"}})
			}
		}
	}
}

// routes builds the echo router: every route of SPEC §7.
func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Pre(s.requestID, s.headerLimit, s.methodNotAllowed)
	e.Use(s.recoverPanic, s.instrument, s.bodyLimit)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/openapi.json", s.openapi)
	if s.cfg.PublicMetrics {
		e.GET("/metrics", s.serveMetrics)
	} else {
		e.GET("/metrics", s.serveMetrics, s.authenticate, s.requireAdmin)
	}

	v1 := e.Group("/v1", s.authenticate, s.rateLimit)
	v1.POST("/qa/search", s.search)
	v1.POST("/qa/inject", s.inject)
	v1.POST("/qa/candidates", s.candidate)
	v1.POST("/qa/hit", s.hit)
	v1.POST("/qa/validate", s.validate)
	v1.GET("/qa/:qa_id", s.get)
	v1.GET("/qa", s.list)
	v1.DELETE("/qa/:qa_id", s.remove)
	v1.POST("/qa/expire", s.expire, s.requireAdmin)
	v1.POST("/task/grade", s.grade)
	s.storeRoutes(v1)

	adm := e.Group("/admin/v1", s.authenticate, s.rateLimit, s.requireAdmin)
	adm.GET("/projects", s.adminProjects)
	adm.GET("/projects/:project_id/stats", s.adminStats)
	adm.PATCH("/qa/:qa_id", s.adminPatch)
	for _, v := range core.Verdicts() {
		adm.POST("/qa/:qa_id/"+string(v), s.adminVerdict(v))
	}
	adm.GET("/audit", s.adminAudit)
	adm.GET("/export", s.adminExport)
	adm.POST("/import", s.adminImport)

	for _, m := range s.mounts {
		h := echo.WrapHandler(m.h)
		e.Any(m.prefix+"*", h)
		if p := strings.TrimSuffix(m.prefix, "/"); p != "" && p != m.prefix {
			e.Any(p, h)
		}
	}
	s.routeSet = map[string]bool{}
	for _, r := range e.Routes() {
		s.routeSet[r.Method+" "+r.Path] = true
	}
	return e
}

// routeMethods are the methods the API serves on some route.
var routeMethods = [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// routed reports whether a route serves method on path.
func (s *Server) routed(method, path string) bool {
	c := s.e.AcquireContext()
	defer s.e.ReleaseContext(c)
	c.Reset(nil, nil)
	s.e.Router().Find(method, path, c)
	return s.routeSet[method+" "+c.Path()]
}

// methodNotAllowed answers 405 (with Allow) for a path that some route
// serves with another method. Routing alone does not: the groups'
// middleware (authentication first) would answer 401/403 or 404 first.
func (s *Server) methodNotAllowed(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		if s.routed(r.Method, path) {
			return next(c)
		}
		var allow []string
		for _, m := range routeMethods {
			if m != r.Method && s.routed(m, path) {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			return next(c)
		}
		c.Response().Header().Set("Allow", strings.Join(allow, ", "))
		return echo.ErrMethodNotAllowed
	}
}

// MaxHeaderBytes is the most request-header bytes the server reads (the
// request line and every header line): more is answered 431 in the
// error shape. net/http's own limit (which answers in plain text) is set
// well above it, at maxHeaderBytesHard.
const (
	MaxHeaderBytes     = 1 << 20
	maxHeaderBytesHard = 4 << 20
)

// headerLimit answers 431 when the request's headers exceed MaxHeaderBytes.
func (s *Server) headerLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
		for k, vs := range r.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		if n > MaxHeaderBytes {
			return &headersTooLargeError{}
		}
		return next(c)
	}
}

// saneRequestID reports whether id is 1–128 bytes of [A-Za-z0-9._:/+=-]
// (hand-written: a regexp would be compiled at every memex start-up).
func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '/', c == '+', c == '=', c == '-':
		default:
			return false
		}
	}
	return true
}

// requestID honours a sane incoming X-Request-Id, else makes one, and sets
// it on the response.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !saneRequestID(id) {
			id = randomID(8)
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// recoverPanic turns a handler panic into a logged 500.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("handler panic", "route", c.Path(), "panic", r)
				err = errors.New("handler panic")
			}
		}()
		return next(c)
	}
}

// bodyLimit caps the request body; reading past it fails with
// *http.MaxBytesError, which the error handler maps to 413.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.cfg.BodyLimit {
			return &http.MaxBytesError{Limit: s.cfg.BodyLimit}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, s.cfg.BodyLimit)
		return next(c)
	}
}

// instrument observes the latency of every request by route and code.
func (s *Server) instrument(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status, _, _, _ = errorStatus(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		s.metrics.requests.WithLabelValues(route, c.Request().Method, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return err
	}
}

// reqCtx is the request's context bounded by Config.RequestTimeout.
func (s *Server) reqCtx(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), s.cfg.RequestTimeout)
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
