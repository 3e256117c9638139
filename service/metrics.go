package service

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memex-dev/memex/core"
)

// metrics are the server's series (docs/API.md lists them).
type metrics struct {
	requests      *prometheus.HistogramVec
	searchSeconds prometheus.Histogram
	searchMatches prometheus.Histogram
	injected      prometheus.Histogram
	hits          prometheus.Counter
	uses          prometheus.Counter
	validations   *prometheus.CounterVec
	candidates    *prometheus.CounterVec
	storeErrors   *prometheus.CounterVec
	receipts      *prometheus.CounterVec
	rateLimited   *prometheus.CounterVec
	authFailures  prometheus.Counter
	idemReplays   prometheus.Counter
	expired       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, s *Server) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memex_http_request_duration_seconds", Help: "HTTP request latency by route, method and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method", "code"}),
		searchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memex_search_duration_seconds", Help: "Store search latency.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}),
		searchMatches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memex_search_matches", Help: "Matches returned per search.", Buckets: []float64{0, 1, 2, 3, 4, 6, 10, 20, 50},
		}),
		injected: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memex_inject_items", Help: "Items the gatekeeper injected per inject request.", Buckets: []float64{0, 1, 2, 3, 4, 6, 10},
		}),
		hits: prometheus.NewCounter(prometheus.CounterOpts{Name: "memex_hits_total", Help: "QA references reported shown."}),
		uses: prometheus.NewCounter(prometheus.CounterOpts{Name: "memex_uses_total", Help: "QA references reported used."}),
		validations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memex_validations_total", Help: "Validations by result, strength and whether they were applied (false: audit only, no valid receipt).",
		}, []string{"result", "strength", "applied"}),
		candidates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memex_candidates_total", Help: "Candidates by outcome: created, deduplicated, blocked (secret).",
		}, []string{"outcome"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memex_store_errors_total", Help: "Store failures (not client errors) by operation.",
		}, []string{"op"}),
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memex_receipts_total", Help: "Receipts issued, accepted, rejected or missing on reports.",
		}, []string{"outcome"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memex_rate_limited_total", Help: "Requests refused with 429 by key id.",
		}, []string{"key"}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "memex_auth_failures_total", Help: "Requests with a missing or unknown API key."}),
		idemReplays:  prometheus.NewCounter(prometheus.CounterOpts{Name: "memex_idempotent_replays_total", Help: "Writes answered from the Idempotency-Key cache."}),
		expired:      prometheus.NewCounter(prometheus.CounterOpts{Name: "memex_expired_total", Help: "QAs deprecated by the expiry job."}),
	}
	m.zero(s)
	cs := []prometheus.Collector{m.requests, m.searchSeconds, m.searchMatches, m.injected, m.hits, m.uses, m.validations,
		m.candidates, m.storeErrors, m.receipts, m.rateLimited, m.authFailures, m.idemReplays, m.expired}
	if st, ok := core.As[core.Statser](s.store); ok {
		cs = append(cs, newProjectCollector(s, st))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("service: register metrics: %w", err)
		}
	}
	return m, nil
}

// The label values every labelled counter can take: each series is
// exported from the start at zero, so a rate() or an alert sees it before
// its first event.
var (
	validationResults   = [...]string{string(core.ResultPass), string(core.ResultFail)}
	validationStrengths = [...]string{string(core.StrengthStrong), string(core.StrengthMedium), string(core.StrengthWeak)}
	candidateOutcomes   = [...]string{"created", "deduplicated", "blocked"}
	receiptOutcomes     = [...]string{"issued", "accepted", "rejected", "missing"}
	storeOps            = [...]string{"search", "candidate", "hit", "validate", "get", "list", "delete", "patch", "expire", "grade",
		"stats", "projects", "audit", "ping", "receipt_issue", "receipt_redeem",
		"store put", "store get", "store delete", "store list", "store search", "store clear"}
	projectStatuses = [...]core.Status{core.StatusCandidate, core.StatusActive, core.StatusVerified, core.StatusStale,
		core.StatusDeprecated, core.StatusFrozen}
)

// zero creates every labelled counter's series at zero (rate_limited: one
// per configured key).
func (m *metrics) zero(s *Server) {
	for _, r := range validationResults {
		for _, st := range validationStrengths {
			m.validations.WithLabelValues(r, st, "true")
			m.validations.WithLabelValues(r, st, "false")
		}
	}
	for _, o := range candidateOutcomes {
		m.candidates.WithLabelValues(o)
	}
	for _, o := range receiptOutcomes {
		m.receipts.WithLabelValues(o)
	}
	for _, op := range storeOps {
		m.storeErrors.WithLabelValues(op)
	}
	for _, k := range s.cfg.Keys {
		m.rateLimited.WithLabelValues(k.ID)
	}
}

func (s *Server) serveMetrics(c echo.Context) error {
	if s.gatherer == nil {
		return &notImplementedError{what: "/metrics (the registerer is not a gatherer)"}
	}
	promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}

// projectCollector exports trust, level and status distributions per
// project from core.Statser, cached for Config.StatsInterval so a scrape
// does not recompute them every time.
type projectCollector struct {
	s  *Server
	st core.Statser

	status *prometheus.Desc
	level  *prometheus.Desc
	trust  *prometheus.Desc

	mu    sync.Mutex
	at    time.Time
	cache []prometheus.Metric
}

func newProjectCollector(s *Server, st core.Statser) *projectCollector {
	return &projectCollector{
		s: s, st: st,
		status: prometheus.NewDesc("memex_project_qas", "QAs per project by status.", []string{"project", "status"}, nil),
		level:  prometheus.NewDesc("memex_project_level_qas", "QAs per project by validation level.", []string{"project", "level"}, nil),
		trust: prometheus.NewDesc("memex_project_trust_qas", "QAs per project by trust bucket: bucket=\"0.3-0.4\" counts trust in [0.3, 0.4) (1.0 in the last); the buckets are not cumulative.",
			[]string{"project", "bucket"}, nil),
	}
}

func (pc *projectCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pc.status
	ch <- pc.level
	ch <- pc.trust
}

func (pc *projectCollector) Collect(ch chan<- prometheus.Metric) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	now := pc.s.now()
	if pc.cache == nil || now.Sub(pc.at) >= pc.s.cfg.StatsInterval {
		pc.cache, pc.at = pc.gather(), now
	}
	for _, m := range pc.cache {
		ch <- m
	}
}

// gather lists the projects (core.ProjectLister) and reads their stats.
func (pc *projectCollector) gather() []prometheus.Metric {
	pl, ok := core.As[core.ProjectLister](pc.s.store)
	if !ok {
		return []prometheus.Metric{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pc.s.cfg.RequestTimeout)
	defer cancel()
	ps, err := pl.Projects(ctx)
	if err != nil {
		pc.s.metrics.storeErrors.WithLabelValues("projects").Inc()
		return []prometheus.Metric{}
	}
	var out []prometheus.Metric
	for _, p := range ps {
		st, err := pc.st.Stats(ctx, p.ProjectID)
		if err != nil {
			pc.s.metrics.storeErrors.WithLabelValues("stats").Inc()
			continue
		}
		for _, status := range projectStatuses {
			out = append(out, prometheus.MustNewConstMetric(pc.status, prometheus.GaugeValue, float64(st.ByStatus[status]), p.ProjectID, string(status)))
		}
		for l := range 4 {
			level := core.LevelName(l)
			out = append(out, prometheus.MustNewConstMetric(pc.level, prometheus.GaugeValue, float64(st.ByLevel[level]), p.ProjectID, level))
		}
		for i := range 10 {
			n := 0
			if i < len(st.TrustHistogram) {
				n = st.TrustHistogram[i]
			}
			out = append(out, prometheus.MustNewConstMetric(pc.trust, prometheus.GaugeValue, float64(n), p.ProjectID, trustBucket(i)))
		}
	}
	return out
}

// trustBucket names the i-th 0.1-wide trust bucket: "0.0-0.1" … "0.9-1.0".
func trustBucket(i int) string {
	return strconv.FormatFloat(float64(i)/10, 'f', 1, 64) + "-" + strconv.FormatFloat(float64(i+1)/10, 'f', 1, 64)
}
