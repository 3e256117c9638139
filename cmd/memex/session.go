package main

import (
	"context"
	"fmt"

	"github.com/memex-dev/memex/core"
)

// session is what a command works with: the resolved config, the working
// directory, the project and (when opened) the store.
type session struct {
	cfg         Config
	cwd         string
	project     string
	projectFrom string
	storeURL    string
	store       core.MemoryPlugin
}

// setup loads the config and resolves the project; it does not open the
// store.
func (a *app) setup(g *globalFlags) (*session, error) {
	cwd, err := a.getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	cfg, err := loadConfig(a.getenv, cwd, g)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(a.stderr, "memex: warning: %s\n", w)
	}
	s := &session{cfg: cfg, cwd: cwd}
	s.project, s.projectFrom = resolveProject(cfg, cwd)
	return s, nil
}

// openStore opens the configured store.
func (a *app) openStore(ctx context.Context, s *session) error {
	u, err := s.cfg.storeURL(a.getenv)
	if err != nil {
		return err
	}
	s.storeURL = u
	st, err := a.registry.open(ctx, u, s.cfg)
	if err != nil {
		return err
	}
	s.store = st
	return nil
}

// open is setup followed by openStore; the caller closes the session.
func (a *app) open(ctx context.Context, g *globalFlags) (*session, error) {
	s, err := a.setup(g)
	if err != nil {
		return nil, err
	}
	if err := a.openStore(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *session) close() error {
	if s == nil || s.store == nil {
		return nil
	}
	return closeStore(s.store)
}

// capability asserts an optional store capability with a clear error.
func capability[T any](s *session, what string) (T, error) {
	c, ok := core.As[T](s.store)
	if !ok {
		var zero T
		return zero, fmt.Errorf("the %s store cannot %s", s.store.Name(), what)
	}
	return c, nil
}
