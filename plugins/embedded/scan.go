package embedded

import (
	"context"
	"sync"

	"github.com/memex-dev/memex/retrieval"
)

var _ retrieval.PostingScanner = source{}

// scanBlock is how many postings one block of ScanPostings holds at most
// (a few stored blocks: blockMax each).
const scanBlock = 256

// scanBufs holds the reusable blocks of ScanPostings (a block escapes to
// the scorer's callback: not one allocation per list).
var scanBufs = sync.Pool{New: func() any { return new([scanBlock]retrieval.Posting) }}

// ScanPostings implements retrieval.PostingScanner: Postings' postings, in
// the same order, decoded into a reused block and handed to fn a block at
// a time. The context is checked between stored blocks.
func (src source) ScanPostings(ctx context.Context, term string, fn func([]retrieval.Posting)) error {
	buf := scanBufs.Get().(*[scanBlock]retrieval.Posting)
	defer scanBufs.Put(buf)
	n := 0
	err := src.eachBlock(ctx, term, func(k, v []byte) (bool, error) {
		r := blockReader{v: v, doc: blockFirst(k)}
		for r.next(&buf[n]) {
			if n++; n == scanBlock {
				fn(buf[:])
				n = 0
			}
		}
		return true, r.check(k)
	})
	if err == nil && n > 0 {
		fn(buf[:n])
	}
	return err
}
