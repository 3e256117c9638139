package redisstore

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/memex-dev/memex/retrieval"
)

// BenchmarkScanPostings measures the block scan of cached lists (lengths
// attached), per posting, in a warm cache: the scorer's inner loop reads
// every posting of a search's rarer terms through it.
func BenchmarkScanPostings(b *testing.B) {
	src, _ := randomSource(rand.New(rand.NewPCG(1, 2)), 3000)
	ctx := context.Background()
	var n, sum int
	fn := func(ps []retrieval.Posting) {
		n += len(ps)
		for _, p := range ps {
			sum += int(p.Len[0] + p.TF[1])
		}
	}
	for b.Loop() {
		for _, t := range []string{"w20", "w30", "w35", "w39"} {
			if err := src.ScanPostings(ctx, t, fn); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/posting")
}
