package embedded

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/retrieval"
)

// collect reads every posting of term from src, sorted by doc.
func collect(t *testing.T, src retrieval.Source, term string) []retrieval.Posting {
	t.Helper()
	var ps []retrieval.Posting
	if err := src.Postings(context.Background(), term, func(p retrieval.Posting) bool {
		ps = append(ps, p)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ps, func(a, b retrieval.Posting) int { return cmp.Compare(a.Doc, b.Doc) })
	return ps
}

// TestBlocksMatchMemIndex drives the posting blocks through appends that
// fill and split them, deletes inside blocks (first, middle and last
// postings, whole blocks), re-indexing of old documents (postings
// inserted into full blocks, which split) and re-imports, and checks after
// each step that every term's postings, document frequencies, collection
// stats and search hits (scores bit for bit) are those of
// retrieval.MemIndex over the same documents, and that the blocks keep
// their invariants. Over 400 documents the most common term fills three
// blocks (each mutation of the block maintenance that changes what it
// stores fails here as over 1,200); the integration tier's
// TestBlocksMatchMemIndexLarge runs 1,200, where nine terms split.
func TestBlocksMatchMemIndex(t *testing.T) {
	blocksMatchMemIndex(t, 400)
}

// blocksMatchMemIndex is TestBlocksMatchMemIndex over a corpus of n
// documents, laid out as fractions of 1,200: 1,000 imported, 50 recorded
// one at a time, the rest the text of edits.
func blocksMatchMemIndex(t *testing.T, n int) {
	at := func(x int) int { return x * n / 1200 }
	s := newTestStore(t)
	ctx := t.Context()
	a := retrieval.NewAnalyzer()
	mem := retrieval.NewMemIndex(a)
	scorer := retrieval.NewScorer(a, retrieval.DefaultParams())
	rng := rand.New(rand.NewPCG(1, 2))
	recs := coretest.Corpus(n, "p", 11)
	live := map[string]core.Record{}
	docOf := func(id string) uint64 {
		var doc uint64
		if err := s.view(ctx, "doc", func(tx *bolt.Tx) error {
			st, err := getStored(tx, id)
			if err != nil || st == nil {
				return fmt.Errorf("record %s: %v", id, err)
			}
			doc = st.Doc
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	sync := func(r core.Record) {
		doc := docOf(r.QAID)
		mem.Remove(doc)
		mem.Add(doc, r.Question, r.Answer)
		live[r.QAID] = r
	}
	var sawSplit, sawPartial bool
	check := func(step string) {
		t.Helper()
		terms := map[string]bool{}
		for _, r := range live {
			for term := range a.Analyze(r.Question, r.Answer).Terms {
				terms[term] = true
			}
		}
		terms["nosuchterm"] = true
		var queries []string
		for _, r := range live {
			queries = append(queries, r.Question)
			if len(queries) == 15 {
				break
			}
		}
		err := s.view(ctx, "check", func(tx *bolt.Tx) error {
			src := newSource(tx, []string{ownScope("p")})
			wantStats, _ := mem.Stats(ctx)
			if gotStats, _ := src.Stats(ctx); gotStats != wantStats {
				t.Errorf("%s: stats %+v, want %+v", step, gotStats, wantStats)
			}
			for term := range terms {
				want := collect(t, mem, term)
				if got := collect(t, src, term); !slices.Equal(got, want) {
					t.Fatalf("%s: postings of %q:\n%s", step, term, gocmp.Diff(want, got))
				}
				wdf, _ := mem.DocFreq(ctx, term)
				if gdf, _ := src.DocFreq(ctx, term); gdf != wdf {
					t.Errorf("%s: df of %q = %d, want %d", step, term, gdf, wdf)
				}
			}
			for _, q := range queries {
				want, err := scorer.Search(ctx, mem, q, 20)
				if err != nil {
					return err
				}
				got, err := scorer.Search(ctx, src, q, 20)
				if err != nil {
					return err
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: hits of %q:\n%s", step, q, gocmp.Diff(want, got))
				}
			}
			blocks, partial := checkBlocks(t, tx)
			sawSplit = sawSplit || blocks > len(terms)
			sawPartial = sawPartial || partial > 0
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// Appends: imports in batches, then one candidate at a time.
	imported := 4 * at(250)
	for i := 0; i < imported; i += at(250) {
		if err := s.Import(ctx, recs[i:i+at(250)]); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[i : i+at(250)] {
			sync(r)
		}
	}
	for _, r := range recs[imported : imported+at(50)] {
		res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "p", QAID: r.QAID, Question: r.Question, Answer: r.Answer})
		if err != nil {
			t.Fatal(err)
		}
		if res.DeduplicatedInto != "" {
			continue
		}
		sync(r)
	}
	check("appends")
	if !sawSplit {
		t.Fatal("no term has more than one block: the test does not exercise splits")
	}

	// Re-index old documents with new text: their postings go into the
	// middle of full blocks.
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range live {
			if !yield(id) {
				return
			}
		}
	})
	edits := 0
	for _, id := range ids {
		r, ok := live[id]
		if !ok || rng.IntN(6) != 0 {
			continue
		}
		r.Answer = r.Answer + " " + recs[at(1100)+edits%at(100)].Question
		if _, err := s.Patch(ctx, core.PatchRequest{ProjectID: "p", QAID: id, Answer: &r.Answer}); err != nil {
			t.Fatal(err)
		}
		sync(r)
		edits++
	}
	check("patches")

	// Deletes: a random fifth, and a run of consecutive docs (whole blocks).
	for _, id := range ids {
		if rng.IntN(5) == 0 || docOf(id) > uint64(at(300)) && docOf(id) <= uint64(at(300)+150) {
			mem.Remove(docOf(id))
			if err := s.Delete(ctx, "p", id); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
		}
	}
	check("deletes")

	// Re-import: the same ids replaced (same doc ids), and deleted ones back
	// (new doc ids).
	var batch []core.Record
	for i, r := range recs[:imported] {
		if i%7 != 0 {
			continue
		}
		r.Question = r.Question + " " + recs[at(1150)+i%at(50)].Answer
		batch = append(batch, r)
	}
	if err := s.Import(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, r := range batch {
		sync(r)
	}
	check("re-import")

	// One batch that imports ids twice, with other text the second time:
	// the first text's postings, indexed in the same batch, are removed.
	batch = batch[:0]
	for i, r := range recs[:at(200)] {
		if i%9 == 0 {
			batch = append(batch, r)
			r.Answer = recs[n-1-i%at(40)].Question
			batch = append(batch, r)
		}
	}
	if err := s.Import(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, r := range batch {
		sync(r)
	}
	check("imported twice in one batch")
	if !sawPartial {
		t.Error("no block was ever partly filled")
	}
}

func TestBlockCodec(t *testing.T) {
	ps := []retrieval.Posting{
		{Doc: 7, TF: retrieval.TF{1, 0}, Len: [2]uint32{5, 40}},
		{Doc: 8, TF: retrieval.TF{0, 3}, Len: [2]uint32{12, 300}},
		{Doc: 9, TF: retrieval.TF{6, 15}, Len: [2]uint32{1, 1}},
		{Doc: 10, TF: retrieval.TF{7, 16}, Len: [2]uint32{1, 1}},
		{Doc: 1 << 40, TF: retrieval.TF{200, 1 << 20}, Len: [2]uint32{1 << 31, 0}},
		{Doc: 1<<40 + 1, TF: retrieval.TF{math.MaxUint32, math.MaxUint32}, Len: [2]uint32{math.MaxUint32, math.MaxUint32}},
	}
	k := blockKey([]byte("p:x\x00term\x00"), 7)
	v := encodeBlock(ps)
	got, err := decodeBlock(nil, k, v)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ps) {
		t.Errorf("round trip: %v, want %v", got, ps)
	}
	for i := range len(v) - 1 {
		if got, err := decodeBlock(nil, k, v[:i]); err == nil && len(got) == len(ps) {
			t.Errorf("a block truncated to %d bytes decodes to all postings", i)
		}
	}
}

// checkBlocks checks the invariants of every posting block (not empty, ≤
// blockMax postings, key = first doc, docs increasing within a term across
// blocks) and counts the blocks and those not full.
func checkBlocks(t *testing.T, tx *bolt.Tx) (blocks, partial int) {
	t.Helper()
	var prevPrefix []byte
	var last uint64
	err := tx.Bucket(bPost).ForEach(func(k, v []byte) error {
		if len(k) < 10 {
			t.Fatalf("bad block key %q", k)
		}
		prefix := k[:len(k)-8]
		ps, err := decodeBlock(nil, k, v)
		if err != nil {
			return err
		}
		blocks++
		if len(ps) == 0 || len(ps) > blockMax {
			t.Errorf("block %q holds %d postings", k, len(ps))
			return nil
		}
		if len(ps) < blockMax {
			partial++
		}
		if ps[0].Doc != binary.BigEndian.Uint64(k[len(k)-8:]) {
			t.Errorf("block %q starts at doc %d", k, ps[0].Doc)
		}
		if string(prefix) == string(prevPrefix) && ps[0].Doc <= last {
			t.Errorf("block %q overlaps the previous one (last doc %d)", k, last)
		}
		prevPrefix, last = append(prevPrefix[:0], prefix...), ps[len(ps)-1].Doc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return blocks, partial
}

func TestForwardCodec(t *testing.T) {
	terms := map[string]retrieval.TF{"a": {0, 1}, "bb": {6, 15}, "ccc": {7, 16}, "d": {200, 1 << 20}, "e": {math.MaxUint32, math.MaxUint32}}
	lens := [retrieval.NumFields]uint32{3, math.MaxUint32}
	v := encodeTerms(terms, lens)
	want := map[string]int{"a": 0, "bb": 1, "ccc": 2, "d": 3, "e": 4, "missing": 5}
	tfs := make([]retrieval.TF, 6)
	gotLens, ok := walkTerms(v, func(term []byte, tf retrieval.TF) {
		if j, found := want[string(term)]; found {
			tfs[j] = tf
		}
	})
	if !ok || gotLens != lens {
		t.Fatalf("decode: lens %v, ok %v", gotLens, ok)
	}
	for term, j := range want {
		if tfs[j] != terms[term] {
			t.Errorf("tf of %q = %v, want %v", term, tfs[j], terms[term])
		}
	}
}
