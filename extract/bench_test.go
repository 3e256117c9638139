package extract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
)

// largeTranscript is a long run: n tool round-trips with outputs, a big
// Write, then a final answer (with secrets in outputs and answer when asked).
func largeTranscript(n int, secrets bool) []core.Event {
	var evs []core.Event
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		cmd := fmt.Sprintf("go test ./pkg/mod%d/... -run TestCase%d", i%50, i)
		out := strings.Repeat(fmt.Sprintf("=== RUN TestCase%d\n--- PASS: TestCase%d (0.01s)\n", i, i), 10)
		if secrets && i%25 == 0 {
			out += "DB_PASSWORD=Xk29fLq8Zp" + fmt.Sprint(i) + "\n"
		}
		evs = append(evs,
			core.Event{Kind: core.EventText, Text: "Running the next package's tests."},
			core.Event{Kind: core.EventToolCall, ToolID: id, Tool: "Bash", Command: cmd},
			core.Event{Kind: core.EventToolResult, ToolID: id, ExitCode: ptr(0), Text: out})
	}
	evs = append(evs,
		core.Event{Kind: core.EventToolCall, ToolID: "w", Tool: "Write", Args: `{"file_path":"big.go","content":"` + strings.Repeat("x", 200_000) + `"}`},
		core.Event{Kind: core.EventToolResult, ToolID: "w", OK: ptr(true)})
	final := strings.Repeat("All packages pass after pinning the toolchain in go.mod and caching modules in CI. ", 40)
	if secrets {
		final += " Token used: ghp_R8x2Lq9ZtV4mN7cP1sK6wY3hJ0dF5gB2aE8u."
	}
	return append(evs, core.Event{Kind: core.EventResult, Text: final})
}

func BenchmarkExtract(b *testing.B) {
	for _, secrets := range []bool{false, true} {
		evs := largeTranscript(2000, secrets)
		in := Input{Query: "make every package's tests pass", Passed: true, Strength: core.StrengthStrong, Events: evs}
		b.Run(fmt.Sprintf("events=%d/secrets=%v", len(evs), secrets), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, reason := Extract(in, DefaultConfig(), testRedactor); !ok {
					b.Fatal(reason)
				}
			}
		})
	}
}
