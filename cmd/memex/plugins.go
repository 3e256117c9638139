package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/extract/redact"
	"github.com/memex-dev/memex/plugins/embedded"
	httpstore "github.com/memex-dev/memex/plugins/http"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/trust"
)

// opener opens the store a URL names.
type opener func(ctx context.Context, u *url.URL, cfg Config) (core.MemoryPlugin, error)

// registry maps store URL schemes to openers. Registration is explicit
// (defaultRegistry), never an init() side effect; a duplicate panics.
type registry struct{ openers map[string]opener }

func newRegistry() *registry { return &registry{openers: map[string]opener{}} }

func (r *registry) register(scheme string, o opener) {
	if _, dup := r.openers[scheme]; dup {
		panic("memex: store scheme registered twice: " + scheme)
	}
	r.openers[scheme] = o
}

func (r *registry) schemes() []string {
	out := make([]string, 0, len(r.openers))
	for s := range r.openers {
		out = append(out, s+"://")
	}
	sort.Strings(out)
	return out
}

// defaultRegistry is every store this build knows.
func defaultRegistry() *registry {
	r := newRegistry()
	r.register("file", openEmbedded)
	for _, s := range []string{"redis", "rediss", "redis+sentinel", "redis+cluster"} {
		r.register(s, openRedis)
	}
	for _, s := range []string{"http", "https"} {
		r.register(s, openHTTP)
	}
	return r
}

// open opens the store at rawURL. A URL without a scheme is a file path.
func (r *registry) open(ctx context.Context, rawURL string, cfg Config) (core.MemoryPlugin, error) {
	u, err := parseStoreURL(rawURL)
	if err != nil {
		return nil, err
	}
	o, ok := r.openers[u.Scheme]
	if !ok {
		return nil, fmt.Errorf("store %s: unknown scheme %q (known: %s)", redactURL(rawURL), u.Scheme, strings.Join(r.schemes(), ", "))
	}
	s, err := o(ctx, u, cfg)
	if err != nil {
		return nil, storeErr(rawURL, err)
	}
	return withRedaction(s, cfg), nil
}

// withRedaction puts s behind the one redaction every write passes
// (extract/redact.Store): no store, spool or remote service ever receives
// a secret. strict_secret_block refuses content holding one (ErrSecret).
func withRedaction(s core.MemoryPlugin, cfg Config) core.MemoryPlugin {
	policy := redact.PolicyRedact
	if cfg.Engine.Extract.StrictSecretBlock {
		policy = redact.PolicyBlock
	}
	return redact.WrapStore(s, redact.New(), policy)
}

func parseStoreURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, fmt.Errorf("store path: %w", err)
		}
		return &url.URL{Scheme: "file", Path: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("store URL %s: malformed", redactURL(raw))
	}
	return u, nil
}

// redactURL drops credentials from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.Index(raw, "@"); i >= 0 && strings.Contains(raw[:i], "://") {
			return raw[:strings.Index(raw, "://")+3] + "***@" + raw[i+1:]
		}
		return raw
	}
	u.User = url.User("***")
	return u.String()
}

func openEmbedded(_ context.Context, u *url.URL, cfg Config) (core.MemoryPlugin, error) {
	path := u.Path
	if u.Host != "" && u.Host != "localhost" {
		// file://relative/path: host is the first path element.
		path = filepath.Join(u.Host, u.Path)
	}
	if path == "" {
		return nil, fmt.Errorf("file:// URL needs a path")
	}
	// The single-user flavour (each run vouches, the creating run's --verify
	// counts), except behind memex serve, where keys vouch (SPEC §5.1).
	p := trust.DefaultParams()
	p.CountCreator = !cfg.serving
	if cfg.HalfLife > 0 {
		p.HalfLife = cfg.HalfLife
	}
	if cfg.CandidateTTL > 0 {
		p.CandidateTTL = cfg.CandidateTTL
	}
	opts := []embedded.Option{embedded.WithTrustParams(p)}
	if cfg.storeLockTimeout > 0 {
		opts = append(opts, embedded.WithLockTimeout(cfg.storeLockTimeout))
	}
	return embedded.Open(path, opts...)
}

// trustParams are the service-side trust parameters of the config (the
// creator's own reports do not count: SPEC §5.1).
func trustParams(cfg Config) trust.Params {
	p := trust.DefaultParams()
	if cfg.HalfLife > 0 {
		p.HalfLife = cfg.HalfLife
	}
	if cfg.CandidateTTL > 0 {
		p.CandidateTTL = cfg.CandidateTTL
	}
	return p
}

// openRedis opens a redis://, rediss://, redis+sentinel:// or
// redis+cluster:// store (plugins/redis parses the URL).
func openRedis(ctx context.Context, u *url.URL, cfg Config) (core.MemoryPlugin, error) {
	return redisstore.Open(ctx, u.String(), redisstore.WithTrustParams(trustParams(cfg)))
}

// openHTTP opens a remote memex serve: MEMEX_API_KEY is the bearer key and
// undeliverable writes spool to the outbox in the data directory.
func openHTTP(_ context.Context, u *url.URL, cfg Config) (core.MemoryPlugin, error) {
	if u.User != nil {
		return nil, fmt.Errorf("%s:// store URLs must not hold credentials: set MEMEX_API_KEY", u.Scheme)
	}
	c, err := httpstore.ParseURL(u.String()) // ?compat=&timeout=&retries=&cooldown=
	if err != nil {
		return nil, err
	}
	c.APIKey, c.OutboxDir = cfg.APIKey, cfg.OutboxDir
	return httpstore.New(c)
}

// closeStore closes s if it holds resources.
func closeStore(s core.MemoryPlugin) error {
	if c, ok := core.As[io.Closer](s); ok {
		return c.Close()
	}
	return nil
}
