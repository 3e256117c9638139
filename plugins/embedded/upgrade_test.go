package embedded

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

func gunzipTo(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// schemaOf reads the schema version and bucket names of a closed store.
func schemaOf(t *testing.T, path string) (string, map[string]bool) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version string
	names := map[string]bool{}
	err = db.View(func(tx *bolt.Tx) error {
		version = string(tx.Bucket(bMeta).Get(keySchema))
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names[string(name)] = true
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return version, names
}

// storeContents is what a store holds, decoded: records with their
// trust state and doc id, postings by key prefix, document frequencies,
// stats and forward entries.
type storeContents struct {
	Records  map[string]stored
	Postings map[string][]retrieval.Posting
	DF       map[string]uint64
	Stats    map[string][]uint64
	Forward  map[uint64]forward
}

// forward is a decoded forward entry.
type forward struct {
	Len [retrieval.NumFields]uint32
	TF  map[string]retrieval.TF
}

// readContents reads the contents of a store of schema v (1 or 2).
func readContents(t *testing.T, path string, v int) storeContents {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := storeContents{Records: map[string]stored{}, Postings: map[string][]retrieval.Posting{}, DF: map[string]uint64{}, Stats: map[string][]uint64{}, Forward: map[uint64]forward{}}
	names := map[int][5][]byte{1: {v1Records, v1Post, v1DF, v1Stats, v1Terms}, 2: {bIDs, bPost, bDF, bStats, bTerms}}[v]
	err = db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(names[0]).ForEach(func(k, val []byte) error {
			var st *stored
			var err error
			if v == 1 {
				st, err = decodeV1(val)
			} else {
				st, err = getStored(tx, string(k))
			}
			if err != nil || st == nil {
				return fmt.Errorf("record %s: %v", k, err)
			}
			c.Records[string(k)] = *st
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(names[1]).ForEach(func(k, val []byte) error {
			prefix := string(k[:len(k)-8])
			if v == 1 {
				n := readUvarints(val, 4)
				c.Postings[prefix] = append(c.Postings[prefix], retrieval.Posting{Doc: binary.BigEndian.Uint64(k[len(k)-8:]),
					TF: retrieval.TF{uint32(n[0]), uint32(n[1])}, Len: [2]uint32{uint32(n[2]), uint32(n[3])}})
				return nil
			}
			var err error
			c.Postings[prefix], err = decodeBlock(c.Postings[prefix], k, val)
			return err
		})
		if err != nil {
			return err
		}
		_ = tx.Bucket(names[2]).ForEach(func(k, val []byte) error {
			c.DF[string(k)] = readUvarints(val, 1)[0]
			return nil
		})
		_ = tx.Bucket(names[3]).ForEach(func(k, val []byte) error {
			c.Stats[string(k)] = readUvarints(val, 3)
			return nil
		})
		return tx.Bucket(names[4]).ForEach(func(k, val []byte) error {
			f := forward{TF: map[string]retrieval.TF{}}
			var ok bool
			walk := walkTerms
			if v == 1 {
				walk = walkTermsV1
			}
			f.Len, ok = walk(val, func(term []byte, tf retrieval.TF) { f.TF[string(term)] = tf })
			if !ok {
				return fmt.Errorf("forward entry %x is corrupt", k)
			}
			c.Forward[binary.BigEndian.Uint64(k)] = f
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUpgradeFixture opens a store written by the schema 1 code (records
// from imports, candidates, validations, hits, edits, deletes, in three
// projects with sharing): it is upgraded, in both modes, to a store that
// holds the same records, trust states and doc ids, and the same index:
// postings (each with its frequencies and field lengths), document
// frequencies, stats and forward entries.
func TestUpgradeFixture(t *testing.T) {
	v1 := filepath.Join(t.TempDir(), "v1.db")
	gunzipTo(t, "testdata/v1.db.gz", v1)
	if v, _ := schemaOf(t, v1); v != "1" {
		t.Fatalf("fixture schema %q, want 1", v)
	}
	want := readContents(t, v1, 1)
	if len(want.Records) < 200 || len(want.Postings) < 1000 || len(want.Forward) != len(want.Records) {
		t.Fatalf("fixture too small: %d records, %d posting lists, %d forward entries", len(want.Records), len(want.Postings), len(want.Forward))
	}
	long := 0
	for _, ps := range want.Postings {
		if len(ps) > blockMax {
			long++
		}
	}
	if long == 0 {
		t.Fatal("no posting list of the fixture needs more than one block")
	}
	for _, mode := range []string{"per-op", "keep-open"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "memex.db")
			gunzipTo(t, "testdata/v1.db.gz", path)
			var opts []Option
			if mode == "keep-open" {
				opts = append(opts, WithKeepOpen())
			}
			s, err := Open(path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			v, names := schemaOf(t, path)
			if v != "2" {
				t.Errorf("schema after upgrade %q, want 2", v)
			}
			for _, b := range v1Buckets {
				if names[string(b)] {
					t.Errorf("schema 1 bucket %s left after the upgrade", b)
				}
			}
			for _, b := range allBuckets {
				if !names[string(b)] {
					t.Errorf("bucket %s missing after the upgrade", b)
				}
			}
			// The upgrade gave back the pages of schema 1.
			if did, err := newTestStoreAt(t, path).Compact(t.Context()); err != nil || did {
				t.Errorf("Compact after the upgrade = %v, %v; want false (compacted by the upgrade)", did, err)
			}
			got := readContents(t, path, 2)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("upgraded contents differ from schema 1 (-v1 +v2):\n%s", diff)
			}
			// The store works: search finds upgraded records, a duplicate
			// of one is deduplicated.
			s = newTestStoreAt(t, path, opts...)
			for _, id := range []string{"p-0", "p-99", "q-1", "global-3"} {
				r := want.Records[id].Rec
				ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: r.ProjectID, Query: r.Question, Limit: 5})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(fmt.Sprint(ms), id) {
					t.Errorf("search for %s's question misses it: %v", id, ms)
				}
			}
			res, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p",
				Question: "how do I configure the widget number 3 for deployment", Answer: "set widget.3 in config.yaml and run make deploy-3"})
			if err != nil {
				t.Fatal(err)
			}
			if res.DeduplicatedInto == "" {
				t.Errorf("a duplicate of an upgraded record was not deduplicated: %+v", res)
			}
		})
	}
}

// writeV1Store writes recs as a schema 1 store holds imported records:
// the records, docs, hash and list buckets (what an upgrade reads) and
// empty schema 1 index buckets.
func writeV1Store(t *testing.T, path string, recs []core.Record) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bMeta, v1Records, bDocs, v1Post, v1DF, v1Stats, bHash, bList, bEventsV2, bRep, bDays, v1Rank, v1Terms} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bMeta).Put(keySchema, []byte("1")); err != nil {
			return err
		}
		for i, r := range recs {
			e := ledger.New(trust.New(trust.Params{})).Import(r, now)
			r = e.Rec
			doc := uint64(i + 1)
			v, err := json.Marshal(v1Stored{Rec: r, State: e.State, Doc: doc})
			if err != nil {
				return err
			}
			if err := tx.Bucket(v1Records).Put([]byte(r.QAID), v); err != nil {
				return err
			}
			if err := tx.Bucket(bDocs).Put(docKey(doc), []byte(r.QAID)); err != nil {
				return err
			}
			if err := tx.Bucket(bHash).Put(hashKey(r.ProjectID, r.ContentHash), []byte(r.QAID)); err != nil {
				return err
			}
			if err := tx.Bucket(bList).Put(listKey(r), nil); err != nil {
				return err
			}
		}
		return tx.Bucket(bDocs).SetSequence(uint64(len(recs)))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeSweepsStrayRecords checks that a record the docs bucket does
// not lead to (a stale doc entry) is still upgraded and indexed.
func TestUpgradeSweepsStrayRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memex.db")
	recs := coretest.Corpus(50, "p", 9)
	writeV1Store(t, path, recs)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bDocs).Delete(docKey(10)) })
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := newTestStoreAt(t, path)
	r := recs[9]
	ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "p", Query: r.Question, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].QAID != r.QAID {
		t.Errorf("search for the stray record's question = %v, want %s first", ms, r.QAID)
	}
	if n, err := s.Stats(t.Context(), "p"); err != nil || n.Total != 50 {
		t.Errorf("stats = %+v, %v; want 50 records", n, err)
	}
}

// TestFixtureHistoryMatchesUpgrade replays the fixture's history on a new
// store and checks that it ends where the upgraded schema 1 store is: the
// same stats per project (counts by status and level, usage, trust
// histogram) and the same records, ids of generated candidates aside.
func TestFixtureHistoryMatchesUpgrade(t *testing.T) {
	at := func() time.Time { return fixtureStart.Add(30 * 24 * time.Hour) }
	path := filepath.Join(t.TempDir(), "v1.db")
	gunzipTo(t, "testdata/v1.db.gz", path)
	up := newTestStoreAt(t, path, WithClock(at))
	fresh := newTestStoreAt(t, filepath.Join(t.TempDir(), "memex.db"), WithClock(steppingClock(fixtureStart)))
	fillFixture(t, fresh)
	fresh.cfg.clock = at
	for _, project := range []string{"p", "q", core.GlobalProject} {
		// The records refreshed at the same time (Stats' kept figures are as
		// of each write, and the two histories wrote at different times).
		want, err := up.refreshedStats(t.Context(), project)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fresh.refreshedStats(t.Context(), project)
		if err != nil {
			t.Fatal(err)
		}
		// Generated candidates get random ids.
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(core.Record{}, "QAID")); diff != "" {
			t.Errorf("stats of %s (-upgraded +replayed):\n%s", project, diff)
		}
		for _, id := range []string{project + "-0", project + "-5", project + "-6", project + "-12"} {
			w, werr := up.Get(t.Context(), project, id)
			g, gerr := fresh.Get(t.Context(), project, id)
			if (werr == nil) != (gerr == nil) {
				t.Errorf("get %s: upgraded %v, replayed %v", id, werr, gerr)
				continue
			}
			if diff := cmp.Diff(w, g); werr == nil && diff != "" {
				t.Errorf("record %s (-upgraded +replayed):\n%s", id, diff)
			}
		}
	}
}

// TestResumedUpgradeCountsOnce resumes an upgrade that was killed after
// it had converted some records: the collection statistics it had counted
// (stats2) are dropped with the other rebuilt buckets, not counted twice.
func TestResumedUpgradeCountsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memex.db")
	recs := coretest.Corpus(30, "p", 5)
	writeV1Store(t, path, recs)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What a killed upgrade leaves: v2 buckets partly built, version 1.
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bStats)
		if err != nil {
			return err
		}
		if err := b.Put([]byte(ownScope("p")), uvarints(12, 120, 480)); err != nil {
			return err
		}
		// The project statistics of the entries written before the kill.
		agg, err := tx.CreateBucketIfNotExists(bAgg)
		if err != nil {
			return err
		}
		return agg.Put([]byte("p"), []byte(`{"total":12,"by_status":{"candidate":12}}`))
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := newTestStoreAt(t, path)
	err = s.view(t.Context(), "check", func(tx *bolt.Tx) error {
		if n := readUvarints(tx.Bucket(bStats).Get([]byte(ownScope("p"))), 3)[0]; n != uint64(len(recs)) {
			t.Errorf("stats2 counts %d documents of p, want %d", n, len(recs))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkStats(t, s, []string{"p"})
}

// walkTermsV1 decodes a schema 1 forward entry, calling fn for each term:
// the field lengths, then each term as its uvarint length and bytes and
// its frequencies as two uvarints.
func walkTermsV1(v []byte, fn func(term []byte, tf retrieval.TF)) (lens [retrieval.NumFields]uint32, ok bool) {
	r := byteReader{v: v}
	for f := range lens {
		lens[f] = uint32(r.uvarint())
	}
	for len(r.v) > 0 && !r.err {
		term := r.string()
		tf := retrieval.TF{uint32(r.uvarint()), uint32(r.uvarint())}
		if !r.err {
			fn([]byte(term), tf)
		}
	}
	return lens, !r.err
}
