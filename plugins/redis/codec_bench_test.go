package redisstore

import (
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/trust"
)

// BenchmarkRecordCodec encodes and decodes the record value of a corpus
// QA as a validation leaves it (evidence of one source): what each write
// of a record and each read of one not in lastWritten costs.
func BenchmarkRecordCodec(b *testing.B) {
	r := coretest.Corpus(1, "bench", 1)[0]
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.CreatedAt, r.UpdatedAt = created, created
	st := trust.NewState("maker", created)
	trust.New(trust.DefaultParams()).Apply(st, trust.Vote{Source: "agent", Result: core.ResultPass, Strength: core.StrengthStrong, At: created}, nil)
	s := toStored(r, st, 4242)
	v, err := s.encode(7)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.encode(7); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeStored("bench", r.QAID, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(len(v)), "bytes")
}
