package sim

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// TestMemexBeatsOriginal runs the small world and pins the headline claims
// of docs/TRUST.md.
func TestMemexBeatsOriginal(t *testing.T) {
	mx, orig, err := Compare(SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", Markdown(Table(mx, orig)))
	if mx.RegretPer1000() > orig.RegretPer1000()/2 {
		t.Errorf("regret: memex %.1f, original %.1f; want memex under half", mx.RegretPer1000(), orig.RegretPer1000())
	}
	if mx.Precision() <= orig.Precision() {
		t.Errorf("precision: memex %.3f ≤ original %.3f", mx.Precision(), orig.Precision())
	}
	if mx.Recall() < 0.9 || mx.Recall() <= orig.Recall() {
		t.Errorf("recall: memex %.3f, original %.3f; want memex ≥ .9 and higher", mx.Recall(), orig.Recall())
	}
	if 2*len(mx.NewGood) < mx.NewGoodTotal || len(orig.NewGood) != 0 {
		t.Errorf("new good QAs trusted: memex %d/%d, original %d/%d; want memex ≥ half, original none (it never explores)",
			len(mx.NewGood), mx.NewGoodTotal, len(orig.NewGood), orig.NewGoodTotal)
	}
	if mx.StaleTotal == 0 || 5*len(mx.Evict) < 4*mx.StaleTotal {
		t.Errorf("stale QAs evicted by memex: %d/%d, want at least 80 %%", len(mx.Evict), mx.StaleTotal)
	}
	if mx.PoisonedPer1000() > 25 || mx.PoisonedPer1000() > orig.PoisonedPer1000()/4 {
		t.Errorf("poisoned injections / 1000 runs: memex %.1f, original %.1f; want memex ≤ 25 and under a quarter",
			mx.PoisonedPer1000(), orig.PoisonedPer1000())
	}
}

// TestAdversaryHeldWithAnchors: ten colluders against a world with trusted
// CI anchors (the default) inject the poisoned QA rarely.
func TestAdversaryHeldWithAnchors(t *testing.T) {
	cfg := SmallConfig()
	cfg.Colluders = 10
	mx, orig, err := Compare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if mx.PoisonedPer1000() > 25 || mx.PoisonedPer1000() > orig.PoisonedPer1000()/4 {
		t.Errorf("poisoned injections / 1000 runs: memex %.1f, original %.1f", mx.PoisonedPer1000(), orig.PoisonedPer1000())
	}
}

func TestDeterministic(t *testing.T) {
	cfg := SmallConfig()
	cfg.Runs = 1500
	for _, p := range []string{PolicyMemex, PolicyOriginal} {
		a, err := Run(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Run(cfg, p)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs of the same seed differ:\n%+v\n%+v", p, a, b)
		}
		cfg2 := cfg
		cfg2.Seed++
		c, _ := Run(cfg2, p)
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: seeds %d and %d gave identical metrics", p, cfg.Seed, cfg2.Seed)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"no runs", func(c *Config) { c.Runs = 0 }, "Runs"},
		{"no clock", func(c *Config) { c.RunsPerDay = 0 }, "RunsPerDay"},
		{"no topics", func(c *Config) { c.Topics = 0 }, "Topics"},
		{"no agents", func(c *Config) { c.Agents = 0 }, "Agents"},
		{"negative colluders", func(c *Config) { c.Colluders = -1 }, "negative"},
		{"noise above one", func(c *Config) { c.Noise = 1.5 }, "[0,1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := SmallConfig()
			tc.edit(&c)
			_, err := Run(c, PolicyMemex)
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("err = %v, want one naming %s", err, tc.field)
			}
		})
	}
	if _, err := Run(SmallConfig(), "linear"); err == nil || !strings.Contains(err.Error(), "linear") {
		t.Errorf("unknown policy: err = %v", err)
	}
}

func TestOriginalLinearRule(t *testing.T) {
	// ORIGINAL.md §2.3's worked examples.
	strong, medium, weak := core.StrengthStrong, core.StrengthMedium, core.StrengthWeak
	at := epoch
	tests := []struct {
		name   string
		rs     []report
		trust  float64
		level  int
		status core.Status
	}{
		{"no history", nil, 0.40, 0, core.StatusCandidate},
		{"one weak pass", []report{{pass: true, strength: weak, at: at}}, 0.404, 0, core.StatusActive},
		{"one medium pass", []report{{pass: true, strength: medium, at: at}}, 0.42, 0, core.StatusActive},
		{"one strong pass", []report{{pass: true, strength: strong, at: at}}, 0.45, 0, core.StatusActive},
		{"one weak fail", []report{{strength: weak, at: at}}, 0.29, 0, core.StatusCandidate},
		{"two weak fails", []report{{strength: weak, at: at}, {strength: weak, at: at}}, 0.18, 0, core.StatusStale},
		{"three weak fails", []report{{strength: weak, at: at}, {strength: weak, at: at}, {strength: weak, at: at}}, 0.07, 0, core.StatusDeprecated},
		{"weak fail ignored after two strong passes", []report{{pass: true, strength: strong, at: at}, {pass: true, strength: strong, at: at}, {strength: weak, at: at}}, 0.5, 1, core.StatusActive},
		{"five strong passes reach L2", []report{{pass: true, strength: strong, at: at}, {pass: true, strength: strong, at: at}, {pass: true, strength: strong, at: at}, {pass: true, strength: strong, at: at}, {pass: true, strength: strong, at: at}}, 0.65, 2, core.StatusActive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newOriginal(&world{start: epoch, cfg: Config{RunsPerDay: 1}})
			p.add(&qa{born: 1, history: tc.rs}, at)
			l := p.state[0]
			if math.Abs(l.trust-tc.trust) > 1e-9 || l.level != tc.level || l.status != tc.status {
				t.Errorf("trust %.4f level %d status %s, want %.4f %d %s", l.trust, l.level, l.status, tc.trust, tc.level, tc.status)
			}
		})
	}
}

func TestOriginalSelection(t *testing.T) {
	now := epoch
	mk := func(level int, trust float64, status core.Status) *linear {
		return &linear{level: level, trust: trust, status: status, created: now, ttl: now.Add(24 * time.Hour)}
	}
	tests := []struct {
		name string
		qas  []*linear
		rels []float64
		want []int
	}{
		{"level first, then trust", []*linear{mk(2, 0.9, core.StatusActive), mk(3, 0.5, core.StatusActive), mk(2, 0.7, core.StatusActive)}, []float64{0.9, 0.3, 0.5}, []int{1, 0, 2}},
		{"candidates never shown", []*linear{mk(0, 0.4, core.StatusCandidate), mk(0, 0.4, core.StatusCandidate)}, []float64{0.9, 0.9}, nil},
		{"fallback injects exactly one L1", []*linear{mk(1, 0.5, core.StatusActive), mk(1, 0.6, core.StatusActive)}, []float64{0.9, 0.9}, []int{1}},
		{"low-trust L2 blocks the fallback", []*linear{mk(2, 0.3, core.StatusActive), mk(1, 0.6, core.StatusActive)}, []float64{0.9, 0.9}, nil},
		{"stale excluded", []*linear{mk(3, 0.9, core.StatusStale), mk(2, 0.5, core.StatusActive)}, []float64{0.9, 0.9}, []int{1}},
		{"at most three", []*linear{mk(2, 0.9, core.StatusActive), mk(2, 0.8, core.StatusActive), mk(2, 0.7, core.StatusActive), mk(2, 0.95, core.StatusActive)}, []float64{0.5, 0.5, 0.5, 0.5}, []int{3, 0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &originalPolicy{state: map[int]*linear{}}
			var ms []match
			for i, l := range tc.qas {
				p.state[i] = l
				ms = append(ms, match{id: i, rel: tc.rels[i]})
			}
			if got := p.choose(ms, now); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("choose = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMemexSelection(t *testing.T) {
	cfg := SmallConfig()
	w := &world{cfg: cfg, start: epoch}
	p := newMemex(w, rand.New(rand.NewPCG(1, 2)))
	now := epoch
	add := func(passers, fails int) int {
		x := &qa{id: len(w.qas), born: len(w.qas), creator: "c"}
		w.qas = append(w.qas, x)
		p.add(x, now)
		for i := range passers {
			p.report(x.id, report{source: "p" + string(rune('a'+i)), pass: true, strength: core.StrengthStrong, at: now})
		}
		for i := range fails {
			p.report(x.id, report{source: "f" + string(rune('a'+i)), strength: core.StrengthStrong, at: now})
		}
		return x.id
	}
	good := add(3, 0)   // trusted
	better := add(4, 0) // trusted, higher trust
	fresh := add(0, 0)  // candidate: probation only
	low := add(2, 0)    // trusted
	t.Run("trusted by trust × relevance, probation second", func(t *testing.T) {
		ms := []match{{good, 0.9}, {better, 0.5}, {fresh, 0.95}, {low, 0.3}}
		// trust × relevance: good .9·t3 > better .5·t4 > low .3·t2; three
		// trusted fill the slots, so the candidate replaces the last one with
		// probability ε — draw until both outcomes appear.
		seen := map[string]bool{}
		for range 200 {
			got := p.choose(ms, now)
			switch {
			case reflect.DeepEqual(got, []int{good, better, low}):
				seen["trusted only"] = true
			case reflect.DeepEqual(got, []int{good, fresh, better}):
				seen["probation second"] = true
			default:
				t.Fatalf("choose = %v", got)
			}
		}
		if len(seen) != 2 {
			t.Errorf("outcomes %v, want both", seen)
		}
	})
	t.Run("free slot always explores", func(t *testing.T) {
		got := p.choose([]match{{good, 0.9}, {fresh, 0.95}}, now)
		if !reflect.DeepEqual(got, []int{good, fresh}) {
			t.Errorf("choose = %v, want [good fresh]", got)
		}
	})
	t.Run("below min score never shown", func(t *testing.T) {
		if got := p.choose([]match{{good, 0.1}}, now); len(got) != 0 {
			t.Errorf("choose = %v, want nothing", got)
		}
	})
}

func TestBetaDraw(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, ab := range [][2]float64{{3, 3}, {5, 3}, {0.5, 0.5}, {20, 4}} {
		var sum, sq float64
		const n = 20000
		for range n {
			x := betaDraw(r, ab[0], ab[1])
			if x < 0 || x > 1 {
				t.Fatalf("Beta%v draw %v outside [0,1]", ab, x)
			}
			sum += x
			sq += x * x
		}
		mean, want := sum/n, ab[0]/(ab[0]+ab[1])
		v, wantV := sq/n-mean*mean, want*(1-want)/(ab[0]+ab[1]+1)
		if math.Abs(mean-want) > 0.01 || math.Abs(v-wantV) > 0.01 {
			t.Errorf("Beta%v: mean %.4f var %.4f, want %.4f %.4f", ab, mean, v, want, wantV)
		}
	}
}
