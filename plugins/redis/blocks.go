package redisstore

import (
	"context"
	"sync"

	"github.com/memex-dev/memex/retrieval"
)

var _ retrieval.PostingScanner = (*source)(nil)

// scanBlock is how many postings one block of ScanPostings holds (6 KiB).
const scanBlock = 256

// blockBufs holds the reusable blocks of ScanPostings: a search reads a
// few lists, one after the other, and a block must not be allocated per
// list (it escapes to the scorer's callback).
var blockBufs = sync.Pool{New: func() any { return new([scanBlock]retrieval.Posting) }}

// ScanPostings implements retrieval.PostingScanner: the postings of
// Postings, in the same order (scope by scope, doc order within one),
// filled from the decoded lists into a reused block of scanBlock postings
// and handed to fn a block at a time, the context checked between blocks.
func (src *source) ScanPostings(ctx context.Context, term string, fn func([]retrieval.Posting)) error {
	buf := blockBufs.Get().(*[scanBlock]retrieval.Posting)
	defer blockBufs.Put(buf)
	for i, sc := range src.scopes {
		l := sc.lists[term]
		if l == nil {
			continue
		}
		lc := newLensCursor(src.lens[sc.owner])
		base := uint64(i) << 32
		docs, tfs := l.docs, l.tfs[:len(l.docs)]
		for len(docs) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			b := buf[:min(len(docs), scanBlock)]
			ds, ts := docs[:len(b)], tfs[:len(b)]
			for j, d := range ds {
				b[j] = retrieval.Posting{Doc: base | uint64(d), TF: ts[j], Len: lensOf(lc.bucketOf(d), uint64(d))}
			}
			fn(b)
			docs, tfs = docs[len(b):], tfs[len(b):]
		}
	}
	return ctx.Err()
}
