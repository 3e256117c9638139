package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/memex-dev/memex/engine"
)

// runSummary is the one line memex run prints on stderr after the run
// (unless --quiet): what memory did — how many QAs it injected (trusted and
// probation), how many the agent cited, what it learned — and the memory
// writes that failed.
func runSummary(pre engine.PreResult, post engine.PostResult) string {
	var parts []string
	shown := make(map[string]bool, len(pre.Shown))
	for _, id := range pre.Shown {
		shown[id] = true
	}
	trusted, probation := 0, 0
	for _, it := range pre.Decision.Items {
		switch {
		case !shown[it.QAID]:
		case it.Probation:
			probation++
		default:
			trusted++
		}
	}
	switch {
	case pre.MemoryErr != nil:
		parts = append(parts, "memory unavailable")
	case pre.Skipped != "":
		parts = append(parts, "injected nothing ("+strings.ReplaceAll(pre.Skipped, "_", " ")+")")
	case len(pre.Shown) == 0:
		parts = append(parts, "injected nothing")
	default:
		parts = append(parts, fmt.Sprintf("injected %d (%d trusted, %d probation)", len(pre.Shown), trusted, probation))
	}
	if len(pre.Notes) > 0 {
		parts = append(parts, fmt.Sprintf("%d notes", len(pre.Notes)))
	}
	if len(pre.Shown) > 0 {
		parts = append(parts, fmt.Sprintf("cited %d", len(post.Evaluation.Used)))
	}
	switch c := post.Candidate; {
	case c.Result != nil && c.Result.DeduplicatedInto != "":
		parts = append(parts, "reinforced "+c.Result.DeduplicatedInto)
	case c.Result != nil:
		parts = append(parts, "learned "+c.Result.QAID)
	case c.Skipped != "":
		parts = append(parts, "learned nothing ("+strings.ReplaceAll(c.Skipped, "_", " ")+")")
	}
	if n := len(post.Errors); n > 0 {
		parts = append(parts, fmt.Sprintf("%d memory writes failed", n))
	}
	return "memex: " + strings.Join(parts, " · ")
}

// spinnerFrames are drawn one per tick.
var spinnerFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// spinner shows that the agent is still working during its long silences
// (SPEC §8): after quiet without output it draws a frame and the elapsed
// time on one line of w (stderr, a terminal), and clears that line before
// any output of the agent is written. It is used only when w is a TTY.
type spinner struct {
	w     io.Writer
	quiet time.Duration
	tick  time.Duration

	mu    sync.Mutex
	start time.Time
	last  time.Time // the last output
	drawn bool      // a frame is on the line
	frame int
	done  chan struct{}
	wg    sync.WaitGroup
}

func newSpinner(w io.Writer, quiet, tick time.Duration) *spinner {
	now := time.Now()
	return &spinner{w: w, quiet: quiet, tick: tick, start: now, last: now, done: make(chan struct{})}
}

// run draws frames until stop.
func (s *spinner) run() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(s.tick)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case now := <-t.C:
				s.mu.Lock()
				if now.Sub(s.last) >= s.quiet {
					fmt.Fprintf(s.w, "\r\033[K%s memex: the agent is working… %s", spinnerFrames[s.frame%len(spinnerFrames)],
						now.Sub(s.start).Round(time.Second))
					s.frame++
					s.drawn = true
				}
				s.mu.Unlock()
			}
		}
	}()
}

// clear removes a drawn frame; the caller holds mu.
func (s *spinner) clear() {
	if s.drawn {
		fmt.Fprint(s.w, "\r\033[K")
		s.drawn = false
	}
}

// stop stops drawing and clears the line.
func (s *spinner) stop() {
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
}

// wrap returns w with the spinner's line cleared before every write and
// the silence restarted.
func (s *spinner) wrap(w io.Writer) io.Writer { return spinnerWriter{s, w} }

type spinnerWriter struct {
	s *spinner
	w io.Writer
}

func (sw spinnerWriter) Write(p []byte) (int, error) {
	sw.s.mu.Lock()
	defer sw.s.mu.Unlock()
	sw.s.clear()
	sw.s.last = time.Now()
	return sw.w.Write(p)
}
