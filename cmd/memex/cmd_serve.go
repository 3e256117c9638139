package main

import (
	"context"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/gatekeeper"
	"github.com/memex-dev/memex/service"
	"github.com/memex-dev/memex/ui"
	"github.com/memex-dev/memex/wire"
)

const serveExamples = `  memex serve --store redis://127.0.0.1:6379/0 --config /etc/memex/config.toml
  memex serve --insecure-local                      # no keys, loopback only, every request is the local admin
  memex serve keys new --id team-ci --role agent --projects 'acme-*,global' --trusted`

func cmdServe(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 && args[0] == "keys" {
		return cmdServeKeys(a, args[1:])
	}
	fs, g := a.newFlagSet("serve", "serve [flags] | serve keys new [flags]", serveExamples)
	addr := fs.String("addr", "", "listen address (default: [serve] addr, else "+service.DefaultAddr+")")
	insecure := fs.Bool("insecure-local", false, "serve without API keys on loopback only; every request acts as the local admin")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve: unexpected argument %q (did you mean 'memex serve keys new'?)", pos[0])
	}
	s, err := a.setup(g)
	if err != nil {
		return err
	}
	listen := s.cfg.ServeAddr
	if *addr != "" {
		listen = *addr
	}
	cfg := s.cfg.Serve
	if *insecure {
		cfg.InsecureLocal = true
		if listen, err = loopbackOnly(listen); err != nil {
			return err
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.cfg.serving = true
	if err := a.openStore(ctx, s); err != nil {
		return err
	}
	defer func() { _ = s.close() }()

	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := newServerWithUI(s, cfg, logger, service.WithInjector(gatekeeperInjector(s.cfg.Engine.Gatekeeper)))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", listen, err)
	}
	mode := fmt.Sprintf("%d keys", len(cfg.Keys))
	if cfg.InsecureLocal {
		mode = "insecure-local: no keys required"
	}
	fmt.Fprintf(a.stderr, "memex serve: listening on http://%s (store %s, %s)\n", ln.Addr(), s.store.Name(), mode)
	fmt.Fprintf(a.stderr, "memex serve: dashboard on http://%s%s\n", ln.Addr(), ui.Prefix)
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(a.stderr, "memex serve: stopped")
	return nil
}

// loopbackOnly forces addr onto 127.0.0.1 (keeping its port); an explicit
// non-loopback host is refused.
func loopbackOnly(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usagef("serve: --addr %q: want host:port", addr)
	}
	switch host {
	case "", "127.0.0.1", "localhost":
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return addr, nil
	}
	return "", usagef("serve: --insecure-local serves on loopback only; --addr %s is not a loopback address", addr)
}

// gatekeeperInjector runs gatekeeper.Select + Render server-side for
// POST /v1/qa/inject, with the configured gatekeeper profile. The request's
// min_score, when given, is the gatekeeper's relevance floor too (the
// search already applied it); its seed makes the probation draw
// reproducible.
func gatekeeperInjector(base gatekeeper.Config) service.Injector {
	return func(_ context.Context, ms []core.Match, req wire.InjectRequest) (wire.InjectResponse, error) {
		cfg := base
		if req.MaxBlockChars > 0 {
			cfg.MaxBlockChars = req.MaxBlockChars
		}
		if req.MinScore != nil {
			cfg.MinScore = *req.MinScore
		}
		now := time.Now()
		seed1, seed2 := mrand.Uint64(), mrand.Uint64()
		if req.Seed != nil {
			seed1, seed2 = *req.Seed, *req.Seed
		}
		rng := mrand.New(mrand.NewPCG(seed1, seed2))
		d := gatekeeper.Select(ms, cfg, now, rng)
		block := gatekeeper.Render(d.Items, cfg, now)
		resp := wire.InjectResponse{Block: block.Text, Shown: block.Shown}
		for _, it := range d.Items {
			resp.Items = append(resp.Items, wire.InjectItem{Match: it.Match, Probation: it.Probation, Why: it.Why})
		}
		for _, r := range d.Reasons {
			resp.Reasons = append(resp.Reasons, wire.InjectReason{Code: r.Code, QAID: r.QAID, Detail: r.Detail})
		}
		return resp, nil
	}
}

const keysExamples = `  memex serve keys new --id team-ci --role agent --projects 'acme-*,global' --trusted
  memex serve keys new --id ops --role admin --projects '*'`

// cmdServeKeys is memex serve keys new: a fresh secret, printed once, and
// the [[serve.keys]] block holding only its hash.
func cmdServeKeys(a *app, args []string) error {
	if len(args) == 0 || args[0] != "new" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprintf(a.stdout, "Usage: memex serve keys new --id ID --role agent|admin --projects 'acme-*,global' [--trusted]\n\nExamples:\n%s\n", keysExamples)
			return nil
		}
		return usagef("serve keys: want 'memex serve keys new --id ID --role agent --projects PATTERNS'")
	}
	fs, _ := a.newFlagSet("serve keys new", "serve keys new --id ID --role agent|admin --projects PATTERNS [--trusted]", keysExamples)
	id := fs.String("id", "", "key id, shown in the audit log and metrics (required)")
	role := fs.String("role", service.RoleAgent, "agent or admin")
	projects := fs.String("projects", "", "comma-separated project patterns the key may read and write, e.g. 'acme-*,global' (required)")
	trusted := fs.Bool("trusted", false, "a trusted source whose verdicts anchor reputation (CI runners)")
	pos, err := a.parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve keys new: unexpected argument %q", pos[0])
	}
	var pats []string
	for _, p := range strings.Split(*projects, ",") {
		if p = strings.TrimSpace(p); p != "" {
			pats = append(pats, p)
		}
	}
	secret, sum, err := service.NewKey(nil)
	if err != nil {
		return err
	}
	k := service.Key{ID: *id, SecretSHA256: sum, Role: *role, Projects: pats, Trusted: *trusted}
	if err := (service.Config{Keys: []service.Key{k}}).Validate(); err != nil {
		return usagef("serve keys new: %s", strings.TrimPrefix(err.Error(), "serve.keys[0] "))
	}
	quoted := make([]string, len(pats))
	for i, p := range pats {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	w := a.stdout
	fmt.Fprintf(w, "# secret for key %q (shown once; give it to the client as MEMEX_API_KEY or a Bearer token):\n", *id)
	fmt.Fprintf(w, "# %s\n\n", secret)
	fmt.Fprintf(w, "[[serve.keys]]\nid = %q\nsecret_sha256 = %q\nrole = %q\nprojects = [%s]\ntrusted = %t\n",
		*id, sum, *role, strings.Join(quoted, ", "), *trusted)
	return nil
}
