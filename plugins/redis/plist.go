package redisstore

import (
	"math/bits"

	"github.com/memex-dev/memex/retrieval"
)

// plist is a posting list decoded once, when it is read from Redis, and
// kept so in the index cache: a search walks plain arrays instead of
// decoding varints again for the scorer, the lens buckets and the rescoring
// of common terms.
type plist struct {
	docs []uint32 // doc ids, ascending
	// post[i] packs the term frequencies of docs[i] and, once attached
	// (withLens), its field lengths (packPost): a search reads them in
	// list order, one word per posting, instead of looking each document
	// up in its lens bucket, scattered over the owner's documents.
	post []uint64
	// buckets are the distinct lens buckets (doc / lensBucket) of docs,
	// ascending: the buckets a search must read to attach the lengths
	// (nil once attached).
	buckets []uint32
	// lens tells whether the field lengths are attached. A list never
	// changes once shared: attaching makes a new one.
	lens bool
	// rank finds a document in a dense list without a search (nil: the
	// list is short or sparse).
	rank *docRank
}

// docRank is a bitmap of a dense list's documents with the count of
// those before each word: a document's index in the list is a bit test
// and a popcount (the rescoring of common terms looks a few hundred
// candidates up in lists of tens of thousands).
type docRank struct {
	first uint32   // the doc id of bit 0 of words[0] (a multiple of 64)
	words []uint64 // bit b of words[w]: the list holds first + 64w + b
	ranks []uint32 // ranks[w]: the list's documents before words[w]
}

// Lists shorter than rankMinDocs, or with fewer than one document in
// rankMinDensity of their span of ids, get no docRank: it would cost more
// than half the list's own memory (12 bytes per 64 ids against 12 per
// posting) or save little. (At 100k QAs the index cache holds 8 % more.)
const (
	rankMinDocs    = 128
	rankMinDensity = 32
)

// newDocRank indexes docs (ascending), or returns nil when they are too
// few or too sparse.
func newDocRank(docs []uint32) *docRank {
	if len(docs) < rankMinDocs {
		return nil
	}
	first := docs[0] &^ 63
	n := int((docs[len(docs)-1]-first)/64) + 1
	if n*64 > len(docs)*rankMinDensity {
		return nil
	}
	r := &docRank{first: first, words: make([]uint64, n), ranks: make([]uint32, n)}
	for _, d := range docs {
		r.words[(d-first)/64] |= 1 << ((d - first) % 64)
	}
	var seen uint32
	for w, word := range r.words {
		r.ranks[w] = seen
		seen += uint32(bits.OnesCount64(word))
	}
	return r
}

// index returns the index of doc in the list, or -1 when it does not
// hold doc.
func (r *docRank) index(doc uint32) int {
	if doc < r.first {
		return -1
	}
	w, bit := (doc-r.first)/64, uint64(1)<<((doc-r.first)%64)
	if int(w) >= len(r.words) || r.words[w]&bit == 0 {
		return -1
	}
	return int(r.ranks[w]) + bits.OnesCount64(r.words[w]&(bit-1))
}

// packPost packs a posting's term frequencies and field lengths, 16 bits
// each: tf0, tf1, len0, len1 from the high bits down. Lengths are 16 bits
// in the lens buckets already; a term frequency above 65535 counts as
// 65535 (a field that long is past the lens buckets' 16 bits too).
func packPost(tf retrieval.TF, lens [retrieval.NumFields]uint32) uint64 {
	return uint64(min(tf[0], 0xffff))<<48 | uint64(min(tf[1], 0xffff))<<32 | uint64(lens[0]&0xffff)<<16 | uint64(lens[1]&0xffff)
}

// tfOf and lensOfPost unpack a packPost word.
func tfOf(v uint64) retrieval.TF {
	return retrieval.TF{uint32(v >> 48), uint32(v>>32) & 0xffff}
}

func lensOfPost(v uint64) [retrieval.NumFields]uint32 {
	return [retrieval.NumFields]uint32{uint32(v>>16) & 0xffff, uint32(v) & 0xffff}
}

// setPosting fills p with posting v of document doc, field by field: a
// composite literal is built on the stack and copied, with stalls on the
// partial writes (5× slower in a scan).
func setPosting(p *retrieval.Posting, doc, v uint64) {
	p.Doc = doc
	p.TF[0], p.TF[1] = uint32(v>>48), uint32(v>>32)&0xffff
	p.Len[0], p.Len[1] = uint32(v>>16)&0xffff, uint32(v)&0xffff
}

// withLens returns a copy of l with the field lengths of its documents
// attached, taken from the owner's lens buckets by number ("" or missing:
// not stored, zero lengths, as lensOf reads them): one lookup per bucket,
// the documents being in order.
func (l *plist) withLens(buckets map[uint64]string) *plist {
	out := &plist{docs: l.docs, post: make([]uint64, len(l.post)), lens: true, rank: l.rank}
	cur, bucket := ^uint32(0), ""
	for i, d := range l.docs {
		if n := d / lensBucket; n != cur {
			cur, bucket = n, buckets[uint64(n)]
		}
		out.post[i] = packPost(tfOf(l.post[i]), lensOf(bucket, uint64(d)))
	}
	return out
}

// df is the list's document frequency.
func (l *plist) df() int64 {
	if l == nil {
		return 0
	}
	return int64(len(l.docs))
}

// size is the list's approximate memory in bytes (index cache bound).
func (l *plist) size() int64 {
	if l == nil {
		return 0
	}
	n := int64(4*cap(l.docs) + 8*cap(l.post) + 4*cap(l.buckets) + 96)
	if l.rank != nil {
		n += int64(8*cap(l.rank.words) + 4*cap(l.rank.ranks) + 56)
	}
	return n
}

// decodeList decodes a packed list (codec.go): a corrupt tail is ignored,
// and so is a doc id past 32 bits (a scope's doc ids are 32-bit). "" is no
// list (nil).
func decodeList(list string) *plist {
	if len(list) <= postingHeader {
		return nil
	}
	// A posting is at least 2 bytes: the arrays never grow.
	n := (len(list) - postingHeader) / 2
	l := &plist{docs: make([]uint32, 0, n), post: make([]uint64, 0, n)}
	var doc uint64
	lastBucket := ^uint32(0)
	for i := postingHeader; i < len(list); {
		var gap, a, b uint64
		var ok bool
		if gap, i, ok = readUvarint(list, i); !ok || i >= len(list) {
			break
		}
		doc += gap
		if doc >= 1<<32 {
			break
		}
		if c := list[i]; c < 0x80 {
			a, b = uint64(c>>4), uint64(c&15)
			i++
		} else {
			if a, i, ok = readUvarint(list, i+1); !ok {
				break
			}
			if b, i, ok = readUvarint(list, i); !ok {
				break
			}
		}
		l.docs = append(l.docs, uint32(doc))
		l.post = append(l.post, packPost(retrieval.TF{uint32(a), uint32(b)}, [retrieval.NumFields]uint32{}))
		if bk := uint32(doc / lensBucket); bk != lastBucket {
			l.buckets = append(l.buckets, bk)
			lastBucket = bk
		}
	}
	if len(l.docs) == 0 {
		return &plist{}
	}
	// Trim the arrays to their length when the guess was far off (long tf
	// forms are rare): the cache keeps them for long.
	if cap(l.docs) > len(l.docs)+len(l.docs)/4+8 {
		l.docs = append([]uint32(nil), l.docs...)
		l.post = append([]uint64(nil), l.post...)
	}
	l.rank = newDocRank(l.docs)
	return l
}

// search returns the index of the first doc ≥ want in l.docs[from:]
// (len(l.docs) if none), galloping from from: candidates are walked in
// order, and the next one is usually near.
func (l *plist) search(from int, want uint32) int {
	docs := l.docs
	if from >= len(docs) || docs[from] >= want {
		return from
	}
	// docs[lo] < want; find hi with docs[hi] ≥ want (or the end).
	lo, step := from, 1
	hi := lo + step
	for hi < len(docs) && docs[hi] < want {
		lo = hi
		step *= 2
		hi = lo + step
	}
	if hi > len(docs) {
		hi = len(docs)
	}
	// docs[lo] < want ≤ docs[hi] (hi may be the end).
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if docs[m] < want {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}
