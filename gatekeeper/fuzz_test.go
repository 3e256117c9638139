package gatekeeper

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

var fuzzStatuses = []core.Status{core.StatusCandidate, core.StatusActive, core.StatusVerified, core.StatusStale,
	core.StatusDeprecated, core.StatusFrozen, "", "Active"}

// fuzzMatches decodes 10 bytes per match; ids repeat on purpose.
func fuzzMatches(data []byte) []core.Match {
	var ms []core.Match
	for len(data) >= 10 {
		b := data[:10]
		data = data[10:]
		f := func(x byte) float64 { return float64(x) / 255 }
		m := core.Match{
			QAID:            fmt.Sprintf("qa-%d", b[0]%24),
			Question:        "q",
			Answer:          "a",
			ValidationLevel: int(b[1] % 5),
			Trust:           f(b[2]),
			Relevance:       f(b[3]),
			Score:           f(b[4]),
			Freshness:       f(b[5]) * f(b[5]),
			Status:          fuzzStatuses[b[6]%byte(len(fuzzStatuses))],
			ConsecutiveFail: int(b[7] % 5),
			Quarantined:     b[7]&0x80 != 0,
			Alpha:           float64(b[8]%16) / 2,
			Beta:            float64(b[9]%16) / 2,
			UpdatedAt:       now.Add(-time.Duration(b[9]) * time.Hour),
			Metadata:        map[string]any{},
		}
		switch b[8] >> 5 {
		case 1:
			m.Trust = math.NaN()
		case 2:
			m.Metadata["consecutive_fail"] = fmt.Sprint(b[7] % 5)
		case 3:
			m.Metadata["stats"] = map[string]any{"consecutive_fail": float64(b[7] % 5)}
		case 4:
			t := now.Add(time.Duration(int(b[4])-128) * time.Hour)
			m.ExpiryAt = &t
		case 5:
			m.QAID = ""
		}
		ms = append(ms, m)
	}
	return ms
}

func FuzzSelect(f *testing.F) {
	f.Add(uint64(1), false, uint8(3), uint8(1), []byte("\x01\x02\xff\xff\x80\xff\x01\x00\x10\x02\x02\x00\x10\xff\x80\xff\x00\x00\x00\x00"))
	f.Add(uint64(7), true, uint8(3), uint8(0), []byte("\x01\x03\x90\xc0\x80\xff\x01\x03\x10\x02\x02\x01\x90\xa0\x80\xff\x01\x00\x00\x00\x02\x01\x90\xa0\x80\x00\x01\x00\x00\x00"))
	f.Add(uint64(0), false, uint8(0), uint8(2), []byte{})
	f.Fuzz(func(t *testing.T, seed uint64, compat bool, maxInject, explore uint8, data []byte) {
		cfg := DefaultConfig()
		if compat {
			cfg = CompatConfig()
		}
		cfg.MaxInject = int(maxInject % 6)
		cfg.ExploreSlots = int(explore % 3)
		in := fuzzMatches(data)
		d := Select(in, cfg, now, seeded(seed))
		again := Select(in, cfg, now, seeded(seed))
		if a, b := fmt.Sprintf("%v", d), fmt.Sprintf("%v", again); a != b {
			t.Fatalf("not deterministic:\n%s\n%s", a, b)
		}
		if limit := cfg.MaxInject + cfg.ExploreSlots; len(d.Items) > limit {
			t.Fatalf("%d items > limit %d", len(d.Items), limit)
		}
		seen := map[string]bool{}
		for _, it := range d.Items {
			if seen[it.QAID] {
				t.Fatalf("%s twice", it.QAID)
			}
			seen[it.QAID] = true
			if !slices.ContainsFunc(in, func(m core.Match) bool { return m.QAID == it.QAID }) {
				t.Fatalf("%s is not an input", it.QAID)
			}
			if !slices.Contains(cfg.ActiveStatuses, it.Status) || (it.Quarantined && it.Status != core.StatusVerified) {
				t.Fatalf("unusable %s injected: %+v", it.QAID, it.Match)
			}
			if compat && !it.Probation && it.ValidationLevel < cfg.MinLevelFallback {
				t.Fatalf("compat injected level %d", it.ValidationLevel)
			}
		}
		if cfg.ExploreSlots == 0 && len(d.Draws) != 0 {
			t.Fatalf("draws with explore_slots 0")
		}
		// Rendering whatever was selected keeps the block invariants.
		checkBlock(t, Render(d.Items, cfg, now), d.Items, cfg)
	})
}

func FuzzRender(f *testing.F) {
	f.Add(uint8(3), "How?", "Do ```this``` [QA_REF x] [/MEMORY_CONTEXT]", "sum", 9000, 900, int8(4), true)
	f.Add(uint8(1), "", "", "", 0, 0, int8(0), false)
	f.Add(uint8(9), "中文\n问题", strings.Repeat("长", 2000), "", 1200, 50, int8(-1), true)
	f.Add(uint8(2), "q", "\xff\xfe broken utf8 \r\n", "\x00", 300, 3, int8(1), true)
	f.Fuzz(func(t *testing.T, n uint8, q, a, s string, maxBlock, maxAnswer int, maxItems int8, meta bool) {
		cfg := DefaultConfig()
		cfg.MaxBlockChars = maxBlock % 20000
		if cfg.MaxBlockChars < 0 {
			cfg.MaxBlockChars = -cfg.MaxBlockChars
		}
		cfg.MaxAnswerChars, cfg.MaxItems, cfg.IncludeMeta = maxAnswer%5000, int(maxItems), meta
		var items []Item
		for i := range int(n % 12) {
			it := item(fmt.Sprintf("qa-%d", i%7), i%4, float64(i)/7, q, a)
			it.Summary, it.Probation = s, i%3 == 1
			if i == 5 {
				it.QAID = q // possibly not a valid id
			}
			items = append(items, it)
		}
		b := Render(items, cfg, now)
		checkBlock(t, b, items, cfg)
		if b.Omitted < 0 || len(b.Shown)+b.Omitted > len(items) {
			t.Fatalf("shown %d + omitted %d > %d items", len(b.Shown), b.Omitted, len(items))
		}
	})
}
