package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evalset"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/service"
)

// benchProject is the one project the service benchmark fills.
const benchProject = "svc-bench"

// runService measures `memex serve` (package service) on Redis over real
// loopback HTTP (SPEC §9): search throughput against a bare echo JSON
// handler in the same run with the same client, search latency at -c
// concurrent clients, validations per second with the counters checked
// afterwards, and Redis bytes per QA. It prints a markdown table.
func runService(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("service", flag.ContinueOnError)
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "Redis URL (a dedicated key prefix is used and removed afterwards)")
	n := fs.Int("n", 100000, "QAs in the project")
	prefix := fs.String("prefix", "", "key prefix (default: memexbench-svc-<pid>); an existing prefix with -keep data is reused")
	keep := fs.Bool("keep", false, "keep the data under -prefix for a later run (with the same -prefix and -n)")
	conc := fs.Int("c", 64, "concurrent clients (keep-alive connections)")
	dur := fs.Duration("d", 10*time.Second, "duration of each timed phase")
	rounds := fs.Int("rounds", 3, "rounds of (bare, service) search phases; medians are reported")
	kind := fs.String("queries", "prompt", "query style: prompt (~200 characters, like an agent prompt) or question (a short question)")
	valQAs := fs.Int("validate-qas", 1000, "distinct QAs the validations go to")
	skipSearch := fs.Bool("skip-search", false, "skip the search phases")
	skipValidate := fs.Bool("skip-validate", false, "skip the validation phase")
	indexCache := fs.Int64("index-cache", redisstore.DefaultIndexCache, "the Redis store's search index cache in bytes (0: off)")
	onlyService := fs.Bool("only-service", false, "skip the bare phases (profiling)")
	openRate := fs.Float64("rate", 0, "also measure search latency in an open loop: the -c clients together send this many requests per second on a fixed schedule (latency counted from each request's scheduled time, so queueing is included); 0: skip")
	mix := fs.Float64("mix", 0, "send this many passing validations per second (of random QAs of the project) alongside each service search phase: searches then see records change, as in a team's use; 0: none")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed phases (client and servers: one process) to this file")
	memProfile := fs.String("memprofile", "", "write the process's allocations (pprof allocs: the load and every phase) to this file at the end")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *conc < 1 || *n < 1 || *rounds < 1 {
		return errors.New("-c, -n and -rounds must be positive")
	}
	if *prefix == "" {
		*prefix = "memexbench-svc-" + strconv.Itoa(os.Getpid())
	}
	ctx := context.Background()
	store, err := redisstore.Open(ctx, *redisURL, redisstore.WithPrefix(*prefix), redisstore.WithIndexCache(*indexCache))
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	opt, err := redis.ParseURL(*redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer func() { _ = rdb.Close() }()
	if !*keep {
		defer func() {
			if err := deletePrefix(ctx, rdb, *prefix); err != nil {
				fmt.Fprintln(os.Stderr, "memex-bench: cleanup:", err)
			}
		}()
	}

	// Load (or reuse) the corpus, measuring Redis memory.
	memBefore, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	questions, rawBytes, loadTime, reused, err := loadCorpus(ctx, store, rdb, *prefix, *n)
	if err != nil {
		return err
	}
	if reused {
		if k, err := deleteLeftovers(ctx, rdb, *prefix); err != nil {
			return fmt.Errorf("removing earlier runs' receipts: %w", err)
		} else if k > 0 {
			fmt.Fprintf(out, "memex-bench service: removed %d receipt and dedup keys left by earlier runs\n", k)
		}
	}
	memUsage, keysN, err := prefixMemory(ctx, rdb, *prefix)
	if err != nil {
		return err
	}
	var memDelta int64
	if !reused {
		after, err := usedMemory(ctx, rdb)
		if err != nil {
			return err
		}
		memDelta = after - memBefore
	}

	// The service, and the bare echo peer, on loopback.
	secret := "bench-secret-" + strconv.FormatUint(rand.Uint64(), 36)
	cfg := service.DefaultConfig()
	cfg.Keys = []service.Key{{ID: "bench", SecretSHA256: service.HashSecret(secret), Role: service.RoleAgent, Projects: []string{benchProject}}}
	cfg.ExpiryInterval = -1
	// Validations are sent without receipts: count them (a real run quotes
	// the receipt of its search; the store work is the same).
	cfg.RequireReceipts = false
	srv, err := service.New(store, cfg)
	if err != nil {
		return err
	}
	svcURL, stopSvc, err := serveOn(ctx, srv.Serve)
	if err != nil {
		return err
	}
	defer stopSvc()

	queries, err := serviceQueries(4096, questions, *kind)
	if err != nil {
		return err
	}
	var nm int
	for _, q := range queries[:100] {
		ms, err := store.Search(ctx, core.SearchRequest{ProjectID: benchProject, Query: q, MinScore: core.DefaultMinScore})
		if err != nil {
			return err
		}
		nm += len(ms)
	}
	bodies := make([][]byte, len(queries))
	for i, q := range queries {
		bodies[i], _ = json.Marshal(map[string]any{"project_id": benchProject, "query": q, "limit": core.DefaultSearchLimit})
	}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: *conc * 2, MaxIdleConnsPerHost: *conc * 2, MaxConnsPerHost: 0,
		DisableCompression: true, IdleConnTimeout: time.Minute,
	}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	auth := "Bearer " + secret

	// The peer answers the same bytes a real search answers: one search's
	// matches, encoded per request by echo like the service does.
	var canned []core.Match
	for _, b := range bodies[:50] {
		var ms []core.Match
		if err := postJSON(client, svcURL+"/v1/qa/search", auth, b, &ms); err != nil {
			return fmt.Errorf("first search: %w", err)
		}
		if len(ms) > len(canned) {
			canned = ms
		}
	}
	bare := echo.New()
	bare.HideBanner, bare.HidePort = true, true
	bare.POST("/v1/qa/search", func(c echo.Context) error {
		var req core.SearchRequest
		if err := c.Bind(&req); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, canned)
	})
	bareURL, stopBare, err := serveOn(ctx, func(ctx context.Context, ln net.Listener) error {
		hs := &http.Server{Handler: bare, ReadHeaderTimeout: 10 * time.Second}
		go func() { <-ctx.Done(); _ = hs.Close() }()
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer stopBare()

	cannedJSON, _ := json.Marshal(canned)
	fmt.Fprintf(out, "memex-bench service: %d QAs in one project (%s), %s queries, %d clients, %s per phase, GOMAXPROCS=%d, index cache %d MiB; %.1f matches per search (first 100 queries); the peer answers a search's %d matches (%d bytes)\n",
		*n, map[bool]string{true: "reused", false: "loaded in " + loadTime.Round(time.Millisecond).String()}[reused], *kind, *conc, *dur, maxProcs(), *indexCache>>20, float64(nm)/100, len(canned), len(cannedJSON))

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	if *memProfile != "" {
		defer func() {
			if err := writeAllocs(*memProfile); err != nil {
				fmt.Fprintln(os.Stderr, "memex-bench: -memprofile:", err)
			}
		}()
	}
	var bareRuns, svcRuns []phase
	if !*skipSearch {
		// Warm up both (connections, Redis pages, JIT of nothing: Go).
		_, _ = loadPhase(client, bareURL+"/v1/qa/search", auth, bodies, *conc, time.Second/2)
		_, _ = loadPhase(client, svcURL+"/v1/qa/search", auth, bodies, *conc, time.Second)
		for r := range *rounds {
			b := phase{lat: []time.Duration{0}, elapsed: time.Second}
			if !*onlyService {
				if b, err = loadPhase(client, bareURL+"/v1/qa/search", auth, bodies, *conc, *dur); err != nil {
					return fmt.Errorf("bare round %d: %w", r+1, err)
				}
			}
			stopMix := mixValidations(client, svcURL, auth, *n, *mix)
			redis0 := redisCPU(ctx, rdb)
			s, err := loadPhase(client, svcURL+"/v1/qa/search", auth, bodies, *conc, *dur)
			s.redisCPU = redisCPU(ctx, rdb) - redis0
			mixed := stopMix()
			if err != nil {
				return fmt.Errorf("service round %d: %w", r+1, err)
			}
			if *mix > 0 {
				fmt.Fprintf(out, "round %d: %.0f validations/s alongside the searches\n", r+1, mixed/s.elapsed.Seconds())
			}
			bareRuns, svcRuns = append(bareRuns, b), append(svcRuns, s)
			if *onlyService {
				fmt.Fprintf(out, "round %d: service %.0f req/s (p50 %s, p99 %s, %s CPU/req, Redis %s CPU/req, steal %.0f %%)\n", r+1, s.rate(), s.pct(0.50), s.pct(0.99), s.cpuPerReq(), s.redisPerReq(), s.stealPct())
			} else {
				fmt.Fprintf(out, "round %d: bare %.0f req/s (p99 %s, %s CPU/req, steal %.0f %%), service %.0f req/s (p50 %s, p99 %s, %s CPU/req, Redis %s CPU/req, steal %.0f %%), ratio %.1f %%\n",
					r+1, b.rate(), b.pct(0.99), b.cpuPerReq(), b.stealPct(), s.rate(), s.pct(0.50), s.pct(0.99), s.cpuPerReq(), s.redisPerReq(), s.stealPct(), 100*s.rate()/b.rate())
			}
		}
	}

	var open []phase
	if !*skipSearch && *openRate > 0 {
		for r := range *rounds {
			o, err := openLoadPhase(client, svcURL+"/v1/qa/search", auth, bodies, *conc, *openRate, *dur)
			if err != nil {
				return fmt.Errorf("open-loop round %d: %w", r+1, err)
			}
			open = append(open, o)
			fmt.Fprintf(out, "open loop round %d: %.0f req/s offered, %.0f done (p50 %s, p99 %s, steal %.0f %%)\n", r+1, *openRate, o.rate(), o.pct(0.50), o.pct(0.99), o.stealPct())
		}
	}

	var val *valResult
	if !*skipValidate {
		v, err := validatePhase(ctx, client, svcURL, auth, store, min(*valQAs, *n), *conc, *dur)
		if err != nil {
			return err
		}
		val = &v
	}

	// The table.
	fmt.Fprintf(out, "\n| what | target | measured |\n|---|---|---|\n")
	if len(svcRuns) > 0 {
		ratios := make([]float64, len(svcRuns))
		for i := range svcRuns {
			ratios[i] = svcRuns[i].rate() / bareRuns[i].rate()
		}
		if *onlyService {
			fmt.Fprintf(out, "| search throughput through the service (%d clients; bare handler not run) | — | %.0f req/s (median of %d rounds) |\n",
				*conc, median(rates(svcRuns)), len(svcRuns))
		} else {
			fmt.Fprintf(out, "| search throughput, service ÷ bare echo JSON handler (same run, same client, %d clients) | ≥ 50 %% | **%.1f %%** (median of %d rounds: service %.0f req/s, bare %.0f req/s) |\n",
				*conc, 100*median(ratios), len(ratios), median(rates(svcRuns)), median(rates(bareRuns)))
		}
		fmt.Fprintf(out, "| search latency through the service, %d clients | p99 ≤ 20 ms | p50 %s, p90 %s, **p99 %s** (median of rounds) |\n",
			*conc, medianPct(svcRuns, 0.50), medianPct(svcRuns, 0.90), medianPct(svcRuns, 0.99))
		if !*onlyService {
			fmt.Fprintf(out, "| bare echo handler latency, %d clients | — | p50 %s, p99 %s |\n", *conc, medianPct(bareRuns, 0.50), medianPct(bareRuns, 0.99))
		}
		if len(open) > 0 {
			fmt.Fprintf(out, "| search latency through the service, %d clients sending %.0f req/s together (open loop) | p99 ≤ 20 ms | p50 %s, p90 %s, **p99 %s** (median of rounds) |\n",
				*conc, *openRate, medianPct(open, 0.50), medianPct(open, 0.90), medianPct(open, 0.99))
		}
		fmt.Fprintf(out, "| CPU time of this process per request (load generator and servers; Redis not included) | — | service %s, bare %s (median of rounds) |\n",
			medianCPU(svcRuns), medianCPU(bareRuns))
		fmt.Fprintf(out, "| CPU time of the Redis server per search (INFO cpu; every client of the server counts) | — | %s (median of rounds) |\n",
			medianRedisCPU(svcRuns))
	}
	if val != nil {
		exact := "exact"
		if val.mismatches > 0 {
			exact = fmt.Sprintf("**%d QAs wrong**", val.mismatches)
		}
		fmt.Fprintf(out, "| `POST /v1/qa/validate`, %d clients, %d QAs | ≥ 5,000/s, exact counters | **%.0f /s** (%d acknowledged, %d errors; p99 %s; %s CPU/req; counters %s; steal %.0f %%) |\n",
			*conc, val.qas, val.rate(), val.acked, val.errors, val.p.pct(0.99), val.p.cpuPerReq(), exact, val.p.stealPct())
	}
	fmt.Fprintf(out, "| Redis memory per QA (MEMORY USAGE of the prefix's %d index and record keys) | ≤ 3× raw (%.0f B) | **%.0f B/QA = %.2f×** the raw question+answer bytes |\n",
		keysN, 3*float64(rawBytes)/float64(*n), float64(memUsage)/float64(*n), float64(memUsage)/float64(rawBytes))
	if memDelta != 0 {
		fmt.Fprintf(out, "| Redis memory per QA (INFO used_memory delta over the load; other clients of the server add noise) | ≤ 3× raw | %.0f B/QA = %.2f× |\n",
			float64(memDelta)/float64(*n), float64(memDelta)/float64(rawBytes))
	}
	if val != nil && val.mismatches > 0 {
		return fmt.Errorf("validation counters are wrong on %d QAs", val.mismatches)
	}
	return nil
}

func maxProcs() int { return runtime.GOMAXPROCS(0) }

func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// serviceQueries are n search queries that have answers in the corpus of
// size corpus: "question" is a stored question (a search typed by hand for
// something the team knows), "prompt" the same question inside ~200
// characters of unrelated prompt text (what memex run sends).
func serviceQueries(n int, questions []string, kind string) ([]string, error) {
	noise := evalset.NewSynthetic(1007)
	step := max(1, len(questions)/n)
	qs := make([]string, n)
	for i := range qs {
		q := questions[(i*step)%len(questions)]
		switch kind {
		case "question":
		case "prompt":
			if extra := noise.Query(); len(q) < 200 {
				cut := min(len(extra), 200-len(q))
				for cut > 0 && cut < len(extra) && extra[cut] != ' ' {
					cut--
				}
				q += " " + extra[:cut]
			}
		default:
			return nil, fmt.Errorf("-queries: %q is not prompt or question", kind)
		}
		qs[i] = q
	}
	return qs, nil
}

// serveOn serves on a fresh loopback listener until the returned stop.
func serveOn(ctx context.Context, serve func(context.Context, net.Listener) error) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serve(sctx, ln); err != nil {
			fmt.Fprintln(os.Stderr, "memex-bench: serve:", err)
		}
	}()
	return "http://" + ln.Addr().String(), func() { cancel(); <-done }, nil
}

// loadCorpus imports n synthetic QAs with the plugin's batch import, or
// reuses them when the prefix already holds n. It returns the raw
// question+answer bytes.
func loadCorpus(ctx context.Context, store *redisstore.Store, rdb *redis.Client, prefix string, n int) (questions []string, raw int64, took time.Duration, reused bool, err error) {
	syn := evalset.NewSynthetic(1)
	recs := make([]core.Record, n)
	questions = make([]string, n)
	for i := range n {
		r := syn.Record(i)
		raw += int64(len(r.Question) + len(r.Answer))
		questions[i] = r.Question
		recs[i] = core.Record{QAID: r.ID, ProjectID: benchProject, Question: r.Question, Answer: r.Answer, Status: core.StatusActive}
	}
	page, err := store.List(ctx, core.ListRequest{ProjectID: benchProject, Limit: 1})
	if err == nil && len(page.Items) > 0 {
		st, err := store.Stats(ctx, benchProject)
		if err == nil && st.Total == n {
			return questions, raw, 0, true, nil
		}
		return nil, 0, 0, false, fmt.Errorf("prefix %s already holds data (%d QAs, want %d): pick another -prefix", prefix, st.Total, n)
	}
	start := time.Now()
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		if err := store.Import(ctx, recs[i:min(i+chunk, n)]); err != nil {
			return nil, 0, 0, false, fmt.Errorf("import: %w", err)
		}
	}
	return questions, raw, time.Since(start), false, nil
}

func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO memory has no used_memory")
}

// prefixMemory sums MEMORY USAGE (exact: SAMPLES 0) over the prefix's
// keys, leaving out what traffic adds (receipts of searches, validation
// event keys, the audit stream): they expire or are capped, and a reused
// prefix has them from earlier runs.

func prefixMemory(ctx context.Context, rdb *redis.Client, prefix string) (int64, int, error) {
	var total int64
	var nkeys int
	iter := rdb.Scan(ctx, 0, escapeGlob(prefix)+":*", 1000).Iterator()
	pipe := rdb.Pipeline()
	var cmds []*redis.IntCmd
	flush := func() error {
		if len(cmds) == 0 {
			return nil
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for _, c := range cmds {
			total += c.Val()
		}
		cmds = cmds[:0]
		return nil
	}
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.Contains(k, "}:rc:") || strings.Contains(k, "}:ev:") || strings.HasSuffix(k, "}:audit") {
			continue
		}
		cmds = append(cmds, pipe.MemoryUsage(ctx, k, 0))
		nkeys++
		if len(cmds) == 1000 {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return 0, 0, err
	}
	return total, nkeys, flush()
}

// deletePrefix removes every key under prefix.
func deletePrefix(ctx context.Context, rdb *redis.Client, prefix string) error {
	_, err := deleteMatching(ctx, rdb, escapeGlob(prefix)+":*")
	return err
}

// deleteLeftovers removes what earlier runs on a kept prefix left: search
// receipts and write dedup keys (they expire after 7 days and 24 hours).
// Kept, they pile up over runs (one receipt key a search) and slow Redis
// down: a dozen runs left ~1.3M keys and ~20 % fewer searches a second.
func deleteLeftovers(ctx context.Context, rdb *redis.Client, prefix string) (int, error) {
	n := 0
	for _, kind := range []string{"rc", "ev"} {
		k, err := deleteMatching(ctx, rdb, escapeGlob(prefix)+":{*}:"+kind+":*")
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// deleteMatching unlinks the keys matching a SCAN pattern and returns how
// many.
func deleteMatching(ctx context.Context, rdb *redis.Client, pattern string) (int, error) {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n += len(batch)
		err := rdb.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return n, err
	}
	if err := flush(); err != nil {
		return n, err
	}
	// UNLINK frees in Redis's background thread, which would take CPU from
	// the phases about to be timed: wait for it.
	for range 600 {
		info, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			return n, err
		}
		if strings.Contains(info, "lazyfree_pending_objects:0\r\n") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return n, nil
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func postJSON(client *http.Client, url, auth string, body []byte, out any) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// phase is one timed load phase: the latencies of every completed request.
type phase struct {
	lat     []time.Duration // sorted
	elapsed time.Duration
	errors  int64
	cpu     time.Duration // this process's CPU time (client and servers)
	// redisCPU is the Redis server's CPU time (INFO cpu) over the phase,
	// set by the caller for phases that use it.
	redisCPU time.Duration
	steal    int64 // the machine's stolen CPU time (stealTicks)
}

// cpuPerReq is the process's CPU time per completed request: less
// sensitive than throughput to other jobs on a shared machine.
func (p phase) cpuPerReq() time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	return (p.cpu / time.Duration(len(p.lat))).Round(time.Microsecond)
}

// redisPerReq is the Redis server's CPU time per completed request.
func (p phase) redisPerReq() time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	return (p.redisCPU / time.Duration(len(p.lat))).Round(time.Microsecond)
}

// redisCPU is the Redis server's CPU time so far (INFO cpu: used_cpu_sys
// plus used_cpu_user, its threads together); 0 where unknown.
func redisCPU(ctx context.Context, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			x, _ := strconv.ParseFloat(v, 64)
			sum += x
		}
	}
	return time.Duration(sum * float64(time.Second))
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stealTicks is the CPU time the hypervisor has taken from this machine so
// far (the steal column of /proc/stat's cpu line), in clock ticks (1/100
// s); 0 where unknown. On a shared VM it explains throughput that moves
// while CPU per request does not.
func stealTicks() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	n, _ := strconv.ParseInt(f[8], 10, 64)
	return n
}

// stealPct is the share of the machine's CPU time stolen during the phase.
func (p phase) stealPct() float64 {
	if p.elapsed <= 0 {
		return 0
	}
	return 100 * float64(p.steal) / 100 / (p.elapsed.Seconds() * float64(runtime.NumCPU()))
}

func (p phase) rate() float64 { return float64(len(p.lat)) / p.elapsed.Seconds() }

func (p phase) pct(q float64) time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	return p.lat[min(len(p.lat)-1, int(q*float64(len(p.lat))))].Round(10 * time.Microsecond)
}

// loadPhase runs conc goroutines that POST bodies (round robin) to url
// back to back for d; each owns a keep-alive connection.
func loadPhase(client *http.Client, url, auth string, bodies [][]byte, conc int, d time.Duration) (phase, error) {
	return runLoad(conc, d, func(w, i int) (bool, error) {
		return postSearch(client, url, auth, bodies[(w*7919+i)%len(bodies)])
	})
}

// mixValidations posts passing validations of random QAs of the bench
// project at rate per second (4 senders on a fixed schedule) until the
// returned stop, which returns how many were acknowledged.
func mixValidations(client *http.Client, url, auth string, n int, rate float64) (stop func() float64) {
	if rate <= 0 {
		return func() float64 { return 0 }
	}
	const senders = 4
	var (
		wg   sync.WaitGroup
		done atomic.Int64
		quit = make(chan struct{})
	)
	gap := time.Duration(float64(time.Second) * senders / rate)
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(gap)
			defer t.Stop()
			for {
				select {
				case <-quit:
					return
				case <-t.C:
				}
				body, _ := json.Marshal(map[string]any{"project_id": benchProject, "qa_id": "syn-" + strconv.Itoa(rand.IntN(n)), "result": "pass"})
				if postJSON(client, url+"/v1/qa/validate", auth, body, &struct{}{}) == nil {
					done.Add(1)
				}
			}
		}()
	}
	return func() float64 {
		close(quit)
		wg.Wait()
		return float64(done.Load())
	}
}

// postSearch POSTs one search body and drains the answer.
func postSearch(client *http.Client, url, auth string, body []byte) (bool, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	res, err := client.Do(req)
	if err != nil {
		return false, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %d", res.StatusCode)
	}
	return true, nil
}

// openLoadPhase is loadPhase in an open loop: the conc clients together
// send rate requests per second for d, each on a fixed schedule (client w's
// k-th request is due at start + (w + k·conc)/rate). A request's latency is
// counted from when it was due, so a server that falls behind is charged
// for the queue it builds (no coordinated omission).
func openLoadPhase(client *http.Client, url, auth string, bodies [][]byte, conc int, rate float64, d time.Duration) (phase, error) {
	gap := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	p, err := runLoadFrom(conc, d, func(w, i int) time.Time {
		due := start.Add(time.Duration(w+i*conc) * gap)
		time.Sleep(time.Until(due))
		return due
	}, func(w, i int) (bool, error) {
		return postSearch(client, url, auth, bodies[(w*7919+i)%len(bodies)])
	})
	return p, err
}

// runLoad calls do(worker, i) from conc goroutines for d and collects the
// latencies of the calls that returned true. More than 1 % errors fails.
func runLoad(conc int, d time.Duration, do func(w, i int) (bool, error)) (phase, error) {
	return runLoadFrom(conc, d, func(int, int) time.Time { return time.Now() }, do)
}

// runLoadFrom is runLoad with each call's latency counted from the time
// begin returns (begin may wait for a schedule).
func runLoadFrom(conc int, d time.Duration, begin func(w, i int) time.Time, do func(w, i int) (bool, error)) (phase, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		all     []time.Duration
		errs    atomic.Int64
		firstMu sync.Mutex
		first   error
	)
	start := time.Now()
	cpu0, steal0 := processCPU(), stealTicks()
	deadline := start.Add(d)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := begin(w, i)
				if !t0.Before(deadline) {
					break
				}
				ok, err := do(w, i)
				if err != nil {
					errs.Add(1)
					firstMu.Lock()
					if first == nil {
						first = err
					}
					firstMu.Unlock()
					continue
				}
				if ok {
					lat = append(lat, time.Since(t0))
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	p := phase{lat: all, elapsed: time.Since(start), errors: errs.Load(), cpu: processCPU() - cpu0, steal: stealTicks() - steal0}
	slices.Sort(p.lat)
	if p.errors > 0 && float64(p.errors) > 0.01*float64(len(p.lat)+int(p.errors)) {
		return p, fmt.Errorf("%d of %d requests failed, first: %w", p.errors, int64(len(p.lat))+p.errors, first)
	}
	return p, nil
}

type valResult struct {
	p             phase
	qas           int
	acked, errors int64
	mismatches    int
}

func (v valResult) rate() float64 { return v.p.rate() }

// validatePhase posts passing validations of random QAs among the first
// qas for d, then checks that every QA's success_count grew by exactly the
// number of acknowledged validations.
func validatePhase(ctx context.Context, client *http.Client, url, auth string, store *redisstore.Store, qas, conc int, d time.Duration) (valResult, error) {
	ids := make([]string, qas)
	before := make([]int64, qas)
	for i := range ids {
		ids[i] = "syn-" + strconv.Itoa(i)
		r, err := store.Get(ctx, benchProject, ids[i])
		if err != nil {
			return valResult{}, fmt.Errorf("get %s: %w", ids[i], err)
		}
		before[i] = r.SuccessCount
	}
	acks := make([]atomic.Int64, qas)
	bodies := make([][]byte, qas)
	for i, id := range ids {
		bodies[i], _ = json.Marshal(map[string]any{"project_id": benchProject, "qa_id": id, "result": "pass"})
	}
	p, err := runLoad(conc, d, func(w, i int) (bool, error) {
		k := rand.IntN(qas)
		var out struct {
			Applied *bool `json:"applied"`
		}
		if err := postJSON(client, url+"/v1/qa/validate", auth, bodies[k], &out); err != nil {
			return false, err
		}
		if out.Applied == nil || !*out.Applied {
			return false, errors.New("validation not applied")
		}
		acks[k].Add(1)
		return true, nil
	})
	if err != nil {
		return valResult{}, fmt.Errorf("validate: %w", err)
	}
	v := valResult{p: p, qas: qas, errors: p.errors}
	for i, id := range ids {
		r, err := store.Get(ctx, benchProject, id)
		if err != nil {
			return valResult{}, fmt.Errorf("get %s: %w", id, err)
		}
		got, want := r.SuccessCount-before[i], acks[i].Load()
		v.acked += want
		if got != want {
			v.mismatches++
			if v.mismatches <= 5 {
				fmt.Fprintf(os.Stderr, "memex-bench: %s: success_count grew by %d, %d validations acknowledged\n", id, got, want)
			}
		}
	}
	return v, nil
}

func rates(ps []phase) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.rate()
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianCPU(ps []phase) time.Duration {
	xs := make([]float64, len(ps))
	for i, p := range ps {
		xs[i] = float64(p.cpuPerReq())
	}
	return time.Duration(median(xs)).Round(time.Microsecond)
}

func medianRedisCPU(ps []phase) time.Duration {
	xs := make([]float64, len(ps))
	for i, p := range ps {
		xs[i] = float64(p.redisPerReq())
	}
	return time.Duration(median(xs)).Round(time.Microsecond)
}

func medianPct(ps []phase, q float64) time.Duration {
	xs := make([]float64, len(ps))
	for i, p := range ps {
		xs[i] = float64(p.pct(q))
	}
	return time.Duration(median(xs)).Round(10 * time.Microsecond)
}
