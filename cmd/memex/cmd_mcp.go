package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/mcpserver"
)

const mcpExamples = `  memex mcp                                   # serve this project's memory on stdio
  claude mcp add memex -- memex mcp           # register it with Claude Code
  codex mcp add memex -- memex mcp            # … with Codex
  gemini mcp add memex memex mcp              # … with Gemini CLI`

// cmdMCP serves memex's tools over the Model Context Protocol on stdio
// (JSON-RPC on stdin/stdout; diagnostics on stderr).
func cmdMCP(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("mcp", "mcp [flags]   (an MCP server on stdio: memex_search, memex_memory_block, memex_record_candidate, memex_validate, memex_stats)", mcpExamples)
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("mcp: unexpected argument %q", pos[0])
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []mcpserver.Option{mcpserver.WithLogger(logger)}
	if st := a.runNotes(s, true); st != nil {
		// Scoped notes: the tools, and the notes in memex_memory_block.
		opts = append(opts, mcpserver.WithNotes(st, a.scopeContext(s, s.cfg.Scopes.Session)),
			mcpserver.WithEngineOptions(engine.WithNotes(a.noteRecaller(s, st, s.cfg.Scopes.Session))))
	}
	srv := mcpserver.New(s.store, mcpserver.Config{ProjectID: s.project, Version: version, Engine: s.cfg.Engine}, opts...)
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
