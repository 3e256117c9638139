package embedded

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// Schema 1 buckets that schema 2 replaces (docs/STORAGE.md). The others
// (docs, hash, list, rep, days, meta) keep their name and format; the
// events of a schema 1 store stay in bEventsV2 until they expire
// (events.go).
var (
	v1Records = []byte("records") // qa_id → JSON v1Stored
	v1Post    = []byte("post")    // scope 0 term 0 docid → one posting
	v1DF      = []byte("df")
	v1Stats   = []byte("stats")
	v1Rank    = []byte("rank")
	v1Terms   = []byte("terms")

	v1Buckets = [][]byte{v1Records, v1Post, v1DF, v1Stats, v1Rank, v1Terms}
	// v2Rebuilt are the buckets an upgrade builds from the v1 records.
	// The project statistics are among them: the upgrade's writes count
	// every entry they write (agg.go).
	v2Rebuilt = append([][]byte{bIDs, bPost, bDF, bStats, bQA, bTerms}, aggBuckets...)
)

// v1Stored is a schema 1 record value.
type v1Stored struct {
	Rec   core.Record  `json:"r"`
	State *trust.State `json:"s"`
	Doc   uint64       `json:"d"`
}

// upgradeChunk is how many records one upgrade transaction converts (its
// dirty pages stay in memory until the commit). A variable only so that
// tests can cross several chunks with a small store.
var upgradeChunk = 5000

// upgradeV1 converts a schema 1 store to schema 2 in place. It rebuilds
// the buckets whose format changed from the v1 records into new buckets,
// upgradeChunk records per transaction in doc id order (postings append to
// their blocks), and in a last transaction indexes any record the docs
// bucket did not lead to, drops the v1 buckets and writes version 2.
//
// Crash safety: the v1 buckets are only read until that last, atomic
// transaction, and the version stays 1 until then; a store killed during
// the upgrade is a valid v1 store with partial v2 buckets, which the next
// upgrade drops before starting over. db is held open (file lock
// exclusive) throughout, so no other process writes in between.
func (s *Store) upgradeV1(db *bolt.DB) error {
	err := db.Update(func(tx *bolt.Tx) error {
		if err := dropBuckets(tx, v2Rebuilt...); err != nil {
			return err
		}
		return createBuckets(tx, allBuckets...)
	})
	if err != nil {
		return err
	}
	var after []byte // the last doc key converted
	for done := false; !done; {
		err := db.Update(func(tx *bolt.Tx) error {
			packBuckets(tx)
			recs := tx.Bucket(v1Records)
			if recs == nil {
				done = true
				return nil
			}
			c := tx.Bucket(bDocs).Cursor()
			var k, id []byte
			if after == nil {
				k, id = c.First()
			} else if k, id = c.Seek(after); bytes.Equal(k, after) {
				k, id = c.Next()
			}
			b := newIndexBatch()
			n := 0
			for ; k != nil && n < upgradeChunk; k, id = c.Next() {
				after = bytes.Clone(k)
				if len(k) != 8 {
					continue
				}
				st, err := decodeV1(recs.Get(id))
				if err != nil {
					return fmt.Errorf("record %s: %w", id, err)
				}
				if st == nil || st.Doc != binary.BigEndian.Uint64(k) || st.Rec.QAID != string(id) {
					continue // a stale doc entry: the sweep below handles its record
				}
				// The v1 record as a v2 QA entry and id, its text in the v2
				// inverted index and forward entries.
				if err := putStored(tx, st); err != nil {
					return err
				}
				if err := s.indexText(tx, b, st); err != nil {
					return err
				}
				n++
			}
			done = k == nil
			return b.flush(tx)
		})
		if err != nil {
			return err
		}
	}
	return db.Update(func(tx *bolt.Tx) error {
		packBuckets(tx)
		b := newIndexBatch()
		if recs := tx.Bucket(v1Records); recs != nil {
			c := recs.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if tx.Bucket(bIDs).Get(k) != nil {
					continue
				}
				st, err := decodeV1(v)
				if err != nil {
					return fmt.Errorf("record %s: %w", k, err)
				}
				st.Doc = 0 // its v1 doc id did not lead to it: a new one
				if err := s.insert(tx, b, st); err != nil {
					return err
				}
			}
		}
		if err := b.flush(tx); err != nil {
			return err
		}
		if err := dropBuckets(tx, v1Buckets...); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(keySchema, []byte(strconv.Itoa(SchemaVersion)))
	})
}

func decodeV1(v []byte) (*stored, error) {
	if v == nil {
		return nil, nil
	}
	var old v1Stored
	if err := json.Unmarshal(v, &old); err != nil {
		return nil, err
	}
	return &stored{Entry: ledger.Entry{Rec: old.Rec, State: stateOf(old.State, old.Rec)}, Doc: old.Doc}, nil
}
