package service

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
)

// jsonBound is never below what json.Marshal writes, whatever the strings
// hold (escapes, invalid UTF-8, U+2028) and whatever the numbers are.
func TestJSONBoundCoversMarshal(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", "<>&\"\\\n\t\x00\x1f", "\xff\xfe\xfd", "\u2028\u2029", "日本語",
		0.0, math.Copysign(0, -1), 1.0, -1.2345678901234567e-308, 1.2345678901234567e-7, -123456789012345678901.0, 9.999999999999999e20,
		math.MaxFloat64, -math.SmallestNonzeroFloat64, float32(-1.2345678e-38),
		math.MinInt64, int64(math.MinInt64), uint64(math.MaxUint64), int32(math.MinInt32), uint32(math.MaxUint32), uint(math.MaxUint),
		[]any{}, []any{nil, "x", 1.5, []any{"<"}},
		map[string]any{}, map[string]any{"consecutive_fail": 3, "stats": map[string]any{"consecutive_fail": 3, "k\xff<": "v\u2028"}},
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := jsonBound(v)
		if !ok || n < len(b) {
			t.Errorf("jsonBound(%#v) = %d, %v; json.Marshal writes %d bytes", v, n, ok, len(b))
		}
	}
	if _, ok := jsonBound(map[string]any{"n": json.Number("1")}); ok {
		t.Error("jsonBound knows json.Number: it must say it does not")
	}
}

// boundMatches cuts where the exact count (metadata encoded) says, with or
// without the bound's shortcut.
func TestBoundMatchesMetadata(t *testing.T) {
	mk := func(md map[string]any) core.Match {
		return core.Match{QAID: "qa", Question: "q", Answer: "a", Metadata: md}
	}
	small := mk(map[string]any{"consecutive_fail": 0, "stats": map[string]any{"consecutive_fail": 0}})
	big := mk(map[string]any{"blob": strings.Repeat("<", 1000)}) // 6,000 B encoded
	unknown := mk(map[string]any{"n": json.Number("12345")})
	exact := func(ms []core.Match, max int) int {
		total := 0
		for i, m := range ms {
			total += matchSize(m, metadataBytes(m.Metadata))
			if total > max && i > 0 {
				return i
			}
		}
		return len(ms)
	}
	for _, tc := range []struct {
		name string
		ms   []core.Match
		max  int
	}{
		{"all fit", []core.Match{small, small, small}, 4096},
		{"metadata over the bound", []core.Match{small, big, small}, 7300},
		{"escapes counted", []core.Match{big, big}, 13000},
		{"first always kept", []core.Match{big, small}, 10},
		{"unknown type", []core.Match{unknown, unknown, unknown}, 1100},
	} {
		got, want := len(boundMatches(tc.ms, tc.max)), exact(tc.ms, tc.max)
		if got != want {
			t.Errorf("%s: kept %d matches, the exact count keeps %d", tc.name, got, want)
		}
	}
	if n := len(boundMatches([]core.Match{small, big, small}, 7300)); n != 2 {
		t.Errorf("kept %d matches, want 2 (the second's metadata is 6,000 bytes of JSON)", n)
	}
}
