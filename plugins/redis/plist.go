package redisstore

import (
	"github.com/memex-dev/memex/retrieval"
)

// plist is a posting list decoded once, when it is read from Redis, and
// kept so in the index cache: a search walks plain arrays instead of
// decoding varints again for the scorer, the lens buckets and the rescoring
// of common terms.
type plist struct {
	docs []uint32       // doc ids, ascending
	tfs  []retrieval.TF // tfs[i] is the term frequency in docs[i]
	// buckets are the distinct lens buckets (doc / lensBucket) of docs,
	// ascending: the buckets a search must read to score the list.
	buckets []uint32
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
	return int64(4*cap(l.docs) + 8*cap(l.tfs) + 4*cap(l.buckets) + 80)
}

// decodeList decodes a packed list (codec.go) as forPostings reads it: a
// corrupt tail is ignored, and so is a doc id past 32 bits (a scope's doc
// ids are 32-bit). "" is no list (nil).
func decodeList(list string) *plist {
	if len(list) <= postingHeader {
		return nil
	}
	// A posting is at least 2 bytes: the arrays never grow.
	n := (len(list) - postingHeader) / 2
	l := &plist{docs: make([]uint32, 0, n), tfs: make([]retrieval.TF, 0, n)}
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
		l.tfs = append(l.tfs, retrieval.TF{uint32(a), uint32(b)})
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
		l.tfs = append([]retrieval.TF(nil), l.tfs...)
	}
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
