package redisstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
)

func TestStoredRoundTrip(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: "q?", Answer: "a.", Tags: []string{"t"},
		Stats: core.Counters{WeakFail: 2}, CreatedAt: created, UpdatedAt: created, SharedProjects: []string{"o"}}
	voted := trust.NewState("maker", created)
	trust.New(trust.DefaultParams()).Apply(voted, trust.Vote{Source: "agent", Result: core.ResultPass, Strength: core.StrengthStrong, At: created}, nil)
	tests := []struct {
		name      string
		st        *trust.State
		stateKept bool
	}{
		{"pristine state elided, creator kept", trust.NewState("maker", created), false},
		{"state with evidence kept", voted, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := toStored(rec, tc.st, 7)
			v, err := s.encode(3)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeStored("p", "qa-1", v)
			if err != nil {
				t.Fatal(err)
			}
			if got.ver != 3 || got.Doc != 7 || got.ID != "qa-1" || got.project != "p" {
				t.Errorf("ver %d doc %d id %s project %s", got.ver, got.Doc, got.ID, got.project)
			}
			if diff := cmp.Diff(tc.st, got.State); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if r := got.record(true); r.Stats != rec.Stats || !r.CreatedAt.Equal(created) || r.ContentHash != core.ContentHash("q?", "a.") {
				t.Errorf("record fields lost: %+v", r)
			}
			if hasState := contains(v, `"s":`); hasState != tc.stateKept {
				t.Errorf("state stored = %v, want %v: %s", hasState, tc.stateKept, v)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestPostingRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		doc  uint64
		tf   retrieval.TF
		size int // bytes of the posting incl. its gap from doc 99
	}{
		{"small tf in one byte", 100, retrieval.TF{1, 2}, 2},
		{"answer only", 300, retrieval.TF{0, 15}, 3},
		{"large tf escaped", 1<<32 - 1, retrieval.TF{300, 16}, 5 + 1 + 2 + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first := "\x00\x00\x00\x00" + uvarintGap(99) + postingRest(retrieval.TF{1, 1})
			p := uvarintGap(tc.doc-99) + postingRest(tc.tf)
			if len(p) != tc.size {
				t.Errorf("posting is %d bytes, want %d", len(p), tc.size)
			}
			var n int
			forPostings(first+p, func(doc uint64, tf retrieval.TF) bool {
				if n++; n == 2 && (doc != tc.doc || tf != tc.tf) {
					t.Errorf("got doc %d tf %v", doc, tf)
				}
				return true
			})
			if n != 2 || countPostings(first+p) != 2 {
				t.Errorf("%d postings decoded, want 2", n)
			}
			if got := countPostings(first + p[:len(p)-1]); got != 1 {
				t.Errorf("cut list: %d postings, want 1", got)
			}
		})
	}
}

func TestLensEntry(t *testing.T) {
	bucket := strings.Repeat("\x00", 5*lensSize) + lensEntry([2]uint32{7, 70000})
	if got := lensOf(bucket, lensBucket+5); got != [2]uint32{7, 65535} {
		t.Errorf("lens %v, want [7 65535]", got)
	}
	if got := lensOf(bucket, 6); got != [2]uint32{} {
		t.Errorf("lens past the bucket %v, want zero", got)
	}
}

// TestPostingScript runs the commit script's posting operations (ordered
// append, out-of-order merge, removal; a list of up to shortListMax bytes
// in its bucket as one or two fields, a longer one its own key) against
// a model.
func TestPostingScript(t *testing.T) {
	s := newShared(t)
	// A list that grows past 4 KiB, then thins out; one of at most 40
	// documents (2 bytes a posting), in its bucket across 64 bytes both
	// ways.
	for _, term := range []string{"term", "few"} {
		t.Run(term, func(t *testing.T) { postingScript(t, s, term) })
	}
}

func postingScript(t *testing.T, s *Store, term string) {
	ctx := t.Context()
	key := s.k.post("plist", ownScope, term)
	bucket := s.k.postBucket("plist", ownScope, term)
	model := map[uint64]retrieval.TF{}
	rng := rand.New(rand.NewPCG(1, 2))
	inBucket := map[bool]int{}
	for step := range 400 {
		b := newBatch(s.k.event("plist", "t", "plist", term+strconv.Itoa(step)))
		n := 1 + rng.IntN(4)
		if step < 200 {
			n = 1 + rng.IntN(12) // grows past 4 KiB: the APPEND path
		}
		for range n {
			doc := uint64(1 + rng.IntN(20000))
			if step > 200 {
				doc = uint64(1 + rng.IntN(60)) // dense: gaps of one byte, removals
			}
			if term == "few" {
				doc = uint64(1 + rng.IntN(40))
			}
			if _, ok := model[doc]; ok && rng.IntN(2) == 0 {
				b.op("prem", key, bucket, term, doc)
				delete(model, doc)
				continue
			}
			tf := retrieval.TF{uint32(rng.IntN(10)), uint32(rng.IntN(20))}
			if term == "few" {
				tf = retrieval.TF{uint32(rng.IntN(8)), uint32(rng.IntN(16))}
			}
			b.op("padd", key, bucket, term, doc, postingRest(tf))
			model[doc] = tf
		}
		var res string
		if done, err := commitResult(s, ctx, b, "r", &res); err != nil || !done {
			t.Fatalf("step %d: commit done %v, %v", step, done, err)
		}
		list, err := s.rdb.Get(ctx, key).Result()
		parts, herr := s.rdb.HMGet(ctx, bucket, shortFields(term)...).Result()
		if herr != nil {
			t.Fatal(herr)
		}
		short := shortList(parts)
		if errors.Is(err, redis.Nil) {
			list, err = short, nil
			if len(list) > shortListMax {
				t.Fatalf("step %d: %d-byte list in the bucket hash", step, len(list))
			}
			if tail, _ := parts[1].(string); (len(list) > 64) != (tail != "") || len(short) > 0 && len(parts[0].(string)) > 64 {
				t.Fatalf("step %d: a %d-byte list in the bucket as %q", step, len(list), parts)
			}
			inBucket[len(list) > 64]++
		} else if short != "" || parts[1] != nil {
			t.Fatalf("step %d: list both in the bucket and its own key", step)
		}
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint64]retrieval.TF{}
		prev := uint64(0)
		forPostings(list, func(doc uint64, tf retrieval.TF) bool {
			if doc <= prev && prev != 0 {
				t.Fatalf("step %d: doc %d after %d", step, doc, prev)
			}
			got[doc], prev = tf, doc
			return true
		})
		if !maps.Equal(model, got) {
			t.Fatalf("step %d: postings (-want +got):\n%s", step, cmp.Diff(model, got))
		}
		if len(list) >= postingHeader && binary.BigEndian.Uint32([]byte(list[:4])) != uint32(prev) {
			t.Fatalf("step %d: header %x, largest doc %d", step, list[:4], prev)
		}
	}
	if term == "few" && (inBucket[false] == 0 || inBucket[true] == 0) {
		t.Errorf("the list was in its bucket in one field %d times, in two %d times: want both", inBucket[false], inBucket[true])
	}
}

// TestDecodeListBuckets: a decoded list knows the lens buckets its docs
// fall in (fetchLens reads exactly those), and its galloping search finds
// the first doc at or after any target.
func TestDecodeListBuckets(t *testing.T) {
	build := func(docs []uint64) string {
		var b strings.Builder
		b.WriteString(string([]byte{byte(docs[len(docs)-1] >> 24), byte(docs[len(docs)-1] >> 16), byte(docs[len(docs)-1] >> 8), byte(docs[len(docs)-1])}))
		prev := uint64(0)
		for _, d := range docs {
			b.WriteString(uvarintGap(d - prev))
			b.WriteString(postingRest(retrieval.TF{1, 0}))
			prev = d
		}
		return b.String()
	}
	var dense, sparse []uint64
	for d := uint64(1000); d < 3100; d += 10 {
		dense = append(dense, d)
	}
	for d := uint64(5); d < 100_000; d += 5000 {
		sparse = append(sparse, d)
	}
	tests := []struct {
		name    string
		docs    []uint64
		buckets []uint32
	}{
		{"dense", dense, []uint32{0, 1, 2, 3}},
		{"sparse", sparse, []uint32{0, 4, 9, 14, 19, 24, 29, 34, 39, 43, 48, 53, 58, 63, 68, 73, 78, 83, 87, 92}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := decodeList(build(tc.docs))
			if !slices.Equal(l.buckets, tc.buckets) {
				t.Errorf("buckets = %v, want %v", l.buckets, tc.buckets)
			}
			if len(l.docs) != len(tc.docs) {
				t.Fatalf("%d docs, want %d", len(l.docs), len(tc.docs))
			}
			for from := 0; from < len(l.docs); from += 7 {
				for want := uint32(0); want < uint32(tc.docs[len(tc.docs)-1])+3; want += 3 {
					ref := from
					for ref < len(l.docs) && l.docs[ref] < want {
						ref++
					}
					if got := l.search(from, want); got != ref {
						t.Fatalf("search(%d, %d) = %d, want %d", from, want, got, ref)
					}
				}
			}
		})
	}
	if decodeList("") != nil || decodeList("\x00\x00\x00\x00").df() != 0 {
		t.Error("an empty list decodes to postings")
	}
}

// forPostings calls fn for every posting of a packed list (a corrupt tail
// is ignored): the tests' reference reader of the codec, written apart
// from the one searches read through (decodeList), to hold it against.
func forPostings(list string, fn func(doc uint64, tf retrieval.TF) bool) {
	var doc uint64
	for i := postingHeader; i < len(list); {
		var gap, a, b uint64
		var ok bool
		if gap, i, ok = readUvarint(list, i); !ok || i >= len(list) {
			return
		}
		doc += gap
		if c := list[i]; c < 0x80 {
			a, b = uint64(c>>4), uint64(c&15)
			i++
		} else {
			if a, i, ok = readUvarint(list, i+1); !ok {
				return
			}
			if b, i, ok = readUvarint(list, i); !ok {
				return
			}
		}
		if !fn(doc, retrieval.TF{uint32(a), uint32(b)}) {
			return
		}
	}
}

// countPostings is the number of postings of a packed list (its document
// frequency).
func countPostings(list string) int64 {
	var n int64
	forPostings(list, func(uint64, retrieval.TF) bool { n++; return true })
	return n
}

// TestStatusOnlyStateElided checks that a state without evidence is stored
// as its status only and read back equal (an imported active QA).
func TestStatusOnlyStateElided(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	for _, status := range []core.Status{core.StatusCandidate, core.StatusActive, core.StatusStale, core.StatusDeprecated} {
		rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: "q?", Answer: "a.", CreatedAt: created, UpdatedAt: created, Status: status, Author: "maker"}
		st := trust.ImportedState(rec)
		v, err := toStored(rec, st, 1).encode(1)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(v, `"s":`) {
			t.Errorf("%s: state stored in full: %s", status, v)
		}
		if want := `"ss":"` + string(status) + `"`; (status == core.StatusCandidate) == strings.Contains(v, want) {
			t.Errorf("%s: status stored wrongly: %s", status, v)
		}
		full, err := decodeStored("p", "qa-1", v)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st, full.State, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: state differs (-want +got):\n%s", status, diff)
		}
		if again, _ := full.encode(1); again != v {
			t.Errorf("%s: re-encoded value differs:\n%s\n%s", status, v, again)
		}
	}
	// Evidence keeps the whole state.
	rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: "q?", Answer: "a.", CreatedAt: created, UpdatedAt: created, Status: core.StatusActive, ValidationLevel: 1}
	if v, _ := toStored(rec, trust.ImportedState(rec), 1).encode(1); !strings.Contains(v, `"s":`) || strings.Contains(v, `"ss":`) {
		t.Errorf("state with evidence: %s", v)
	}
}

// TestLastWrittenDecodesAsStored: the record a validation keeps for the
// next read of the value it wrote is the one decodeStored makes of that
// value, through passes and fails of several sources and strengths; a
// value written by another process is decoded.
func TestLastWrittenDecodesAsStored(t *testing.T) {
	s := openPrefix(t, redistest.URL(t), redistest.Prefix(t))
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "creator"})
	r, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "p", Question: "How to wake the walrus",
		Answer: "walrus wake --gently", Tags: []string{"walrus"}, Metadata: map[string]any{"n": 1.5, "o": map[string]any{"k": "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	votes := []struct{ source, result, strength string }{
		{"a", "pass", "weak"}, {"b", "pass", "strong"}, {"a", "fail", "medium"}, {"c", "pass", "medium"},
		{"b", "fail", "strong"}, {"c", "fail", "weak"}, {"a", "pass", "strong"},
	}
	for i, v := range votes {
		vctx := core.WithPrincipal(t.Context(), core.Principal{ID: v.source})
		req := core.ValidateRequest{ProjectID: "p", QAID: r.QAID, Result: v.result, SignalStrength: v.strength, EventID: fmt.Sprintf("v-%d", i)}
		if _, err := s.RecordValidation(vctx, req); err != nil {
			t.Fatal(err)
		}
		raw, err := s.rdb.Get(t.Context(), s.k.qa("p", r.QAID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeStored("p", r.QAID, raw)
		if err != nil {
			t.Fatal(err)
		}
		last, ok := s.last.m[lastKey("p", r.QAID)]
		if !ok || last.v != raw {
			t.Fatalf("vote %d: the value written is not kept", i)
		}
		if diff := cmp.Diff(want, last.st, cmp.AllowUnexported(stored{}), cmpopts.IgnoreFields(stored{}, "sum")); diff != "" {
			t.Fatalf("vote %d: kept record differs from the decoded value (-decoded +kept):\n%s", i, diff)
		}
		if last.st.sum != core.ContentHash(want.Q, want.A) {
			t.Fatalf("vote %d: kept content hash %q, want %q", i, last.st.sum, core.ContentHash(want.Q, want.A))
		}
	}
	other := strings.Replace(s.last.m[lastKey("p", r.QAID)].v, `"ok":`, `"ue":7,"ok":`, 1)
	got, err := s.last.decode("p", r.QAID, other)
	if err != nil || got.Use != 7 {
		t.Fatalf("another value: use %v, %v; want it decoded (7)", got, err)
	}
}

// TestRecordTextAsJSON: a question or answer that is not UTF-8 reads
// back from the leading fields as it does from the JSON an earlier
// version wrote (each invalid byte U+FFFD), and valid text byte for byte.
func TestRecordTextAsJSON(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, text := range []string{"plain", "", "ünïcode ✓ \ufffd", "bad \xff\xfe byte", "cut \xe2\x9c", "quote \" and \\ and \n"} {
		rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: text, Answer: "a " + text, CreatedAt: created, UpdatedAt: created}
		v, err := toStored(rec, trust.NewState("maker", created), 9).encode(2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeStored("p", "qa-1", v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeStored("p", "qa-1", jsonRecord(t, v))
		if err != nil {
			t.Fatal(err)
		}
		var viaJSON string
		b, _ := json.Marshal(text)
		_ = json.Unmarshal(b, &viaJSON)
		if got.Q != viaJSON || got.A != "a "+viaJSON || want.Q != got.Q || got.Doc != 9 || got.Created != created.UnixMilli() {
			t.Errorf("%q: read %q / %q (doc %d), JSON reads %q", text, got.Q, got.A, got.Doc, viaJSON)
		}
	}
}
