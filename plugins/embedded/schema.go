package embedded

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// Buckets (docs/STORAGE.md). The buckets whose format changed in schema
// 2 have new names, so that an upgrade builds them beside the version 1
// ones and drops those in its last transaction (see upgrade.go).
var (
	bMeta   = []byte("meta")    // "schema" → decimal version
	bIDs    = []byte("ids")     // qa_id → uvarint doc id
	bDocs   = []byte("docs")    // bigendian doc id → qa_id
	bPost   = []byte("post2")   // scope 0 term 0 bigendian first doc id → posting block (blocks.go)
	bDF     = []byte("df2")     // scope 0 term → uvarint document frequency
	bStats  = []byte("stats2")  // scope → uvarint docs, total len_q, total len_a
	bHash   = []byte("hash")    // project 0 content_hash → qa_id
	bList   = []byte("list")    // project 0 bigendian created_at ns qa_id → nil
	bEvents = []byte("events2") // slot start (uint32 unix s) kind 0 project 0 event_id → JSON result (events.go)
	bRep    = []byte("rep")     // "s:"source | "c:"creator → JSON SourceRep / CreatorRep
	bDays   = []byte("days")    // project 0 YYYY-MM-DD → uvarint passes, fails
	bQA     = []byte("qa")      // bigendian doc id → QA entry: rank entry, trust state, record (codec.go)
	bTerms  = []byte("terms2")  // bigendian doc id → forward entry (see encodeTerms)

	allBuckets = append([][]byte{bMeta, bIDs, bDocs, bPost, bDF, bStats, bHash, bList, bEvents, bRep, bDays, bQA, bTerms,
		bItems, bItemCount}, aggBuckets...)
	keySchema = []byte("schema")
)

// stored is one QA as the store handles it: the record (counters and
// content), the trust evidence, and its document id in the index, all
// kept in one entry of the qa bucket under the doc id.
type stored struct {
	ledger.Entry
	Doc uint64
}

// Scopes of the inverted index: a project's own QAs ("p:<project>") and the
// QAs other projects share with it ("s:<project>").
func ownScope(project string) string    { return "p:" + project }
func sharedScope(project string) string { return "s:" + project }

// visibleScopes are the scopes a search from project reads.
func visibleScopes(project string) []string {
	if project == core.GlobalProject {
		return []string{ownScope(project)}
	}
	return []string{ownScope(project), ownScope(core.GlobalProject), sharedScope(project)}
}

// indexScopes are the scopes a record is indexed into: its owner's, and
// one per project it is shared into (ledger.SharedInto).
func indexScopes(rec core.Record) []string {
	out := []string{ownScope(rec.ProjectID)}
	for _, p := range ledger.SharedInto(rec.ProjectID, rec.SharedProjects) {
		out = append(out, sharedScope(p))
	}
	return out
}

func docKey(doc uint64) []byte { return binary.BigEndian.AppendUint64(nil, doc) }

// termPrefix is the key prefix of the posting blocks of (scope, term).
func termPrefix(scope, term string) []byte { return append(dfKey(scope, term), 0) }

// dfKey is the df key of (scope, term): scope 0 term (with room for the
// rest of a posting block's key).
func dfKey(scope, term string) []byte {
	k := make([]byte, 0, len(scope)+len(term)+2+8)
	k = append(k, scope...)
	k = append(k, 0)
	return append(k, term...)
}

func uvarints(vs ...uint64) []byte {
	b := make([]byte, 0, len(vs)*2)
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// addUvarints adds d to the counters stored under key as uvarints (missing
// ones are 0), each kept at 0 or more; with drop, the key is deleted when
// its first counter falls to 0.
func addUvarints(b *bolt.Bucket, key []byte, drop bool, d ...int64) error {
	v := readUvarints(b.Get(key), len(d))
	for i := range v {
		v[i] = uint64(max(0, int64(v[i])+d[i]))
	}
	if drop && v[0] == 0 {
		return b.Delete(key)
	}
	return b.Put(key, uvarints(v...))
}

// readUvarints decodes n uvarints; missing ones are 0.
func readUvarints(b []byte, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			break
		}
		out[i], b = v, b[k:]
	}
	return out
}

func hashKey(project, hash string) []byte { return []byte(project + "\x00" + hash) }

// projectKey is the key of the buckets that order a project's QAs by a
// number — list (created_at), trustrank, byttl, awaiting (agg.go) —
// project 0 bigendian n qa_id.
func projectKey(project string, n uint64, qaID string) []byte {
	k := make([]byte, 0, len(project)+9+len(qaID))
	k = append(k, project...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, n)
	return append(k, qaID...)
}

func listKey(rec core.Record) []byte {
	return projectKey(rec.ProjectID, unixNS(rec.CreatedAt), rec.QAID)
}

// unixNS is t in Unix nanoseconds, 0 for a time not after the epoch.
func unixNS(t time.Time) uint64 {
	if !t.After(time.Unix(0, 0)) {
		return 0
	}
	return uint64(t.UnixNano())
}

// indexTerms are the terms of a document; terms holding a NUL byte (the key
// separator) are not indexed.
func indexTerms(d retrieval.Doc) map[string]retrieval.TF {
	for t := range d.Terms {
		if t == "" || strings.IndexByte(t, 0) >= 0 {
			delete(d.Terms, t)
		}
	}
	return d.Terms
}

// indexBatch gathers the index writes of one transaction: postings are
// merged into their blocks once per term (in key order), and
// document-frequency and stats counters written once per key, which makes
// bulk imports several times faster than a write per term per record.
// flush must run before the transaction commits.
type indexBatch struct {
	posts map[string][]retrieval.Posting // block key prefix → postings to add or remove (mergeBlocks)
	df    map[string]int64
	stats map[string][3]int64
}

func newIndexBatch() *indexBatch {
	return &indexBatch{posts: map[string][]retrieval.Posting{}, df: map[string]int64{}, stats: map[string][3]int64{}}
}

// addStats adds sign (1 or -1) times doc to the statistics of scope sc:
// its count and field lengths.
func (b *indexBatch) addStats(sc string, doc retrieval.Doc, sign int64) {
	d := b.stats[sc]
	d[0] += sign
	d[1] += sign * int64(doc.Len[0])
	d[2] += sign * int64(doc.Len[1])
	b.stats[sc] = d
}

func (b *indexBatch) flush(tx *bolt.Tx) error {
	post := tx.Bucket(bPost)
	for _, k := range slices.Sorted(maps.Keys(b.posts)) {
		ps := b.posts[k]
		slices.SortStableFunc(ps, func(x, y retrieval.Posting) int { return cmp.Compare(x.Doc, y.Doc) })
		// A doc indexed (or removed) twice in the batch keeps its last
		// posting.
		out := ps[:0]
		for _, p := range ps {
			if len(out) > 0 && out[len(out)-1].Doc == p.Doc {
				out[len(out)-1] = p
				continue
			}
			out = append(out, p)
		}
		if err := mergeBlocks(post, []byte(k), out); err != nil {
			return err
		}
	}
	df := tx.Bucket(bDF)
	for _, k := range slices.Sorted(maps.Keys(b.df)) {
		if err := addUvarints(df, []byte(k), true, b.df[k]); err != nil {
			return err
		}
	}
	stats := tx.Bucket(bStats)
	for sc, d := range b.stats {
		if err := addUvarints(stats, []byte(sc), false, d[:]...); err != nil {
			return err
		}
	}
	*b = *newIndexBatch()
	return nil
}

// index adds st's document to every index: postings, df, stats (through
// b), the doc id, the forward entry, the content-hash index and the list
// index.
func (s *Store) index(tx *bolt.Tx, b *indexBatch, st *stored) error {
	if err := s.indexText(tx, b, st); err != nil {
		return err
	}
	rec := st.Rec
	if err := tx.Bucket(bDocs).Put(docKey(st.Doc), []byte(rec.QAID)); err != nil {
		return err
	}
	if err := tx.Bucket(bHash).Put(hashKey(rec.ProjectID, rec.ContentHash), []byte(rec.QAID)); err != nil {
		return err
	}
	return tx.Bucket(bList).Put(listKey(rec), nil)
}

// insert stores st under its doc id, a new one when it has none (0), and
// adds it to every index (index).
func (s *Store) insert(tx *bolt.Tx, b *indexBatch, st *stored) error {
	if st.Doc == 0 {
		doc, err := tx.Bucket(bDocs).NextSequence()
		if err != nil {
			return err
		}
		st.Doc = doc
	}
	if err := putStored(tx, st); err != nil {
		return err
	}
	return s.index(tx, b, st)
}

// indexText adds the inverted index entries of st's text (postings, df,
// stats through b) and its forward entry.
func (s *Store) indexText(tx *bolt.Tx, b *indexBatch, st *stored) error {
	doc, terms := s.batchText(b, st, 1)
	return tx.Bucket(bTerms).Put(docKey(st.Doc), encodeTerms(terms, doc.Len))
}

// batchText adds (sign 1) or removes (sign -1) the postings, df and stats
// of st's text in every scope it is indexed in, through b; a removal is a
// posting without frequencies (mergeBlocks). It returns the analysed text
// and its index terms.
func (s *Store) batchText(b *indexBatch, st *stored, sign int64) (retrieval.Doc, map[string]retrieval.TF) {
	rec := st.Rec
	doc := s.analyzer.Analyze(rec.Question, rec.Answer)
	terms := indexTerms(doc)
	for _, sc := range indexScopes(rec) {
		for t, tf := range terms {
			p := retrieval.Posting{Doc: st.Doc}
			if sign > 0 {
				p.TF, p.Len = tf, doc.Len
			}
			k := string(termPrefix(sc, t))
			b.posts[k] = append(b.posts[k], p)
			b.df[string(dfKey(sc, t))] += sign
		}
		b.addStats(sc, doc, sign)
	}
	return doc, terms
}

// encodeTerms is a document's forward entry: its field lengths as
// uvarints, then each term (in order) as its uvarint length and bytes and
// its frequencies (see appendTF). It holds the same numbers as the
// document's postings, so that TermFreqs reads a candidate's frequencies of
// any number of terms in one lookup.
func encodeTerms(terms map[string]retrieval.TF, lens [retrieval.NumFields]uint32) []byte {
	n := 2 * binary.MaxVarintLen32
	for t := range terms {
		n += len(t) + 3*binary.MaxVarintLen32
	}
	b := make([]byte, 0, n)
	for _, l := range lens {
		b = binary.AppendUvarint(b, uint64(l))
	}
	for _, t := range slices.Sorted(maps.Keys(terms)) {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		b = appendTF(b, terms[t])
	}
	return b
}

// walkTerms decodes a forward entry (see encodeTerms), calling fn for each
// term.
func walkTerms(v []byte, fn func(term []byte, tf retrieval.TF)) (lens [retrieval.NumFields]uint32, ok bool) {
	r := byteReader{v: v}
	for f := range lens {
		lens[f] = uint32(r.uvarint())
	}
	for len(r.v) > 0 && !r.err {
		term := r.bytes()
		x := r.uvarint()
		tf := retrieval.TF{uint32(x & 7), uint32(x >> 3)}
		if tf[0] == 7 {
			tf[0] += uint32(r.uvarint())
		}
		if !r.err {
			fn(term, tf)
		}
	}
	return lens, !r.err
}

// unindex removes what index added for st (re-analysing its stored text):
// its postings, df and stats through b (after what b holds already, so a
// record indexed earlier in the same batch is removed completely), the
// rest at once.
func (s *Store) unindex(tx *bolt.Tx, b *indexBatch, st *stored) error {
	s.batchText(b, st, -1)
	rec := st.Rec
	if err := statsReplace(tx, st.Doc); err != nil {
		return err
	}
	for _, name := range [][]byte{bDocs, bTerms, bQA} {
		if err := tx.Bucket(name).Delete(docKey(st.Doc)); err != nil {
			return err
		}
	}
	hk := hashKey(rec.ProjectID, rec.ContentHash)
	if bytes.Equal(tx.Bucket(bHash).Get(hk), []byte(rec.QAID)) {
		if err := tx.Bucket(bHash).Delete(hk); err != nil {
			return err
		}
	}
	return tx.Bucket(bList).Delete(listKey(rec))
}

// source is the inverted index restricted to some scopes, read in one
// transaction. It reads only the postings of the asked terms.
type source struct {
	tx     *bolt.Tx
	scopes []string
}

var _ retrieval.TermFreqReader = source{}

// newSource is the index of tx restricted to scopes, leaving out the
// scopes that hold no document (a project that shares nothing, an empty
// global scope): their lookups would find nothing, at the cost of a tree
// descent each.
func newSource(tx *bolt.Tx, scopes []string) source {
	b := tx.Bucket(bStats)
	live := make([]string, 0, len(scopes))
	for _, sc := range scopes {
		if readUvarints(b.Get([]byte(sc)), 1)[0] > 0 {
			live = append(live, sc)
		}
	}
	return source{tx: tx, scopes: live}
}

func (src source) Stats(ctx context.Context) (retrieval.Stats, error) {
	var st retrieval.Stats
	b := src.tx.Bucket(bStats)
	for _, sc := range src.scopes {
		v := readUvarints(b.Get([]byte(sc)), 3)
		st.Docs += int64(v[0])
		st.TotalLen[0] += int64(v[1])
		st.TotalLen[1] += int64(v[2])
	}
	return st, ctx.Err()
}

func (src source) DocFreq(ctx context.Context, term string) (int64, error) {
	var n int64
	b := src.tx.Bucket(bDF)
	for _, sc := range src.scopes {
		n += int64(readUvarints(b.Get(dfKey(sc, term)), 1)[0])
	}
	return n, ctx.Err()
}

// Postings reads the stored blocks of term's postings, scope by scope
// (each in doc order), checking the context before each block.
func (src source) Postings(ctx context.Context, term string, fn func(retrieval.Posting) bool) error {
	if strings.IndexByte(term, 0) >= 0 {
		return nil
	}
	var p retrieval.Posting
	c := src.tx.Bucket(bPost).Cursor()
	for _, sc := range src.scopes {
		prefix := termPrefix(sc, term)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if len(k) != len(prefix)+8 {
				continue
			}
			r := blockReader{v: v, doc: blockFirst(k)}
			for r.next(&p) {
				if !fn(p) {
					return nil
				}
			}
			if err := r.check(k); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// TermFreqs implements retrieval.TermFreqReader. A document's frequencies
// of all the terms come from its forward entry: one lookup per document,
// however many terms are deferred. Every QA entry is written with its
// forward entry (insert, the upgrade), so a document without one is not
// in the store, and is left out as retrieval.MemIndex leaves it out.
func (src source) TermFreqs(ctx context.Context, docs []uint64, terms []string, fn func(doc uint64, tfs []retrieval.TF, lens [retrieval.NumFields]uint32)) error {
	fwd := src.tx.Bucket(bTerms)
	want := make(map[string]int, len(terms))
	for j, t := range terms {
		if _, dup := want[t]; !dup {
			want[t] = j
		}
	}
	tfs := make([]retrieval.TF, len(terms))
	wanted := func(term []byte, tf retrieval.TF) {
		if j, found := want[string(term)]; found {
			tfs[j] = tf
		}
	}
	var key []byte
	for i, doc := range docs {
		if i&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		key = binary.BigEndian.AppendUint64(key[:0], doc)
		v := fwd.Get(key)
		if v == nil {
			continue
		}
		clear(tfs)
		lens, ok := walkTerms(v, wanted)
		if !ok {
			return fmt.Errorf("forward entry of doc %d is corrupt", doc)
		}
		for j, t := range terms {
			if k := want[t]; k != j {
				tfs[j] = tfs[k] // a repeated term
			}
		}
		fn(doc, tfs, lens)
	}
	return ctx.Err()
}

// reputation reads the book inside a transaction.
type reputation struct{ tx *bolt.Tx }

func (r reputation) Source(id string) trust.SourceRep {
	return repEntry[trust.SourceRep](r.tx, "s:"+id)
}

func (r reputation) Creator(id string) trust.CreatorRep {
	return repEntry[trust.CreatorRep](r.tx, "c:"+id)
}

// repEntry decodes the book's entry key; zero when absent or unreadable.
func repEntry[T any](tx *bolt.Tx, key string) T {
	var rep T
	if v := tx.Bucket(bRep).Get([]byte(key)); v != nil {
		_ = json.Unmarshal(v, &rep)
	}
	return rep
}

// persist writes what a ledger event asks besides the entry: the
// reputation increments to the book, and the day counter.
func persist(tx *bolt.Tx, project, creator string, ch ledger.Change) error {
	r := reputation{tx}
	b := tx.Bucket(bRep)
	eff := ch.Effects
	for id, inc := range eff.Sources {
		cur := r.Source(id)
		cur.Agree += inc.Agree
		cur.Disagree += inc.Disagree
		cur.Trusted = cur.Trusted || inc.Trusted
		v, _ := json.Marshal(cur)
		if err := b.Put([]byte("s:"+id), v); err != nil {
			return err
		}
	}
	if creator != "" && (eff.Creator.Proven != 0 || eff.Creator.Rejected != 0) {
		cur := r.Creator(creator)
		cur.Proven += eff.Creator.Proven
		cur.Rejected += eff.Creator.Rejected
		v, _ := json.Marshal(cur)
		if err := b.Put([]byte("c:"+creator), v); err != nil {
			return err
		}
	}
	if ch.Day == nil {
		return nil
	}
	passes, fails := int64(1), int64(0)
	if !ch.Day.Pass {
		passes, fails = 0, 1
	}
	return addUvarints(tx.Bucket(bDays), []byte(project+"\x00"+ch.Day.Date), false, passes, fails)
}
