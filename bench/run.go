package bench

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Options bound the speed measurements.
type Options struct {
	// K is the number of hits asked of every search.
	K int
	// LatencySamples is how many single-threaded searches are timed
	// (cycling through the queries) ...
	LatencySamples int
	// ... unless LatencyBudget is spent first (after at least one pass
	// over the queries or 100 searches, whichever is fewer).
	LatencyBudget time.Duration
	// QPSDuration is how long the two-goroutine throughput test runs.
	QPSDuration time.Duration
}

// DefaultOptions are the options of the compare command.
func DefaultOptions() Options {
	return Options{K: 10, LatencySamples: 2000, LatencyBudget: 10 * time.Second, QPSDuration: 2 * time.Second}
}

// Speed is what one engine costs on one corpus.
type Speed struct {
	Build     time.Duration
	HeapPerQA float64 // Go heap retained by the index, bytes per QA
	DiskPerQA float64 // engine files, bytes per QA
	P50, P99  time.Duration
	QPS2      float64 // searches per second with 2 goroutines
	Samples   int     // single-threaded searches timed
}

// Result is one engine's measurement on one set.
type Result struct {
	Engine  string
	Quality Metrics
	// RR is each query's reciprocal rank at 10, in query order.
	RR    []float64
	Speed Speed
}

// Measure builds a fresh engine from f on set, scores its rankings of the
// set's queries (queries without relevant ids are not scored) and times it.
func Measure(f Factory, set *Set, opt Options) (Result, error) {
	res := Result{Engine: f.Name}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, err := f.New()
	if err != nil {
		return res, fmt.Errorf("%s: new: %w", f.Name, err)
	}
	defer e.Close()
	start := time.Now()
	if err := e.Build(set.Corpus); err != nil {
		return res, fmt.Errorf("%s: build %s: %w", f.Name, set.Name, err)
	}
	res.Speed.Build = time.Since(start)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(len(set.Corpus))
	res.Speed.HeapPerQA = math.Max(0, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))) / n
	res.Speed.DiskPerQA = float64(e.DiskBytes()) / n

	var acc Accumulator
	for _, q := range set.Queries {
		if len(q.Relevant) == 0 {
			continue
		}
		hits, err := e.Search(q.Query, opt.K)
		if err != nil {
			return res, fmt.Errorf("%s: search %s: %w", f.Name, q.ID, err)
		}
		ranked := make([]string, len(hits))
		for i, h := range hits {
			ranked[i] = set.Corpus[h].ID
		}
		acc.Add(ranked, q.Relevant)
		rel := make(map[string]bool, len(q.Relevant))
		for _, id := range q.Relevant {
			rel[id] = true
		}
		res.RR = append(res.RR, RR(ranked, rel, 10))
	}
	res.Quality = acc.Metrics()

	lat, err := latency(e, set.Queries, opt)
	if err != nil {
		return res, fmt.Errorf("%s: %w", f.Name, err)
	}
	res.Speed.Samples = len(lat)
	res.Speed.P50 = percentile(lat, 0.50)
	res.Speed.P99 = percentile(lat, 0.99)
	res.Speed.QPS2, err = throughput(e, set.Queries, 2, opt)
	if err != nil {
		return res, fmt.Errorf("%s: %w", f.Name, err)
	}
	return res, nil
}

func latency(e Engine, qs []Query, opt Options) ([]time.Duration, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	for _, q := range qs[:min(len(qs), 50)] { // warm up
		if _, err := e.Search(q.Query, opt.K); err != nil {
			return nil, err
		}
	}
	minSamples := min(len(qs), 100)
	lat := make([]time.Duration, 0, opt.LatencySamples)
	begin := time.Now()
	for i := 0; i < opt.LatencySamples; i++ {
		if i >= minSamples && time.Since(begin) > opt.LatencyBudget {
			break
		}
		t0 := time.Now()
		if _, err := e.Search(qs[i%len(qs)].Query, opt.K); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat, nil
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func throughput(e Engine, qs []Query, workers int, opt Options) (float64, error) {
	if len(qs) == 0 {
		return 0, nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
		first error
	)
	start := time.Now()
	deadline := start.Add(opt.QPSDuration)
	for w := range workers {
		wg.Go(func() {
			n := 0
			for i := w * len(qs) / workers; time.Now().Before(deadline); i++ {
				if _, err := e.Search(qs[i%len(qs)].Query, opt.K); err != nil {
					mu.Lock()
					first = cmp(first, err)
					mu.Unlock()
					return
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds(), first
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// MedianSpeed is the per-column median of several measurements of the
// same engine.
func MedianSpeed(runs []Speed) Speed {
	if len(runs) == 1 {
		return runs[0]
	}
	med := func(get func(Speed) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Speed{
		Build:     time.Duration(med(func(s Speed) float64 { return float64(s.Build) })),
		HeapPerQA: med(func(s Speed) float64 { return s.HeapPerQA }),
		DiskPerQA: med(func(s Speed) float64 { return s.DiskPerQA }),
		P50:       time.Duration(med(func(s Speed) float64 { return float64(s.P50) })),
		P99:       time.Duration(med(func(s Speed) float64 { return float64(s.P99) })),
		QPS2:      med(func(s Speed) float64 { return s.QPS2 }),
		Samples:   int(med(func(s Speed) float64 { return float64(s.Samples) })),
	}
}
