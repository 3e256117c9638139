package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/extract/redact"
)

// eventsFile writes the JSONL events of one run (--events FILE): run
// start, search result, decision with reasons, every backend event, post
// records, run end. Every line goes through the redactor first, so no
// secret the agent printed reaches the file. Safe for concurrent use.
type eventsFile struct {
	mu    sync.Mutex
	f     *os.File
	w     *bufio.Writer
	red   *redact.Redactor
	lines *redact.Lines // carries a private key printed over several events
	runID string
	now   func() time.Time
	err   error
}

func openEvents(path, runID string, red *redact.Redactor) (*eventsFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("events file: %w", err)
	}
	return &eventsFile{f: f, w: bufio.NewWriter(f), red: red, lines: red.NewLines(), runID: runID, now: time.Now}, nil
}

// write appends one event {ts, type, run_id, data}. data is encoded to JSON,
// decoded back to plain values and redacted string by string (keys too).
// The first write error is kept and reported by close.
func (e *eventsFile) write(typ string, data any) {
	if e == nil {
		return
	}
	if ev, ok := data.(core.Event); ok && ev.Text != "" {
		// Agent events come one line at a time: redact their text as a
		// stream so a multi-line key is caught whole.
		e.mu.Lock()
		ev.Text, _ = e.lines.Redact(ev.Text)
		e.mu.Unlock()
		data = ev
	}
	var v any
	if b, err := json.Marshal(data); err == nil {
		_ = json.Unmarshal(b, &v)
	}
	v, _ = e.red.RedactValue(v)
	line, err := json.Marshal(struct {
		TS    string `json:"ts"`
		Type  string `json:"type"`
		RunID string `json:"run_id"`
		Data  any    `json:"data,omitempty"`
	}{e.now().UTC().Format(time.RFC3339Nano), typ, e.runID, v})
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.err = cmpErr(e.err, err)
		return
	}
	line = append(line, '\n')
	if _, err := e.w.Write(line); err != nil {
		e.err = cmpErr(e.err, err)
	}
}

func cmpErr(old, new error) error {
	if old != nil {
		return old
	}
	return new
}

// flush writes the buffered events out (before another process appends).
func (e *eventsFile) flush() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.err = cmpErr(e.err, e.w.Flush())
}

func (e *eventsFile) close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	err := cmpErr(e.err, e.w.Flush())
	err = cmpErr(err, e.f.Close())
	if err != nil {
		return fmt.Errorf("events file: %w", err)
	}
	return nil
}
