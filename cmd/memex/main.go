// Command memex is the QA-knowledge gatekeeper for coding agents: it wraps an
// agent run with memory (memex run), and manages the memory by hand (search,
// qa, stats, grade, doctor, version). See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
