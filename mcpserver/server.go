// Package mcpserver exposes memex over the Model Context Protocol for agents
// that prefer tools to wrappers and hooks: search the memory, get the
// gatekeeper's memory block for a query, record a candidate, validate a QA
// with its receipt, and read the project's trust statistics. It serves any
// core.MemoryPlugin through the same engine `memex run` and the hooks use;
// cmd/memex wires the store and runs it on stdio (`memex mcp`).
//
// # Adding tools
//
// Each group of tools is one method of Server registering them on the
// *mcp.Server (tools.go holds memex's QA tools). Add a file with a method
// func (s *Server) addXTools(srv *mcp.Server) and call it from register.
// Tool names are prefixed memex_; every input field has a jsonschema
// description, and handlers return errors (the SDK reports them to the
// client as tool errors), never panic.
package mcpserver

import (
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/extract/redact"
)

// Config is what the server needs besides the store.
type Config struct {
	// ProjectID is the project every tool works in.
	ProjectID string
	// Version is reported to clients.
	Version string
	// Engine configures the search and the gatekeeper (engine.DefaultConfig
	// when zero).
	Engine engine.Config
}

// Server holds the tools' dependencies.
type Server struct {
	store   core.MemoryPlugin
	eng     *engine.Engine
	cfg     Config
	red     *redact.Redactor
	now     func() time.Time
	logger  *slog.Logger
	engOpts []engine.Option
	items   core.ItemStore    // nil: no note tools
	scopes  core.ScopeContext // the ids the note tools' scopes resolve from
}

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithLogger sets the logger (default: silent).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.logger = l } }

// WithEngineOptions passes options to the engine (a seeded draw, hooks).
func WithEngineOptions(opts ...engine.Option) Option {
	return func(s *Server) { s.eng = nil; s.engOpts = append(s.engOpts, opts...) }
}

// New returns the MCP server over store.
func New(store core.MemoryPlugin, cfg Config, opts ...Option) *mcp.Server {
	s := &Server{store: store, cfg: cfg, red: redact.New(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Engine.Gatekeeper.MaxInject == 0 && cfg.Engine.SearchLimit == 0 {
		s.cfg.Engine = engine.DefaultConfig()
	}
	s.eng = engine.New(store, s.cfg.Engine, append([]engine.Option{engine.WithRedactor(s.red), engine.WithClock(s.now)}, s.engOpts...)...)
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "memex", Title: "memex — trusted QA memory", Version: version}, &mcp.ServerOptions{
		Instructions: "memex is a memory of question → answer records (QAs) with trust scores learned from real outcomes. " +
			"Call memex_memory_block with the task before working on it; cite an item you use as [QA_REF <qa_id>]. " +
			"After your tests or build ran, report each QA you relied on with memex_validate (pass or fail, with its receipt_id). " +
			"Record a solution that proved itself with memex_record_candidate. Never put secrets in a QA.",
		Logger: s.logger,
	})
	s.register(srv)
	return srv
}

// register adds every tool group.
func (s *Server) register(srv *mcp.Server) {
	s.addQATools(srv)
	s.addNoteTools(srv)
}
