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
		base := uint64(i) << 32
		docs, post := l.docs, l.post[:len(l.docs)]
		for len(docs) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			b := buf[:min(len(docs), scanBlock)]
			ds, ps := docs[:len(b)], post[:len(b)]
			for j, d := range ds {
				setPosting(&b[j], base|uint64(d), ps[j])
			}
			fn(b)
			docs, post = docs[len(b):], post[len(b):]
		}
	}
	return ctx.Err()
}
