package redact

import (
	"bytes"
	"io"
)

// maxPending bounds what a Writer holds while waiting for the end of a
// line; a longer line is redacted and written in pieces.
const maxPending = 1 << 20

// Writer is an io.Writer that redacts complete lines before passing them on:
// what it writes to the underlying writer has been through Redact, line by
// line. A private key printed over several lines (even one Write per line)
// is redacted whole: the Writer remembers an open key block (see Lines). Call Flush (or Close) at the end to write a last partial line.
// A Writer is not safe for concurrent use.
type Writer struct {
	r       *Lines
	w       io.Writer
	pending []byte
	n       int // findings redacted so far
}

// NewWriter returns a Writer redacting into w.
func (r *Redactor) NewWriter(w io.Writer) *Writer { return &Writer{r: r.NewLines(), w: w} }

// Write buffers p and writes every complete line, redacted. It reports
// len(p) written unless the underlying writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	i := bytes.LastIndexByte(w.pending, '\n')
	if i < 0 {
		if len(w.pending) < maxPending {
			return len(p), nil
		}
		i = len(w.pending) - 1
	}
	if err := w.emit(w.pending[:i+1]); err != nil {
		return 0, err
	}
	w.pending = append(w.pending[:0], w.pending[i+1:]...)
	return len(p), nil
}

// Flush redacts and writes a pending partial line.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	err := w.emit(w.pending)
	w.pending = w.pending[:0]
	return err
}

// Close flushes; it does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }

// Redactions returns how many findings the Writer has redacted.
func (w *Writer) Redactions() int { return w.n }

func (w *Writer) emit(b []byte) error {
	out, fs := w.r.Redact(string(b))
	w.n += len(fs)
	_, err := io.WriteString(w.w, out)
	return err
}
