// Package sim is the deterministic, seeded simulation that backs memex's trust
// model (SPEC §5.5). It owns a synthetic world — agents issuing paraphrased
// queries over a pool of QAs (good ones, bad ones, good ones that go stale,
// new ones appearing), noisy run outcomes, operator-trusted CI sources and a
// colluding adversary that forges passes on a poisoned QA and smears a good
// one — and replays the same world under two policies:
//
//   - memex: package trust (evidence, one vote per source, weights, creator
//     prior, lower bound, CUSUM, lifecycle) with the selection of SPEC §5.4
//     (trusted set by trust × relevance plus one Thompson probation slot);
//   - original: the original service's linear rule (ORIGINAL.md §2.3) with
//     its level-first selection and no exploration (ORIGINAL.md §1.2, §2.5,
//     §2.6).
//
// Both policies see exactly the same queries, agents, relevance noise and
// outcome draws (common random numbers); only the choices differ. Run
// returns the metrics of one policy, Compare both, and Markdown renders them.
package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
)

// Config describes one simulated world.
type Config struct {
	Seed       uint64
	Runs       int // agent runs
	RunsPerDay int // runs per simulated day (the clock)
	Topics     int // distinct questions; each query is a paraphrase of one
	Agents     int // honest agent sources
	// CI is the number of operator-trusted CI sources (anchors) and CIShare
	// the share of runs they make (strong, noise-free verdicts).
	CI      int
	CIShare float64
	// InitialPerTopic QAs exist per topic at the start, each good with
	// probability GoodShare, with up to MaxHistory past reports.
	InitialPerTopic int
	GoodShare       float64
	MaxHistory      int
	// NewEvery: a new QA (good with probability NewGoodShare) appears every
	// NewEvery runs.
	NewEvery     int
	NewGoodShare float64
	// StaleEvents established good QAs go bad during the run.
	StaleEvents int
	// Colluders forge passes on a poisoned QA and smear a good one from run
	// AdversaryStart on; each run one of them reports with probability
	// AdversaryRate.
	Colluders      int
	AdversaryStart int
	AdversaryRate  float64
	// Noise is the probability an honest agent's reported result is flipped
	// (flaky tests, misattributed failures).
	Noise float64
	// BaseSuccess is a run's success probability without a usable QA.
	BaseSuccess float64
	// ProbeBlocked lets QAs blocked by consecutive_fail ≥ 3 compete for the
	// probation slot (memex policy). SPEC §3.1 excludes them from both the
	// trusted set and the probation slot; without this a good QA blocked by
	// three unlucky fails is never shown again.
	ProbeBlocked bool

	observe func(run int, w *world, p policy) // test hook, called after each run
}

// DefaultConfig is the full simulation `memex-trustsim` runs.
func DefaultConfig() Config {
	return Config{
		Seed: 1, Runs: 20000, RunsPerDay: 40, Topics: 40, Agents: 30,
		CI: 2, CIShare: 0.15,
		InitialPerTopic: 3, GoodShare: 0.5, MaxHistory: 8,
		NewEvery: 100, NewGoodShare: 0.6,
		StaleEvents: 12,
		Colluders:   5, AdversaryStart: 2000, AdversaryRate: 0.3,
		Noise: 0.08, BaseSuccess: 0.4,
	}
}

// SmallConfig is the quick world `go test` runs.
func SmallConfig() Config {
	c := DefaultConfig()
	c.Runs, c.Topics, c.Agents = 5000, 15, 20
	c.NewEvery, c.StaleEvents, c.AdversaryStart = 80, 6, 500
	return c
}

// Metrics are one policy's results in one world (or several, summed).
type Metrics struct {
	Policy    string
	Runs      int
	Successes float64 // expected successes (Σ success probability)
	Regret    float64 // Σ (oracle − achieved) success probability
	Injected  int     // items injected into runs
	Correct   int     // injected items that were on topic and good
	Coverable int     // runs where a good QA existed for the query
	Covered   int     // of those, runs with a good QA injected
	// NewGood: runs from creation until each new good QA was first trusted.
	NewGood      []int
	NewGoodTotal int
	// Evict: runs from going bad until each stale QA left the trusted set;
	// StaleTotal counts the events whose QA was trusted when it went bad.
	Evict      []int
	StaleTotal int
	// Poisoned counts injections of the adversary's poisoned QA.
	Poisoned int
	// SmearHeld counts worlds where the smeared good QA was still trusted at
	// the end (of SmearTotal where it was trusted when the smear started).
	SmearHeld, SmearTotal int
}

// Add sums o into m (for several seeds).
func (m *Metrics) Add(o Metrics) {
	m.Runs += o.Runs
	m.Successes += o.Successes
	m.Regret += o.Regret
	m.Injected += o.Injected
	m.Correct += o.Correct
	m.Coverable += o.Coverable
	m.Covered += o.Covered
	m.NewGood = append(m.NewGood, o.NewGood...)
	m.NewGoodTotal += o.NewGoodTotal
	m.Evict = append(m.Evict, o.Evict...)
	m.StaleTotal += o.StaleTotal
	m.Poisoned += o.Poisoned
	m.SmearHeld += o.SmearHeld
	m.SmearTotal += o.SmearTotal
}

// SuccessRate is the mean success probability per run.
func (m Metrics) SuccessRate() float64 { return ratio(m.Successes, float64(m.Runs)) }

// RegretPer1000 is the expected successes lost to the oracle per 1000 runs.
func (m Metrics) RegretPer1000() float64 { return 1000 * ratio(m.Regret, float64(m.Runs)) }

// Precision is the share of injected items that were relevant and good.
func (m Metrics) Precision() float64 { return ratio(float64(m.Correct), float64(m.Injected)) }

// Recall is the share of runs with a good QA available that got one.
func (m Metrics) Recall() float64 { return ratio(float64(m.Covered), float64(m.Coverable)) }

// PoisonedPer1000 is the poisoned QA's injections per 1000 runs.
func (m Metrics) PoisonedPer1000() float64 { return 1000 * ratio(float64(m.Poisoned), float64(m.Runs)) }

// NewGoodMedian is the median runs until a new good QA was trusted, and
// whether any was.
func (m Metrics) NewGoodMedian() (float64, bool) { return median(m.NewGood) }

// EvictMedian is the median runs until a stale QA was evicted.
func (m Metrics) EvictMedian() (float64, bool) { return median(m.Evict) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func median(xs []int) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2]), true
	}
	return float64(s[n/2-1]+s[n/2]) / 2, true
}

// Validate reports the first field of c that cannot describe a world.
func (c Config) Validate() error {
	switch {
	case c.Runs <= 0:
		return fmt.Errorf("sim: Runs must be positive, got %d", c.Runs)
	case c.RunsPerDay <= 0:
		return fmt.Errorf("sim: RunsPerDay must be positive, got %d", c.RunsPerDay)
	case c.Topics <= 0:
		return fmt.Errorf("sim: Topics must be positive, got %d", c.Topics)
	case c.Agents <= 0:
		return fmt.Errorf("sim: Agents must be positive, got %d", c.Agents)
	case c.CI < 0 || c.Colluders < 0 || c.InitialPerTopic < 0 || c.MaxHistory < 0 || c.NewEvery < 0 || c.StaleEvents < 0:
		return fmt.Errorf("sim: counts must not be negative")
	case !unit(c.CIShare) || !unit(c.GoodShare) || !unit(c.NewGoodShare) || !unit(c.AdversaryRate) || !unit(c.Noise) || !unit(c.BaseSuccess):
		return fmt.Errorf("sim: shares and probabilities must be in [0,1]")
	}
	return nil
}

func unit(x float64) bool { return x >= 0 && x <= 1 }

// Compare runs cfg under both policies.
func Compare(cfg Config) (memex, original Metrics, err error) {
	if memex, err = Run(cfg, PolicyMemex); err != nil {
		return memex, original, err
	}
	original, err = Run(cfg, PolicyOriginal)
	return memex, original, err
}

// CompareSeeds runs cfg with seeds cfg.Seed … cfg.Seed+n−1 and sums the
// metrics.
func CompareSeeds(cfg Config, n int) (memex, original Metrics, err error) {
	memex.Policy, original.Policy = PolicyMemex, PolicyOriginal
	for i := range max(n, 1) {
		c := cfg
		c.Seed = cfg.Seed + uint64(i)
		a, b, err := Compare(c)
		if err != nil {
			return memex, original, err
		}
		memex.Add(a)
		original.Add(b)
	}
	return memex, original, nil
}

// Policy names.
const (
	PolicyMemex    = "memex"
	PolicyOriginal = "original"
)

// qa is one QA of the world.
type qa struct {
	id       int
	topic    int
	good     bool    // quality ≥ .5 before it goes stale
	q        float64 // success probability of a run that uses it
	qAfter   float64 // after staleAt
	staleAt  int     // run at which it goes bad (−1: never)
	born     int     // run at which it appears (≤ 0: initial)
	baseRel  float64 // how well its question matches the topic's paraphrases
	creator  string
	history  []report // reports before the start (initial QAs)
	poisoned bool
}

func (x *qa) quality(run int) float64 {
	if x.staleAt >= 0 && run >= x.staleAt {
		return x.qAfter
	}
	return x.q
}

type report struct {
	source   string
	pass     bool
	strength core.Strength
	at       time.Time
	trusted  bool
}

// world is everything that does not depend on the policy.
type world struct {
	cfg      Config
	start    time.Time
	qas      []*qa // index = id
	byTopic  [][]int
	agents   []string
	ci       []string
	adv      []string
	poisonID int // −1 when there is no adversary
	smearID  int
	stale    []int // ids of QAs that go bad
	pop      []float64
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (w *world) at(run int) time.Time {
	return w.start.Add(time.Duration(run) * 24 * time.Hour / time.Duration(w.cfg.RunsPerDay))
}

func goodQuality(r *rand.Rand) float64 { return 0.8 + 0.15*r.Float64() }
func badQuality(r *rand.Rand) float64  { return 0.05 + 0.25*r.Float64() }

func strength(r *rand.Rand) core.Strength {
	switch u := r.Float64(); {
	case u < 0.4:
		return core.StrengthStrong
	case u < 0.8:
		return core.StrengthMedium
	default:
		return core.StrengthWeak
	}
}

// newWorld builds the pool, the schedule of new QAs, stale events and the
// adversary from cfg.Seed.
func newWorld(cfg Config) *world {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	w := &world{cfg: cfg, start: epoch, byTopic: make([][]int, cfg.Topics), poisonID: -1, smearID: -1}
	for i := range cfg.Agents {
		w.agents = append(w.agents, fmt.Sprintf("agent-%d", i))
	}
	for i := range cfg.CI {
		w.ci = append(w.ci, fmt.Sprintf("ci-%d", i))
	}
	for i := range cfg.Colluders {
		w.adv = append(w.adv, fmt.Sprintf("adv-%d", i))
	}
	for t := range cfg.Topics {
		w.pop = append(w.pop, 1/math.Sqrt(float64(t+1)))
	}
	add := func(x *qa) {
		x.id = len(w.qas)
		w.qas = append(w.qas, x)
		w.byTopic[x.topic] = append(w.byTopic[x.topic], x.id)
	}
	for t := range cfg.Topics {
		for range cfg.InitialPerTopic {
			x := &qa{topic: t, staleAt: -1, baseRel: 0.55 + 0.4*r.Float64(), creator: w.agents[r.IntN(len(w.agents))]}
			x.good = r.Float64() < cfg.GoodShare
			if x.good {
				x.q = goodQuality(r)
			} else {
				x.q = badQuality(r)
			}
			x.qAfter = x.q
			born := -(1 + r.IntN(20*cfg.RunsPerDay)) // up to 20 days old
			x.born = born
			for range r.IntN(cfg.MaxHistory + 1) {
				at := born + r.IntN(-born)
				src := w.agents[r.IntN(len(w.agents))]
				ok := r.Float64() < x.q
				if r.Float64() < cfg.Noise {
					ok = !ok
				}
				x.history = append(x.history, report{source: src, pass: ok, strength: strength(r), at: w.at(at)})
			}
			slices.SortStableFunc(x.history, func(a, b report) int { return a.at.Compare(b.at) })
			add(x)
		}
	}
	// New QAs on a schedule.
	for run := cfg.NewEvery; cfg.NewEvery > 0 && run < cfg.Runs; run += cfg.NewEvery {
		x := &qa{topic: w.topic(r), staleAt: -1, born: run, baseRel: 0.55 + 0.4*r.Float64(), creator: w.agents[r.IntN(len(w.agents))]}
		x.good = r.Float64() < cfg.NewGoodShare
		if x.good {
			x.q = goodQuality(r)
		} else {
			x.q = badQuality(r)
		}
		x.qAfter = x.q
		add(x)
	}
	// Stale events: established good initial QAs (≥ 3 past passes) go bad,
	// spread over the middle of the run.
	var est []int
	for _, x := range w.qas {
		if x.born > 0 || !x.good {
			continue
		}
		passes := 0
		for _, h := range x.history {
			if h.pass {
				passes++
			}
		}
		if passes >= 3 {
			est = append(est, x.id)
		}
	}
	r.Shuffle(len(est), func(i, j int) { est[i], est[j] = est[j], est[i] })
	if cfg.Colluders > 0 && len(est) > 0 {
		w.smearID = est[len(est)-1] // the smear target is never a stale event
		est = est[:len(est)-1]
	}
	n := min(cfg.StaleEvents, len(est))
	for i, id := range est[:n] {
		x := w.qas[id]
		x.staleAt = cfg.Runs/5 + i*(cfg.Runs/2)/max(n, 1)
		x.qAfter = 0.05 + 0.15*r.Float64()
		w.stale = append(w.stale, id)
	}
	if cfg.Colluders > 0 && cfg.AdversaryStart < cfg.Runs {
		x := &qa{topic: 0, staleAt: -1, born: cfg.AdversaryStart, baseRel: 0.95, creator: w.adv[0], q: 0.02, qAfter: 0.02, poisoned: true}
		add(x)
		w.poisonID = x.id
	}
	return w
}

// topic draws a topic by popularity.
func (w *world) topic(r *rand.Rand) int {
	var total float64
	for _, p := range w.pop {
		total += p
	}
	u := r.Float64() * total
	for t, p := range w.pop {
		if u < p {
			return t
		}
		u -= p
	}
	return len(w.pop) - 1
}

// match is one search result offered to a policy.
type match struct {
	id  int
	rel float64
}

// policy is a trust rule plus its selection.
type policy interface {
	// add registers a QA (and replays its history) when it appears.
	add(x *qa, now time.Time)
	// report records one validation.
	report(id int, rp report)
	// hit records that id was shown, and used or not, at now.
	hit(id int, used bool, now time.Time)
	// choose returns the ids to inject, in order.
	choose(ms []match, now time.Time) []int
	// trusted reports whether the policy would inject id on its trusted path.
	trusted(id int, now time.Time) bool
	// visible reports whether search still returns id (not deprecated).
	visible(id int) bool
	// daily runs the expiry job.
	daily(now time.Time)
}

// Run simulates cfg under the named policy (PolicyMemex or PolicyOriginal).
func Run(cfg Config, name string) (Metrics, error) {
	if err := cfg.Validate(); err != nil {
		return Metrics{}, err
	}
	w := newWorld(cfg)
	var p policy
	switch name {
	case PolicyOriginal:
		p = newOriginal(w)
	case PolicyMemex:
		p = newMemex(w, rand.New(rand.NewPCG(cfg.Seed, 0x5851f42d4c957f2d)))
	default:
		return Metrics{}, fmt.Errorf("sim: unknown policy %q (want %q or %q)", name, PolicyMemex, PolicyOriginal)
	}
	m := Metrics{Policy: name}
	r := rand.New(rand.NewPCG(cfg.Seed, 0xda3e39cb94b95bdb)) // the run stream: same for every policy

	for _, x := range w.qas {
		if x.born <= 0 {
			p.add(x, w.at(0))
		}
	}
	newSince := map[int]int{} // new good QA → birth run, until trusted
	staleSince := map[int]int{}
	smearTrusted := false
	day := 0
	for run := range cfg.Runs {
		now := w.at(run)
		if d := run / cfg.RunsPerDay; d != day {
			day = d
			p.daily(now)
			for id, since := range staleSince {
				if !p.trusted(id, now) {
					m.Evict = append(m.Evict, run-since)
					delete(staleSince, id)
				}
			}
		}
		for _, x := range w.qas {
			if x.born == run && run > 0 {
				p.add(x, now)
				if x.good && !x.poisoned {
					m.NewGoodTotal++
					newSince[x.id] = run
				}
			}
			if x.staleAt == run {
				if p.trusted(x.id, now) {
					m.StaleTotal++
					staleSince[x.id] = run
				}
			}
		}
		if run == cfg.AdversaryStart && w.smearID >= 0 {
			smearTrusted = p.trusted(w.smearID, now)
		}

		// The query: a paraphrase of one topic.
		topic := w.topic(r)
		var src string
		var rpTrusted bool
		if len(w.ci) > 0 && r.Float64() < cfg.CIShare {
			src, rpTrusted = w.ci[r.IntN(len(w.ci))], true
		} else {
			src = w.agents[r.IntN(len(w.agents))]
		}
		str := strength(r)
		uOutcome, uNoise, uPick := r.Float64(), r.Float64(), r.Float64()
		var ms []match
		oracle := cfg.BaseSuccess
		goodExists := false
		for _, id := range w.byTopic[topic] {
			x := w.qas[id]
			noise := 0.08 * r.NormFloat64()
			if x.born > run {
				continue
			}
			q := x.quality(run)
			oracle = max(oracle, q)
			goodExists = goodExists || q >= 0.5
			if p.visible(id) {
				ms = append(ms, match{id: id, rel: min(max(x.baseRel+noise, 0), 1)})
			}
		}
		for range 3 { // distractors: QAs of other topics sharing words
			id := r.IntN(len(w.qas))
			rel := 0.05 + 0.4*r.Float64()
			if x := w.qas[id]; x.topic != topic && x.born <= run && p.visible(id) && !slices.ContainsFunc(ms, func(m match) bool { return m.id == id }) {
				ms = append(ms, match{id: id, rel: rel})
			}
		}

		chosen := p.choose(ms, now)
		var onTopic []int
		for _, id := range chosen {
			x := w.qas[id]
			m.Injected++
			if x.poisoned {
				m.Poisoned++
			}
			if x.topic == topic {
				onTopic = append(onTopic, id)
				if x.quality(run) >= 0.5 {
					m.Correct++
				}
			}
		}
		if goodExists {
			m.Coverable++
			if slices.ContainsFunc(onTopic, func(id int) bool { return w.qas[id].quality(run) >= 0.5 }) {
				m.Covered++
			}
		}
		used := -1
		success := cfg.BaseSuccess
		if len(onTopic) > 0 {
			used = onTopic[min(int(uPick*float64(len(onTopic))), len(onTopic)-1)]
			success = w.qas[used].quality(run)
		}
		m.Runs++
		m.Successes += success
		m.Regret += oracle - success
		for _, id := range chosen {
			p.hit(id, id == used, now)
		}
		if used >= 0 {
			ok := uOutcome < success
			if !rpTrusted && uNoise < cfg.Noise {
				ok = !ok
			}
			if rpTrusted {
				str = core.StrengthStrong
			}
			p.report(used, report{source: src, pass: ok, strength: str, at: now, trusted: rpTrusted})
			check(p, &m, newSince, staleSince, used, run, now)
		}

		// The adversary: forged strong passes on the poisoned QA, smears on
		// the good one.
		if w.poisonID >= 0 && run >= cfg.AdversaryStart && r.Float64() < cfg.AdversaryRate {
			c := w.adv[r.IntN(len(w.adv))]
			p.report(w.poisonID, report{source: c, pass: true, strength: core.StrengthStrong, at: now})
			if w.smearID >= 0 {
				p.report(w.smearID, report{source: c, pass: false, strength: core.StrengthStrong, at: now})
				check(p, &m, newSince, staleSince, w.smearID, run, now)
			}
		}
		if cfg.observe != nil {
			cfg.observe(run, w, p)
		}
	}
	if w.smearID >= 0 && smearTrusted {
		m.SmearTotal++
		if p.trusted(w.smearID, w.at(cfg.Runs)) {
			m.SmearHeld++
		}
	}
	return m, nil
}

// check records first-trusted and eviction times after id's state changed.
func check(p policy, m *Metrics, newSince, staleSince map[int]int, id, run int, now time.Time) {
	if since, ok := newSince[id]; ok && p.trusted(id, now) {
		m.NewGood = append(m.NewGood, run-since)
		delete(newSince, id)
	}
	if since, ok := staleSince[id]; ok && !p.trusted(id, now) {
		m.Evict = append(m.Evict, run-since)
		delete(staleSince, id)
	}
}

// Row is one line of the comparison table.
type Row struct {
	Metric   string
	Memex    string
	Original string
}

// Table renders the key metrics of memex and original side by side.
func Table(memex, original Metrics) []Row {
	f := func(format string, get func(Metrics) float64) (string, string) {
		return fmt.Sprintf(format, get(memex)), fmt.Sprintf(format, get(original))
	}
	var rows []Row
	addf := func(name, format string, get func(Metrics) float64) {
		a, b := f(format, get)
		rows = append(rows, Row{name, a, b})
	}
	addf("success rate", "%.3f", Metrics.SuccessRate)
	addf("regret vs oracle (lost successes / 1000 runs)", "%.1f", Metrics.RegretPer1000)
	addf("precision of injected QAs", "%.3f", Metrics.Precision)
	addf("recall (runs with a good QA that got one)", "%.3f", Metrics.Recall)
	med := func(m Metrics, get func(Metrics) (float64, bool), n, total int) string {
		v, ok := get(m)
		if !ok {
			return fmt.Sprintf("never (0/%d)", total)
		}
		return fmt.Sprintf("%.0f (%d/%d)", v, n, total)
	}
	rows = append(rows,
		Row{"runs until a new good QA is trusted (median, trusted/new)",
			med(memex, Metrics.NewGoodMedian, len(memex.NewGood), memex.NewGoodTotal),
			med(original, Metrics.NewGoodMedian, len(original.NewGood), original.NewGoodTotal)},
		Row{"runs until a stale QA is evicted (median, evicted/stale)",
			med(memex, Metrics.EvictMedian, len(memex.Evict), memex.StaleTotal),
			med(original, Metrics.EvictMedian, len(original.Evict), original.StaleTotal)},
	)
	addf("poisoned injections / 1000 runs", "%.1f", Metrics.PoisonedPer1000)
	rows = append(rows, Row{"smeared good QA still trusted at the end",
		fmt.Sprintf("%d/%d", memex.SmearHeld, memex.SmearTotal),
		fmt.Sprintf("%d/%d", original.SmearHeld, original.SmearTotal)})
	return rows
}

// Markdown renders rows as a markdown table.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| metric | memex | original |\n|---|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Metric, r.Memex, r.Original)
	}
	return b.String()
}

// Scenario is one adversary setting of AdversaryTable.
type Scenario struct {
	Colluders int
	Anchored  bool // CI sources (trusted anchors) take part
	Memex     Metrics
	Original  Metrics
}

// AdversaryScenarios runs cfg with k colluders for each k in ks, with and
// without trusted CI anchors, over n seeds.
func AdversaryScenarios(cfg Config, ks []int, n int) ([]Scenario, error) {
	var out []Scenario
	for _, k := range ks {
		for _, anchored := range []bool{true, false} {
			c := cfg
			c.Colluders = k
			if !anchored {
				c.CI = 0
			}
			a, b, err := CompareSeeds(c, n)
			if err != nil {
				return nil, err
			}
			out = append(out, Scenario{Colluders: k, Anchored: anchored, Memex: a, Original: b})
		}
	}
	return out, nil
}

// AdversaryMarkdown renders scenarios as a markdown table.
func AdversaryMarkdown(ss []Scenario) string {
	var b strings.Builder
	b.WriteString("| colluders | trusted CI anchors | poisoned / 1000 runs (memex) | poisoned / 1000 runs (original) | smeared QA still trusted (memex) | smeared QA still trusted (original) |\n|---:|---|---:|---:|---:|---:|\n")
	for _, s := range ss {
		anchors := "no"
		if s.Anchored {
			anchors = "yes"
		}
		fmt.Fprintf(&b, "| %d | %s | %.1f | %.1f | %d/%d | %d/%d |\n", s.Colluders, anchors,
			s.Memex.PoisonedPer1000(), s.Original.PoisonedPer1000(),
			s.Memex.SmearHeld, s.Memex.SmearTotal, s.Original.SmearHeld, s.Original.SmearTotal)
	}
	return b.String()
}
