package redisstore

import (
	"context"

	"github.com/memex-dev/memex/retrieval"
)

var _ retrieval.PostingScanner = (*source)(nil)

// scanBlock is how many postings one block of ScanPostings holds (6 KiB).
const scanBlock = 256

// ScanPostings implements retrieval.PostingScanner: the postings of term,
// scope by scope in doc order, filled from the decoded lists into the
// source's block of scanBlock postings and handed to fn a block at a
// time, the context checked between blocks.
func (src *source) ScanPostings(ctx context.Context, term string, fn func([]retrieval.Posting)) error {
	buf := &src.buffers().block
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
