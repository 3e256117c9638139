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

// measureMemory loads n corpus QAs into a private server and returns the
// Redis memory per QA and the raw question+answer bytes per QA.
func measureMemory(tb testing.TB, n int) (perQA, rawPerQA float64, byKind map[string]int64) {
	srv := redistest.StartServer(tb, redistest.ServerOptions{})
	s, err := Open(tb.Context(), srv.URL())
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	before := usedMemory(tb, s)
	recs := coretest.Corpus(n, "mem", 1)
	coretest.Load(tb, s, recs)
	after := usedMemory(tb, s)
	var raw int64
	for _, r := range recs {
		raw += int64(len(r.Question) + len(r.Answer))
	}
	byKind = map[string]int64{}
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
