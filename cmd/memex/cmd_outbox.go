package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	httpstore "github.com/memex-dev/memex/plugins/http"
)

const outboxExamples = `  memex outbox status                 # writes spooled while the memory service was down
  memex outbox flush                  # deliver them now (each exactly once)
  memex outbox status --json
  MEMEX_STORE=https://memex.example.com memex outbox flush`

// outboxFlusher is a store that spools writes it could not deliver
// (plugins/http); memex run asks for it by method, staying plugin-agnostic.
type outboxFlusher interface {
	Flush(ctx context.Context) (delivered, remaining int, err error)
}

// outboxStore is what memex outbox needs of a store.
type outboxStore interface {
	FlushOutbox(ctx context.Context) (httpstore.FlushResult, error)
	OutboxStatus() (httpstore.OutboxStatus, error)
	OutboxDir() string
}

func cmdOutbox(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("outbox", "outbox flush|status [--json]", outboxExamples)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "flush" && pos[0] != "status") {
		return usagef("outbox: want one of: flush, status")
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	ob, ok := core.As[outboxStore](s.store)
	if !ok {
		return fmt.Errorf("outbox: the %s store has no outbox (only http(s):// stores spool writes)", s.store.Name())
	}
	if ob.OutboxDir() == "" {
		return errors.New("outbox: disabled (no data directory: set XDG_DATA_HOME or HOME)")
	}
	if pos[0] == "status" {
		st, err := ob.OutboxStatus()
		if err != nil {
			return err
		}
		if *asJSON {
			return jsonOut(a.stdout, st)
		}
		fmt.Fprintf(a.stdout, "outbox %s\npending: %d", st.Dir, st.Pending)
		if !st.Oldest.IsZero() {
			fmt.Fprintf(a.stdout, " (oldest spooled %s)", st.Oldest.Local().Format(time.RFC3339))
		}
		fmt.Fprintf(a.stdout, "\nfor other services: %d\nunreadable: %d\nrejected: %d\n", st.Other, st.Unreadable, st.Rejected)
		return nil
	}
	res, ferr := ob.FlushOutbox(ctx)
	if *asJSON {
		if err := jsonOut(a.stdout, res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "delivered: %d\nremaining: %d\nrejected: %d\n", res.Delivered, res.Remaining, res.Rejected)
		if res.RejectedFile != "" {
			fmt.Fprintf(a.stdout, "rejected writes are kept in %s\n", res.RejectedFile)
		}
	}
	return ferr
}

// flushOutbox delivers what earlier runs spooled, at the start of memex run:
// best-effort, bounded by the memory timeout, never fatal.
func (a *app) flushOutbox(ctx context.Context, store core.MemoryPlugin, timeout time.Duration, ev *eventsFile) {
	f, ok := core.As[outboxFlusher](store)
	if !ok {
		return
	}
	if timeout <= 0 {
		timeout = engine.DefaultMemoryTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delivered, remaining, err := f.Flush(fctx)
	if delivered > 0 || err != nil {
		data := map[string]any{"delivered": delivered, "remaining": remaining}
		if err != nil {
			data["error"] = err.Error()
		}
		ev.write("outbox.flush", data)
	}
	switch {
	case err != nil && errors.Is(err, httpstore.ErrFlushBusy):
		// Another run is delivering them.
	case err != nil:
		fmt.Fprintf(a.stderr, "memex: outbox: %d spooled writes delivered, %d left: %v\n", delivered, remaining, err)
	case delivered > 0:
		fmt.Fprintf(a.stderr, "memex: outbox: delivered %d spooled writes\n", delivered)
	}
}
