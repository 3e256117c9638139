package redisstore

import (
	"strconv"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
)

// usedMemory reads used_memory from INFO memory.
func usedMemory(tb testing.TB, s *Store) int64 {
	tb.Helper()
	info, err := s.rdb.Info(tb.Context(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatal("no used_memory in INFO")
	return 0
}

// dataMemory is used_memory without what Redis keeps about the commands
// it ran rather than the data: the latency histogram of each kind of
// command, made at its first call (~40 KiB each, ~0.6 MiB for the
// commands of a load), and the slow log (up to 128 entries with their
// arguments: a load's import scripts fill it). Both are a bounded cost
// per server whatever the data's size; CONFIG RESETSTAT and SLOWLOG RESET
// clear them.
func dataMemory(tb testing.TB, s *Store) int64 {
	tb.Helper()
	ctx := tb.Context()
	if err := s.rdb.ConfigResetStat(ctx).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := s.rdb.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		tb.Fatal(err)
	}
	return usedMemory(tb, s)
}

// measureMemory loads n corpus QAs into a private server and returns the
// Redis memory per QA (INFO used_memory: dataMemory, and the raw delta,
// which also holds the command statistics and the slow log the load
// added), the raw question+answer bytes per QA and MEMORY USAGE by kind of
// key.
func measureMemory(tb testing.TB, n int) (perQA, rawPerQA float64, byKind map[string]int64) {
	srv := redistest.StartServer(tb, redistest.ServerOptions{})
	s, err := Open(tb.Context(), srv.URL())
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	before := dataMemory(tb, s)
	recs := coretest.Corpus(n, "mem", 1)
	coretest.Load(tb, s, recs)
	withStats := usedMemory(tb, s)
	after := dataMemory(tb, s)
	var raw int64
	for _, r := range recs {
		raw += int64(len(r.Question) + len(r.Answer))
	}
	byKind = map[string]int64{"info with command statistics": withStats - before}
	var cursor uint64
	ctx := tb.Context()
	for {
		keys, next, err := s.rdb.Scan(ctx, cursor, "*", 1000).Result()
		if err != nil {
			tb.Fatal(err)
		}
		for _, k := range keys {
			kind := "other"
			switch {
			case strings.Contains(k, "}:qa:"):
				kind = "records"
			case strings.Contains(k, "}:p:"), strings.Contains(k, "}:ps:"), strings.Contains(k, "}:len:"):
				kind = "postings"
			case strings.Contains(k, "}:docs:"), strings.Contains(k, "}:hash:"), strings.HasSuffix(k, "}:list"),
				strings.Contains(k, ":ids:"):
				kind = "id indexes"
			case strings.Contains(k, "}:k4:"):
				kind = "statistics"
			}
			m, _ := s.rdb.MemoryUsage(ctx, k, 0).Result()
			byKind[kind] += m
			byKind["memory usage"] += m
			if kind == "statistics" {
				if strings.Contains(k, "}:k4:sh:") {
					byKind["shares"] += m
				} else {
					byKind["sets"] += m
				}
			}
			if kind == "postings" {
				if strings.Contains(k, "}:ps:") {
					vals, _ := s.rdb.HVals(ctx, k).Result()
					for _, v := range vals {
						byKind["posting payload"] += int64(len(v))
					}
				} else {
					l, _ := s.rdb.StrLen(ctx, k).Result()
					byKind["posting payload"] += l
				}
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	return float64(after-before) / float64(n), float64(raw) / float64(n), byKind
}

// BenchmarkBytesPerQA reports Redis memory per QA at benchN QAs
// (MEMEX_BENCH_QAS, default 10k) on a private server.
func BenchmarkBytesPerQA(b *testing.B) {
	n := benchN(b)
	var per, raw float64
	for b.Loop() {
		per, raw, _ = measureMemory(b, n)
	}
	b.ReportMetric(per, "bytes/QA")
	b.ReportMetric(per/raw, "x-raw")
}
