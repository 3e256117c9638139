//go:build !unix

package embedded

import (
	"context"
	"fmt"
	"os"

	"github.com/memex-dev/memex/core"
)

// lockGate is a no-op where flock(2) is missing: bbolt's own file lock (with
// the lock timeout) still serialises processes.
func (s *Store) lockGate(ctx context.Context) (*os.File, error) {
	return nil, ctx.Err()
}

func (s *Store) lockedError() error {
	return fmt.Errorf("embedded: store %s is locked by another process (waited %s): %w", s.path, s.cfg.lockTimeout, core.ErrUnavailable)
}
