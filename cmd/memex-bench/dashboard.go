package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evalset"
	"github.com/memex-dev/memex/plugins/embedded"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/service"
	"github.com/memex-dev/memex/ui"
)

// runDashboard measures a cold dashboard page: a project page of a
// project of -n QAs, served by a fresh server (no statistics computed yet,
// as right after memex ui or memex serve starts, or when the figure it
// keeps is older than max_age), over the embedded store (memex ui) and
// over Redis (memex serve).
//
//	memex-bench dashboard [-n 100000] [-trials 5] [-dir D] [-redis URL] [-store embedded,redis]
func runDashboard(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	n := fs.Int("n", 100000, "QAs in the project")
	trials := fs.Int("trials", 5, "cold loads per store (a fresh server each); the median and the slowest are reported")
	dir := fs.String("dir", "", "keep the embedded store here between runs (default: a temporary directory)")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "Redis URL (a dedicated key prefix is used and removed afterwards)")
	stores := fs.String("store", "embedded,redis", "the stores to measure")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *trials < 1 {
		return errors.New("-n and -trials must be positive")
	}
	ctx := context.Background()
	recs := dashboardCorpus(*n)
	for _, name := range splitList(*stores) {
		var (
			open func() (core.MemoryPlugin, func(), error)
			load time.Duration
		)
		switch name {
		case "embedded":
			d := *dir
			if d == "" {
				tmp, err := os.MkdirTemp("", "memex-bench-dashboard-")
				if err != nil {
					return err
				}
				defer func() { _ = os.RemoveAll(tmp) }()
				d = tmp
			}
			path := filepath.Join(d, "dashboard-"+strconv.Itoa(*n)+".db")
			if _, err := os.Stat(path); err != nil {
				st, err := embedded.Open(path)
				if err != nil {
					return err
				}
				start := time.Now()
				if err := importAll(ctx, st, recs); err != nil {
					return err
				}
				load = time.Since(start)
				_ = st.Close()
			}
			open = func() (core.MemoryPlugin, func(), error) {
				st, err := embedded.Open(path)
				if err != nil {
					return nil, nil, err
				}
				return st, func() { _ = st.Close() }, nil
			}
		case "redis":
			prefix := "memexbench-dash-" + strconv.Itoa(os.Getpid())
			st, err := redisstore.Open(ctx, *redisURL, redisstore.WithPrefix(prefix))
			if err != nil {
				return err
			}
			opt, err := redis.ParseURL(*redisURL)
			if err != nil {
				return err
			}
			rdb := redis.NewClient(opt)
			defer func() {
				if err := deletePrefix(ctx, rdb, prefix); err != nil {
					fmt.Fprintln(os.Stderr, "memex-bench: cleanup:", err)
				}
				_ = rdb.Close()
				_ = st.Close()
			}()
			start := time.Now()
			if err := importAll(ctx, st, recs); err != nil {
				return err
			}
			load = time.Since(start)
			open = func() (core.MemoryPlugin, func(), error) { return st, func() {}, nil }
		default:
			return fmt.Errorf("-store: unknown store %q (embedded, redis)", name)
		}
		var took []time.Duration
		for range *trials {
			d, err := coldPage(open)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			took = append(took, d)
		}
		slices.Sort(took)
		fmt.Fprintf(out, "dashboard %s: %d QAs (loaded in %s): cold project page median %s, slowest %s (%d fresh servers)\n",
			name, *n, load.Round(time.Millisecond), took[len(took)/2].Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond), *trials)
	}
	return nil
}

// coldPage opens the store, builds a fresh API with the dashboard (local
// mode, as memex ui) and times one load of the project page.
func coldPage(open func() (core.MemoryPlugin, func(), error)) (time.Duration, error) {
	st, closeStore, err := open()
	if err != nil {
		return 0, err
	}
	defer closeStore()
	var api *service.Server
	dash, err := ui.New(ui.Config{API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) }), Local: true, Projects: []string{benchProject}})
	if err != nil {
		return 0, err
	}
	if api, err = service.New(st, service.Config{InsecureLocal: true, ExpiryInterval: -1}, service.WithHandler(ui.Prefix, dash)); err != nil {
		return 0, err
	}
	w := httptest.NewRecorder()
	start := time.Now()
	api.ServeHTTP(w, httptest.NewRequest("GET", "/ui/p/"+benchProject, nil))
	d := time.Since(start)
	if w.Code != http.StatusOK {
		return 0, fmt.Errorf("project page: %d %s", w.Code, w.Body.String())
	}
	return d, nil
}

// dashboardCorpus is n synthetic QAs of benchProject with varied trust,
// levels, statuses and counters, as a project in use has.
func dashboardCorpus(n int) []core.Record {
	syn := evalset.NewSynthetic(1)
	statuses := []core.Status{core.StatusCandidate, core.StatusActive, core.StatusActive, core.StatusVerified, core.StatusDeprecated}
	now := time.Now().UTC()
	recs := make([]core.Record, n)
	for i := range n {
		r := syn.Record(i)
		recs[i] = core.Record{QAID: r.ID, ProjectID: benchProject, Question: r.Question, Answer: r.Answer,
			Status: statuses[i%len(statuses)], ValidationLevel: i % 4, SuccessCount: int64(i % 7), FailureCount: int64(i % 3),
			UsageCount: int64(i % 11), UseCount: int64(i % 5), CreatedAt: now.Add(-time.Duration(i) * time.Minute), UpdatedAt: now}
	}
	return recs
}

func importAll(ctx context.Context, st core.MemoryPlugin, recs []core.Record) error {
	im, ok := core.As[core.Importer](st)
	if !ok {
		return errors.New("the store cannot import")
	}
	const chunk = 2000
	for i := 0; i < len(recs); i += chunk {
		if err := im.Import(ctx, recs[i:min(i+chunk, len(recs))]); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return nil
}

func splitList(s string) []string {
	return slices.DeleteFunc(strings.Split(s, ","), func(f string) bool { return f == "" })
}
