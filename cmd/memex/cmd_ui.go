package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/memex-dev/memex/service"
	"github.com/memex-dev/memex/ui"
)

const uiExamples = `  memex ui                          # the dashboard of the local store on a free loopback port
  memex ui --addr 127.0.0.1:8765    # a fixed port
  memex ui --store ./team.db        # another store file`

// cmdUI serves the trust dashboard over the local store: loopback only, a
// random port unless --addr says otherwise, no key.
func cmdUI(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("ui", "ui [flags]", uiExamples)
	addr := fs.String("addr", "127.0.0.1:0", "listen address, loopback only (port 0: a free port)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("ui: unexpected argument %q", pos[0])
	}
	listen, err := loopbackOnly(*addr)
	if err != nil {
		return usagef("ui: --addr %s is not a loopback address: the dashboard of the local store is served to this machine only", *addr)
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	// The API in local mode, without its expiry job: looking at the store
	// changes nothing by itself.
	cfg := service.Config{InsecureLocal: true, ExpiryInterval: -1}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := newServerWithUI(s, cfg, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("ui: listen on %s: %w", listen, err)
	}
	fmt.Fprintf(a.stdout, "memex ui: http://%s%s (store %s, project %s; Ctrl-C stops)\n", ln.Addr(), ui.Prefix, s.store.Name(), s.project)
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	return nil
}

// newServerWithUI builds the API server over the session's store with the
// dashboard mounted at /ui/, calling that same server in process.
func newServerWithUI(s *session, cfg service.Config, logger *slog.Logger, opts ...service.Option) (*service.Server, error) {
	var api *service.Server
	dash, err := ui.New(ui.Config{
		API:      http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) }),
		Local:    cfg.InsecureLocal,
		Projects: []string{s.project},
		Logger:   logger,
	})
	if err != nil {
		return nil, err
	}
	opts = append([]service.Option{service.WithLogger(logger), service.WithHandler(ui.Prefix, dash)}, opts...)
	api, err = service.New(s.store, cfg, opts...)
	if err != nil {
		return nil, err
	}
	return api, nil
}
