package redact

import (
	"strings"
	"testing"
	"time"
)

// FuzzRedact checks the redaction invariants on any input: no panic,
// findings ordered, non-overlapping and inside the input, redaction
// idempotent, and nothing detectable left in the output.
func FuzzRedact(f *testing.F) {
	r := New()
	for _, rule := range r.Rules() {
		for _, s := range rule.True {
			f.Add(s)
		}
	}
	f.Add("password=[REDACTED:password-assignment]x")
	f.Add("token [REDACTED:jwt][REDACTED:jwt] sk-")
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("slow: %v for %d bytes", d, len(s))
			}
		}()
		fs := r.Find(s)
		last := 0
		for _, x := range fs {
			if x.Start < last || x.End <= x.Start || x.End > len(s) {
				t.Fatalf("bad finding %+v (previous end %d, len %d)", x, last, len(s))
			}
			last = x.End
		}
		out, rfs := r.Redact(s)
		if len(fs) == 0 && (out != s || len(rfs) != 0) {
			t.Fatalf("nothing found but output changed")
		}
		if more := r.Find(out); len(more) != 0 {
			t.Fatalf("output still has %s at %d:%d: %q", more[0].Rule, more[0].Start, more[0].End, out)
		}
		again, afs := r.Redact(out)
		if again != out || len(afs) != 0 {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
		if len(rfs) > 0 && !strings.Contains(out, "[REDACTED:") {
			t.Fatalf("findings but no marker")
		}
	})
}
