//go:build !unix

package embedded

import (
	"context"
	"os"
)

// lockGate is a no-op where flock(2) is missing: bbolt's own file lock (with
// the lock timeout) still serialises processes.
func (s *Store) lockGate(ctx context.Context) (*os.File, error) {
	return nil, ctx.Err()
}
