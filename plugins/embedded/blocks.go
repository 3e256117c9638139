package embedded

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/retrieval"
)

// Posting blocks (schema 2). A term's postings in a scope are kept in
// blocks of up to blockMax postings, each under the key
// scope 0 term 0 first-doc-id (big-endian), so a term's blocks are one
// contiguous key range in doc order and each block covers the doc ids from
// its first to the next block's first (excluded).
//
// A block's value is, per posting in doc order, the uvarints
//
//	doc − previous doc (omitted for the first posting: the key holds it),
//	the frequencies (see appendTF), question length, answer length.
//
// The field lengths are repeated in every posting of a document so a
// search scores a posting without another lookup; they are exact, so
// scores are those of retrieval.MemIndex on the same documents.
//
// Doc ids only grow, so a new document's postings append to the term's
// last block (a new block starts when it is full: appended blocks stay
// full); a re-index (same doc id) or a delete rewrites the block holding
// the document; a block that overflows splits after blockMax postings; a
// block that becomes empty is deleted. All of these are one merge of a
// batch's postings into the blocks (mergeBlocks), a delete being a posting
// without frequencies.
const blockMax = 128

// blockKey is the key of the block of prefix (scope 0 term 0) whose first
// posting is doc first.
func blockKey(prefix []byte, first uint64) []byte {
	k := make([]byte, 0, len(prefix)+8)
	k = append(k, prefix...)
	return binary.BigEndian.AppendUint64(k, first)
}

// isBlock reports whether k is a block key of prefix.
func isBlock(k, prefix []byte) bool {
	return len(k) == len(prefix)+8 && bytes.HasPrefix(k, prefix)
}

func blockFirst(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

// encodeBlock encodes ps (sorted by doc, distinct, not empty).
func encodeBlock(ps []retrieval.Posting) []byte {
	b := make([]byte, 0, len(ps)*6)
	prev := ps[0].Doc
	for i, p := range ps {
		if i > 0 {
			b = binary.AppendUvarint(b, p.Doc-prev)
			prev = p.Doc
		}
		b = appendTF(b, p.TF)
		b = binary.AppendUvarint(b, uint64(p.Len[0]))
		b = binary.AppendUvarint(b, uint64(p.Len[1]))
	}
	return b
}

// appendTF encodes a posting's frequencies as one uvarint, min(tf in
// question, 7) | tf in answer << 3 (one byte for the usual small
// frequencies), followed, when the question's is 7 or more, by the uvarint
// tf in question − 7.
func appendTF(b []byte, tf retrieval.TF) []byte {
	q := min(tf[0], 7)
	b = binary.AppendUvarint(b, uint64(q)|uint64(tf[1])<<3)
	if q == 7 {
		b = binary.AppendUvarint(b, uint64(tf[0]-7))
	}
	return b
}

// blockReader iterates over the postings of a block value.
type blockReader struct {
	v   []byte
	doc uint64
	n   int // postings read
	err bool
}

func (r *blockReader) uv() uint32 {
	x, n := binary.Uvarint(r.v)
	if n <= 0 || x > math.MaxUint32 {
		r.err, r.v = true, nil
		return 0
	}
	r.v = r.v[n:]
	return uint32(x)
}

// next decodes the next posting into p; false at the end or on a malformed
// value (then r.err is set).
func (r *blockReader) next(p *retrieval.Posting) bool {
	if len(r.v) == 0 {
		return false
	}
	if r.n > 0 {
		d, n := binary.Uvarint(r.v)
		if n <= 0 || d == 0 {
			r.err, r.v = true, nil
			return false
		}
		r.v = r.v[n:]
		r.doc += d
	}
	r.n++
	p.Doc = r.doc
	x, n := binary.Uvarint(r.v)
	if n <= 0 || x>>3 > math.MaxUint32 {
		r.err, r.v = true, nil
		return false
	}
	r.v = r.v[n:]
	p.TF[0], p.TF[1] = uint32(x&7), uint32(x>>3)
	if p.TF[0] == 7 {
		p.TF[0] += r.uv()
	}
	p.Len[0], p.Len[1] = r.uv(), r.uv()
	return !r.err
}

// check returns the error of a malformed block k, nil if r read it whole.
func (r *blockReader) check(k []byte) error {
	if r.err {
		return fmt.Errorf("posting block %q is corrupt", k)
	}
	return nil
}

// decodeBlock appends the postings of a block to dst.
func decodeBlock(dst []retrieval.Posting, k, v []byte) ([]retrieval.Posting, error) {
	r := blockReader{v: v, doc: blockFirst(k)}
	var p retrieval.Posting
	for r.next(&p) {
		dst = append(dst, p)
	}
	return dst, r.check(k)
}

// findBlock positions c on the block of prefix that covers doc (the last
// block whose first doc ≤ doc) and returns its key and value, or nil.
func findBlock(c *bolt.Cursor, prefix []byte, doc uint64) (k, v []byte) {
	k, v = c.Seek(blockKey(prefix, doc))
	if k != nil && isBlock(k, prefix) && blockFirst(k) == doc {
		return k, v
	}
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k != nil && isBlock(k, prefix) {
		return k, v
	}
	return nil, nil
}

// removal reports whether p removes its doc's posting: a document has a
// posting of a term only where the term occurs, so no frequencies is the
// mark (unindex).
func removal(p retrieval.Posting) bool { return p.TF == retrieval.TF{} }

// mergeBlocks merges ps (sorted by doc, distinct) into the blocks of
// prefix: a posting of a doc already there replaces it, and a removal
// deletes it. Each block the postings fall in is rewritten as blocks of
// blockMax postings from its first (the last one partly filled): a block
// that overflows splits there, and a full block that new documents follow
// stays as it is, the new postings starting the next block.
func mergeBlocks(b *bolt.Bucket, prefix []byte, ps []retrieval.Posting) error {
	c := b.Cursor()
	var blk []retrieval.Posting
	for len(ps) > 0 {
		blk = blk[:0]
		var oldKey []byte
		bound := uint64(math.MaxUint64) // first doc of the next block
		k, v := findBlock(c, prefix, ps[0].Doc)
		if k == nil {
			// ps[0] precedes every block: merge into the first one, if any.
			if k, v = c.Seek(prefix); k != nil && !isBlock(k, prefix) {
				k = nil
			}
		}
		if k != nil {
			oldKey = slices.Clone(k)
			var err error
			if blk, err = decodeBlock(blk, k, v); err != nil {
				return err
			}
			if nk, _ := c.Next(); nk != nil && isBlock(nk, prefix) {
				bound = blockFirst(nk)
			}
		}
		j := 1
		for j < len(ps) && ps[j].Doc < bound {
			j++
		}
		merged := slices.DeleteFunc(mergePostings(blk, ps[:j]), removal)
		ps = ps[j:]
		if oldKey != nil && (len(merged) == 0 || blockFirst(oldKey) != merged[0].Doc) {
			if err := b.Delete(oldKey); err != nil {
				return err
			}
		}
		for len(merged) > 0 {
			n := min(len(merged), blockMax)
			if err := b.Put(blockKey(prefix, merged[0].Doc), encodeBlock(merged[:n])); err != nil {
				return err
			}
			merged = merged[n:]
		}
	}
	return nil
}

// mergePostings merges two doc-sorted lists; add wins on equal docs.
func mergePostings(old, add []retrieval.Posting) []retrieval.Posting {
	out := make([]retrieval.Posting, 0, len(old)+len(add))
	i, j := 0, 0
	for i < len(old) || j < len(add) {
		switch {
		case j == len(add) || i < len(old) && old[i].Doc < add[j].Doc:
			out = append(out, old[i])
			i++
		case i == len(old) || add[j].Doc < old[i].Doc:
			out = append(out, add[j])
			j++
		default: // same doc
			out = append(out, add[j])
			i++
			j++
		}
	}
	return out
}
