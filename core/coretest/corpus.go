package coretest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
)

// Corpus returns n deterministic synthetic QA records of project, for
// benchmarks and load tests: words drawn with a power-law skew (index =
// vocabulary size × u³) from a 20,000-word vocabulary, questions of 6–14 words and answers of 20–60, ids
// "<project>-<i>", created one second apart from 2025-01-01. The same
// (n, project, seed) always gives the same records.
func Corpus(n int, project string, seed uint64) []core.Record {
	rng := rand.New(rand.NewPCG(seed, 0x6d656d6578))
	vocab := make([]string, vocabSize)
	for i := range vocab {
		vocab[i] = Word(i)
	}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]core.Record, n)
	for i := range out {
		q := sentence(rng, vocab, 6+rng.IntN(9))
		a := sentence(rng, vocab, 20+rng.IntN(41))
		t := base.Add(time.Duration(i) * time.Second)
		out[i] = core.Record{
			QAID:           fmt.Sprintf("%s-%d", project, i),
			ProjectID:      project,
			Question:       q,
			Answer:         a,
			Tags:           []string{},
			Status:         core.StatusCandidate,
			Level:          "L0",
			CreatedAt:      t,
			UpdatedAt:      t,
			ContentHash:    core.ContentHash(q, a),
			SharedProjects: []string{},
		}
	}
	return out
}

// Word returns the i-th word of Corpus's vocabulary (0 is the most common).
func Word(i int) string {
	var b strings.Builder
	i %= vocabSize
	for range 3 {
		b.WriteString(syllables[i%len(syllables)])
		i /= len(syllables)
		if i == 0 {
			break
		}
	}
	return b.String()
}

const vocabSize = 20000

var syllables = []string{
	"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "be", "da", "fi", "go", "hu", "je", "pa", "qu",
	"re", "so", "tu", "wa", "xe", "yo", "zi", "ba", "co", "du", "ge", "ho", "ji", "ku", "la", "mo",
	"nu", "pe", "ri", "se", "to", "ve", "wi", "za",
}

func sentence(rng *rand.Rand, vocab []string, words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		u := rng.Float64()
		b.WriteString(vocab[int(u*u*u*float64(len(vocab)))])
	}
	return b.String()
}

func splitWords(s string) []string { return strings.Fields(s) }

func joinWords(ws []string) string { return strings.Join(ws, " ") }
