package retrieval

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// MemIndex is an in-memory Source (with TermFreqReader): an inverted index
// of analysed QAs plus a forward index of each document's terms, used by
// tests, benchmarks and the evaluation tools. Reads (Stats, DocFreq,
// Postings, TermFreqs, Len) may run concurrently with each other and with
// Add/Remove; callbacks run under the read lock, so they must not call Add
// or Remove.
type MemIndex struct {
	a *Analyzer

	mu    sync.RWMutex
	ids   map[string]uint32 // term → id
	post  [][]Posting       // by term id, each sorted by Doc
	docs  docTable
	stats Stats
}

// docTable holds the forward entries of the documents: in a slice indexed
// by doc for the small, dense ids callers mostly use (0…n-1 or 1…n), where
// a look-up is one load rather than a hash probe, and in a map for the
// others.
type docTable struct {
	dense []memDoc // by doc; nil: absent
	far   map[uint64]memDoc
	n     int
}

// denseSlack is how far beyond twice the document count a doc may be and
// still go to the slice.
const denseSlack = 1024

func (t *docTable) get(doc uint64) (memDoc, bool) {
	if doc < uint64(len(t.dense)) {
		md := t.dense[doc]
		return md, md != nil
	}
	md, ok := t.far[doc]
	return md, ok
}

// set stores md (not nil) as doc's entry, which must be absent.
func (t *docTable) set(doc uint64, md memDoc) {
	t.n++
	if limit := uint64(2*t.n + denseSlack); doc >= uint64(len(t.dense)) && doc < limit {
		t.grow(int(max(doc+1, min(2*uint64(len(t.dense)), limit))))
	}
	if doc < uint64(len(t.dense)) {
		t.dense[doc] = md
		return
	}
	if t.far == nil {
		t.far = map[uint64]memDoc{}
	}
	t.far[doc] = md
}

// grow lengthens the slice to n entries, moving there the entries of the
// map it now covers.
func (t *docTable) grow(n int) {
	t.dense = slices.Grow(t.dense, n-len(t.dense))[:n]
	for doc, md := range t.far {
		if doc < uint64(n) {
			t.dense[doc] = md
			delete(t.far, doc)
		}
	}
}

// del removes doc's entry, which must be present.
func (t *docTable) del(doc uint64) {
	t.n--
	if doc < uint64(len(t.dense)) {
		t.dense[doc] = nil
		return
	}
	delete(t.far, doc)
}

// memDoc is the forward index of one document in one allocation: its field
// lengths, its n term ids (sorted), then their n frequencies per field.
type memDoc []uint32

const memDocHead = NumFields

func (d memDoc) lens() (l [NumFields]uint32) {
	copy(l[:], d[:NumFields])
	return l
}
func (d memDoc) n() int          { return (len(d) - memDocHead) / (1 + NumFields) }
func (d memDoc) terms() []uint32 { return d[memDocHead : memDocHead+d.n()] }
func (d memDoc) tf(i int) (tf TF) {
	off := memDocHead + d.n() + i*NumFields
	copy(tf[:], d[off:off+NumFields])
	return tf
}

var (
	_ Source         = (*MemIndex)(nil)
	_ TermFreqReader = (*MemIndex)(nil)
)

// NewMemIndex returns an empty index that analyses QAs with a.
func NewMemIndex(a *Analyzer) *MemIndex {
	return &MemIndex{a: a, ids: map[string]uint32{}}
}

// Add analyses and indexes a QA as doc, replacing any earlier version.
func (m *MemIndex) Add(doc uint64, question, answer string) {
	m.AddDoc(doc, m.a.Analyze(question, answer))
}

// AddDoc indexes an already analysed document as doc, replacing any earlier
// version.
func (m *MemIndex) AddDoc(doc uint64, d Doc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(doc)
	type pair struct {
		id uint32
		tf TF
	}
	ps := make([]pair, 0, len(d.Terms))
	for t, tf := range d.Terms {
		id, ok := m.ids[t]
		if !ok {
			id = uint32(len(m.post))
			m.ids[t] = id
			m.post = append(m.post, nil)
		}
		ps = append(ps, pair{id, tf})
	}
	slices.SortFunc(ps, func(a, b pair) int { return cmp.Compare(a.id, b.id) })
	md := make(memDoc, memDocHead+len(ps)*(1+NumFields))
	copy(md, d.Len[:])
	for i, p := range ps {
		md[memDocHead+i] = p.id
		copy(md[memDocHead+len(ps)+i*NumFields:], p.tf[:])
		m.post[p.id] = insertPosting(m.post[p.id], Posting{Doc: doc, TF: p.tf, Len: d.Len})
	}
	m.docs.set(doc, md)
	m.stats.Docs++
	for f := range NumFields {
		m.stats.TotalLen[f] += int64(d.Len[f])
	}
}

// postingDoc compares a posting's document with doc.
func postingDoc(p Posting, doc uint64) int { return cmp.Compare(p.Doc, doc) }

// insertPosting inserts p into ps, a list sorted by Doc without p.Doc: an
// append when documents are added in order, as they mostly are.
func insertPosting(ps []Posting, p Posting) []Posting {
	if n := len(ps); n == 0 || ps[n-1].Doc < p.Doc {
		return append(ps, p)
	}
	i, _ := slices.BinarySearchFunc(ps, p.Doc, postingDoc)
	return slices.Insert(ps, i, p)
}

// Remove deletes doc from the index and reports whether it was there.
func (m *MemIndex) Remove(doc uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeLocked(doc)
}

func (m *MemIndex) removeLocked(doc uint64) bool {
	md, ok := m.docs.get(doc)
	if !ok {
		return false
	}
	for _, id := range md.terms() {
		ps := m.post[id]
		if i, ok := slices.BinarySearchFunc(ps, doc, postingDoc); ok {
			m.post[id] = slices.Delete(ps, i, i+1)
		}
	}
	m.docs.del(doc)
	m.stats.Docs--
	for f := range NumFields {
		m.stats.TotalLen[f] -= int64(md[f])
	}
	return true
}

// Len is the number of indexed documents.
func (m *MemIndex) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.docs.n
}

// Stats implements Source.
func (m *MemIndex) Stats(ctx context.Context) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.stats, nil
}

// DocFreq implements Source.
func (m *MemIndex) DocFreq(ctx context.Context, term string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	id, ok := m.ids[term]
	if !ok {
		return 0, nil
	}
	return int64(len(m.post[id])), nil
}

// docFreqs appends to dfs the DocFreq of each term of qts, read under one
// lock, and sets the memID of those the index has.
func (m *MemIndex) docFreqs(ctx context.Context, qts []queryTerm, dfs []int64) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, q := range qts {
		var df int64
		if id, ok := m.ids[q.term]; ok {
			df = int64(len(m.post[id]))
			qts[i].memID = id + 1 // (an id stays its term's for good)
		}
		dfs = append(dfs, df)
	}
	return dfs, nil
}

// Postings implements Source.
func (m *MemIndex) Postings(ctx context.Context, term string, fn func(Posting) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	id, ok := m.ids[term]
	if !ok {
		return nil
	}
	for _, p := range m.post[id] {
		if !fn(p) {
			break
		}
	}
	return nil
}

// scanPostings calls fn with the postings of term, one block (under the
// read lock; fn must not keep the slice): the block scan of
// PostingScanner, which the scorer uses for a *MemIndex itself only. It is
// unexported so that a type embedding a *MemIndex to override Postings
// (tests filter or count postings so) does not get it promoted, bypassing
// the override. The context is checked before, not during, the scan.
func (m *MemIndex) scanPostings(ctx context.Context, term string, fn func([]Posting)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if id, ok := m.ids[term]; ok {
		fn(m.post[id])
	}
	return nil
}

// withLists returns fn's hits for the posting lists of the terms of qts
// (sorted by Doc, as the index keeps them; empty for a term no document
// holds) and their weights, under the read lock: fn must not keep the
// lists. They are appended to lists[:0] and idfs[:0], whose memory the
// caller lends. The context is checked before, not during, fn.
func (m *MemIndex) withLists(ctx context.Context, qts []queryTerm, lists [][]Posting, idfs []float64, fn func(lists [][]Posting, idfs []float64) []Hit) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lists, idfs = lists[:0], idfs[:0]
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, q := range qts {
		var ps []Posting
		if q.memID > 0 {
			ps = m.post[q.memID-1]
		} else if id, ok := m.ids[q.term]; ok {
			ps = m.post[id]
		}
		lists, idfs = append(lists, ps), append(idfs, q.idf)
	}
	return fn(lists, idfs), nil
}

// TermFreqs implements TermFreqReader.
func (m *MemIndex) TermFreqs(ctx context.Context, docs []uint64, terms []string, fn func(doc uint64, tfs []TF, lens [NumFields]uint32)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	// Sort the asked terms by id once, then merge each document's sorted
	// term ids against them.
	type want struct {
		id  uint32
		pos int
	}
	ws := make([]want, 0, len(terms))
	for i, t := range terms {
		if id, ok := m.ids[t]; ok {
			ws = append(ws, want{id, i})
		}
	}
	slices.SortFunc(ws, func(a, b want) int { return cmp.Compare(a.id, b.id) })
	// The entries are looked up, and their lengths read, first: the
	// cache misses of one document then overlap with the next ones'
	// instead of coming one at a time in the loop that merges.
	type entry struct {
		md   memDoc
		lens [NumFields]uint32
	}
	es := make([]entry, len(docs))
	for i, doc := range docs {
		if md, ok := m.docs.get(doc); ok {
			es[i] = entry{md, md.lens()}
		}
	}
	tfs := make([]TF, len(terms))
	for i, e := range es {
		md := e.md
		if md == nil {
			continue
		}
		clear(tfs)
		ts := md.terms()
		j := 0
		for _, w := range ws {
			for j < len(ts) && ts[j] < w.id {
				j++
			}
			if j == len(ts) {
				break
			}
			if ts[j] == w.id {
				tfs[w.pos] = md.tf(j)
			}
		}
		fn(docs[i], tfs, e.lens)
	}
	return ctx.Err()
}
