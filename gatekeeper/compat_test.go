package gatekeeper

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/memex-dev/memex/core"
)

// TestCompatProfile pins the original Memex-CLI's prepare_inject_list
// (ORIGINAL.md §1.2) and candidate decision (§1.7) under CompatConfig.
func TestCompatProfile(t *testing.T) {
	past := now.Add(-time.Hour)
	tests := []struct {
		name      string
		cfg       func(*Config)
		in        []core.Match
		want      []string
		wantWrite bool
		reasons   map[string]string // qa_id → code ("" key: a global code)
	}{
		{name: "empty", in: nil, want: []string{}, wantWrite: true},
		{
			name:      "main pass takes L2+ with trust >= 0.4 in tuple order",
			in:        []core.Match{mk("a", 2, 0.5, 0.6, 1), mk("b", 3, 0.45, 0.5, 1), mk("c", 2, 0.9, 0.4, 1)},
			want:      []string{"b", "c", "a"},
			wantWrite: false,
			reasons:   map[string]string{"a": ReasonChosenTrusted, "b": ReasonChosenTrusted},
		},
		{
			name:      "main pass skips low trust and low level",
			in:        []core.Match{mk("lowtrust", 3, 0.39, 0.9, 1), mk("ok", 2, 0.4, 0.5, 1), mk("l1", 1, 0.99, 0.9, 1)},
			want:      []string{"ok"},
			wantWrite: false,
			reasons:   map[string]string{"lowtrust": ReasonSkippedTrust, "l1": ReasonSkippedLevel},
		},
		{
			name: "max_inject caps the main pass",
			in: []core.Match{mk("a", 2, 0.9, 0.5, 1), mk("b", 2, 0.8, 0.5, 1), mk("c", 2, 0.7, 0.5, 1),
				mk("d", 2, 0.6, 0.5, 1), mk("e", 2, 0.5, 0.5, 1)},
			want:      []string{"a", "b", "c"},
			wantWrite: false,
			reasons:   map[string]string{"d": ReasonSkippedMaxInject, "e": ReasonSkippedMaxInject},
		},
		{
			name:      "max_inject 1",
			cfg:       func(c *Config) { c.MaxInject = 1 },
			in:        []core.Match{mk("a", 2, 0.5, 0.5, 1), mk("b", 3, 0.5, 0.5, 1)},
			want:      []string{"b"},
			wantWrite: false,
		},
		{
			name:      "fallback injects exactly one L1",
			in:        []core.Match{mk("l1a", 1, 0.5, 0.5, 1), mk("l1b", 1, 0.6, 0.5, 1), mk("l0", 0, 0.9, 0.5, 1)},
			want:      []string{"l1b"},
			wantWrite: true,
			reasons:   map[string]string{"l1b": ReasonChosenFallback, "l1a": ReasonSkippedLevel},
		},
		{
			name:      "fallback skips low trust L1",
			in:        []core.Match{mk("weak", 1, 0.3, 0.5, 1), mk("l0", 0, 0.8, 0.5, 1)},
			want:      []string{},
			wantWrite: true,
		},
		{
			name: "fallback looks only at the first max_inject usable",
			cfg:  func(c *Config) { c.MinLevelInject = 3 },
			in: []core.Match{mk("x", 2, 0.3, 0.5, 1), mk("y", 2, 0.3, 0.5, 1), mk("z", 2, 0.3, 0.5, 1),
				mk("late", 1, 0.9, 0.5, 1)},
			want:      []string{},
			wantWrite: true,
		},
		{
			name: "fallback window with max_inject 4 reaches it",
			cfg:  func(c *Config) { c.MinLevelInject, c.MaxInject = 3, 4 },
			in: []core.Match{mk("x", 2, 0.3, 0.5, 1), mk("y", 2, 0.3, 0.5, 1), mk("z", 2, 0.3, 0.5, 1),
				mk("late", 1, 0.9, 0.5, 1)},
			want:      []string{"late"},
			wantWrite: true,
		},
		{
			name:      "has_strong blocks the fallback",
			in:        []core.Match{mk("strong-untrusted", 2, 0.3, 0.5, 1), mk("l1", 1, 0.9, 0.5, 1)},
			want:      []string{},
			wantWrite: false,
			reasons:   map[string]string{"": ReasonFallbackBlocked, "l1": ReasonSkippedLevel},
		},
		{
			name:      "fallback disabled",
			cfg:       func(c *Config) { c.Fallback = false },
			in:        []core.Match{mk("l1", 1, 0.9, 0.5, 1)},
			want:      []string{},
			wantWrite: true,
		},
		{
			name:      "L0 is never injected",
			in:        []core.Match{mk("l0", 0, 0.99, 0.8, 1), mk("l0b", 0, 0.99, 0.8, 1)},
			want:      []string{},
			wantWrite: true,
		},
		{
			name:      "L0 with min_level_fallback 0",
			cfg:       func(c *Config) { c.MinLevelFallback = 0 },
			in:        []core.Match{mk("l0", 0, 0.5, 0.8, 1)},
			want:      []string{"l0"},
			wantWrite: true,
		},
		{
			name: "status filter is exact",
			in: []core.Match{
				with(mk("cand", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Status = core.StatusCandidate }),
				with(mk("stale", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Status = core.StatusStale }),
				with(mk("dep", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Status = core.StatusDeprecated }),
				with(mk("frozen", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Status = core.StatusFrozen }),
				with(mk("upper", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Status = "Active" }),
				with(mk("ver", 2, 0.5, 0.5, 1), func(m *core.Match) { m.Status = core.StatusVerified }),
				mk("act", 2, 0.6, 0.5, 1),
			},
			want:      []string{"act", "ver"},
			wantWrite: false,
			reasons: map[string]string{"cand": ReasonFilteredStatus, "stale": ReasonFilteredStatus, "dep": ReasonFilteredStatus,
				"frozen": ReasonFilteredStatus, "upper": ReasonFilteredStatus},
		},
		{
			name:      "freshness below 0.001 is stale",
			in:        []core.Match{mk("zero", 2, 0.9, 0.5, 0), mk("tiny", 2, 0.9, 0.5, 0.0009), mk("edge", 2, 0.5, 0.5, 0.001)},
			want:      []string{"edge"},
			wantWrite: false,
			reasons:   map[string]string{"zero": ReasonFilteredStale, "tiny": ReasonFilteredStale},
		},
		{
			name:      "stale filter off",
			cfg:       func(c *Config) { c.ExcludeStale = false },
			in:        []core.Match{mk("zero", 2, 0.9, 0.5, 0)},
			want:      []string{"zero"},
			wantWrite: false,
		},
		{
			name: "consecutive_fail int at metadata",
			in: []core.Match{with(mk("cf3", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Metadata["consecutive_fail"] = 3 }),
				with(mk("cf2", 2, 0.8, 0.5, 1), func(m *core.Match) { m.Metadata["consecutive_fail"] = 2 })},
			want: []string{"cf2"}, wantWrite: false,
			reasons: map[string]string{"cf3": ReasonFilteredBlocked},
		},
		{
			name: "consecutive_fail numeric string at metadata",
			in: []core.Match{with(mk("s3", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Metadata["consecutive_fail"] = " 3 " }),
				with(mk("s7", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Metadata["consecutive_fail"] = "7" }),
				with(mk("junk", 2, 0.8, 0.5, 1), func(m *core.Match) { m.Metadata["consecutive_fail"] = "three" })},
			want: []string{"junk"}, wantWrite: false, // both others blocked; junk counts as 0
			reasons: map[string]string{"s3": ReasonFilteredBlocked, "s7": ReasonFilteredBlocked},
		},
		{
			name: "consecutive_fail as JSON float",
			in:   []core.Match{with(mk("f", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Metadata["consecutive_fail"] = 3.0 })},
			want: []string{}, wantWrite: true,
		},
		{
			name: "consecutive_fail at metadata.stats (int and string)",
			in: []core.Match{
				with(mk("si", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Metadata["stats"] = map[string]any{"consecutive_fail": 4} }),
				with(mk("ss", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Metadata["stats"] = map[string]any{"consecutive_fail": "3"} }),
				with(mk("ok", 2, 0.7, 0.5, 1), func(m *core.Match) {
					m.Metadata["stats"] = map[string]any{"consecutive_fail": "2", "strong_pass": 4}
				}),
			},
			want: []string{"ok"}, wantWrite: false,
			reasons: map[string]string{"si": ReasonFilteredBlocked, "ss": ReasonFilteredBlocked},
		},
		{
			name: "consecutive_fail typed field",
			in:   []core.Match{with(mk("t", 2, 0.9, 0.5, 1), func(m *core.Match) { m.ConsecutiveFail = 5 })},
			want: []string{}, wantWrite: true,
		},
		{
			name: "verified is not exempt from the block in compat",
			in: []core.Match{with(mk("v", 2, 0.9, 0.5, 1), func(m *core.Match) {
				m.Status = core.StatusVerified
				m.Metadata["consecutive_fail"] = 3
			})},
			want: []string{}, wantWrite: true,
		},
		{
			name: "block threshold 0 disables the block",
			cfg:  func(c *Config) { c.BlockIfConsecutiveFailGE = 0 },
			in:   []core.Match{with(mk("t", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Metadata["consecutive_fail"] = 9 })},
			want: []string{"t"}, wantWrite: false,
		},
		{
			name:      "stable order on full ties keeps input order",
			in:        []core.Match{mk("p", 2, 0.5, 0.5, 0.5), mk("q", 2, 0.5, 0.5, 0.5), mk("r", 2, 0.5, 0.5, 0.5)},
			want:      []string{"p", "q", "r"},
			wantWrite: false,
		},
		{
			name:      "stable order on full ties keeps reversed input order",
			in:        []core.Match{mk("r", 2, 0.5, 0.5, 0.5), mk("q", 2, 0.5, 0.5, 0.5), mk("p", 2, 0.5, 0.5, 0.5)},
			want:      []string{"r", "q", "p"},
			wantWrite: false,
		},
		{
			name: "tuple order: level, trust, score, freshness",
			in: []core.Match{mk("fresh-lo", 2, 0.5, 0.5, 0.2), mk("fresh-hi", 2, 0.5, 0.5, 0.9), mk("score-hi", 2, 0.5, 0.7, 0.1),
				mk("trust-hi", 2, 0.6, 0.1, 0.1), mk("level-hi", 3, 0.41, 0.1, 0.1)},
			cfg:       func(c *Config) { c.MaxInject = 5 },
			want:      []string{"level-hi", "trust-hi", "score-hi", "fresh-hi", "fresh-lo"},
			wantWrite: false,
		},
		{
			name:      "NaN trust is never injected",
			in:        []core.Match{mk("nan", 2, math.NaN(), 0.5, 1), mk("ok", 2, 0.5, 0.5, 1)},
			want:      []string{"ok"},
			wantWrite: false,
		},
		{
			name:      "top1 score >= 0.85 over all matches suppresses the candidate",
			in:        []core.Match{with(mk("hi", 0, 0.1, 0.85, 1), func(m *core.Match) { m.Status = core.StatusCandidate })},
			want:      []string{},
			wantWrite: false,
			reasons:   map[string]string{"hi": ReasonFilteredStatus, "": ReasonNoCandidate},
		},
		{
			name:      "top1 score 0.84 keeps the candidate",
			in:        []core.Match{mk("l1", 1, 0.5, 0.84, 1)},
			want:      []string{"l1"},
			wantWrite: true,
		},
		{
			name:      "relevance and expiry are not checked client-side",
			in:        []core.Match{with(mk("r", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Relevance = 0.01; m.ExpiryAt = &past })},
			want:      []string{"r"},
			wantWrite: false,
		},
		{
			name:      "quarantined is never injected",
			in:        []core.Match{with(mk("q", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Quarantined = true })},
			want:      []string{},
			wantWrite: true,
			reasons:   map[string]string{"q": ReasonFilteredQuarantined},
		},
		{
			name: "duplicate qa_id is injected once",
			in:   []core.Match{mk("a", 2, 0.9, 0.5, 1), mk("a", 2, 0.9, 0.5, 1)},
			want: []string{"a"}, wantWrite: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := CompatConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			in := slices.Clone(tt.in)
			d := Select(in, cfg, now, seeded(1))
			if diff := cmp.Diff(tt.want, ids(d.Items)); diff != "" {
				t.Fatalf("items (-want +got):\n%s\nreasons: %+v", diff, d.Reasons)
			}
			mustEqual(t, "WriteCandidate", d.WriteCandidate, tt.wantWrite)
			if len(d.Draws) != 0 {
				t.Errorf("compat drew %d probation samples, want none", len(d.Draws))
			}
			for _, it := range d.Items {
				if it.Probation {
					t.Errorf("%s marked probation in compat", it.QAID)
				}
				if it.Why == ReasonChosenTrusted && hasReason(d, ReasonFallbackBlocked) {
					t.Errorf("fallback considered although the main pass took %s", it.QAID)
				}
			}
			for id, code := range tt.reasons {
				if id == "" {
					if !hasReason(d, code) {
						t.Errorf("no %s reason in %+v", code, d.Reasons)
					}
					continue
				}
				if got := reasonFor(d, id); got != code {
					t.Errorf("reason for %s = %q, want %q", id, got, code)
				}
			}
			for i := range in {
				if in[i].QAID != tt.in[i].QAID {
					t.Fatalf("Select reordered its input")
				}
			}
		})
	}
}

// TestCompatStableSortLarge pins the stable tie-break beyond the sizes
// where any sort is stable (insertion sort below 12 elements).
func TestCompatStableSortLarge(t *testing.T) {
	var in []core.Match
	var want []string
	for i := range 40 {
		id := fmt.Sprintf("tie-%02d", (i*17)%40)
		in = append(in, mk(id, 2, 0.5, 0.5, 0.5))
		want = append(want, id)
	}
	in = append([]core.Match{mk("low", 2, 0.45, 0.5, 0.5)}, in...)
	in = append(in, mk("high", 3, 0.41, 0.1, 0.1))
	want = append([]string{"high"}, append(want, "low")...)
	cfg := CompatConfig()
	cfg.MaxInject = 100
	d := Select(in, cfg, now, nil)
	if diff := cmp.Diff(want, ids(d.Items)); diff != "" {
		t.Fatalf("items (-want +got):\n%s", diff)
	}
}

// TestCompatEveryMatchHasAReason checks that each input match is explained.
func TestCompatEveryMatchHasAReason(t *testing.T) {
	in := []core.Match{mk("a", 2, 0.9, 0.5, 1), mk("b", 1, 0.9, 0.5, 1), mk("c", 0, 0.9, 0.5, 0),
		with(mk("d", 2, 0.9, 0.5, 1), func(m *core.Match) { m.Status = core.StatusCandidate })}
	for _, cfg := range []Config{CompatConfig(), DefaultConfig()} {
		d := Select(in, cfg, now, seeded(3))
		for _, m := range in {
			if reasonFor(d, m.QAID) == "" {
				t.Errorf("order %s: no reason for %s: %+v", cfg.Order, m.QAID, d.Reasons)
			}
		}
	}
}
