package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Dump calls fn with every key and value of the store file, bucket by
// bucket, each value in plain form: a QA entry's record is decoded from
// its codec (codec.go: it may be DEFLATE-compressed) and given as the
// record's JSON after the rank entry and trust state. It is for audits of
// what the file holds, which raw bytes cannot show: the attack suite
// (docs/SECURITY.md) checks it for secrets. fn must not keep key or value.
func (s *Store) Dump(ctx context.Context, fn func(bucket string, key, value []byte) error) error {
	return s.view(ctx, "dump", func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				if string(name) == string(bQA) && v != nil {
					plain, err := plainEntry(v)
					if err != nil {
						return fmt.Errorf("entry %x: %w", k, err)
					}
					v = plain
				}
				return fn(string(name), k, v)
			})
		})
	})
}

// plainEntry is a QA entry with its record as JSON.
func plainEntry(v []byte) ([]byte, error) {
	_, rest, err := decodeRank(v)
	if err != nil {
		return nil, err
	}
	rec, err := decodeRecord(rest)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return append(slices.Clip(v[:len(v)-len(rest)]), js...), nil
}
