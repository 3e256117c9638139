package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// compactFreeShare: Compact rewrites a file of which at least one page in
// compactFreeShare is free.
const compactFreeShare = 8

// compactTxBytes bounds the keys and values one transaction of the copy
// writes (its pages are held in memory until it commits).
const compactTxBytes = 32 << 20

// Compact rewrites the store into a file holding only its live data, in
// pages filled in key order, when at least an eighth of the file's pages
// are free, and reports whether it did. bbolt never shrinks a file, and a
// bulk import leaves much of it free and its pages partly filled: each
// transaction copies on write every page it touches (most posting and df
// pages, for a batch of 500 QAs), and keys inserted out of order split
// pages in halves. memex qa import calls it after an import, and Open
// after an upgrade.
//
// The copy is written beside the file (<path>.compact), synced, and
// renamed over the file while Compact holds both the gate and the file's
// exclusive lock: no other process has the old file open, nor can open it
// (each open passes the gate first), so every later open reads the new
// one. A process killed before the rename leaves the store as it was (and
// a stale copy, which the next Compact replaces). The other operations of
// this Store wait for it. It is refused in keep-open mode (the handle is
// shared for the Store's lifetime), and does nothing where the gate is
// missing (no flock: another process could be waiting on the old file).
func (s *Store) Compact(ctx context.Context) (bool, error) {
	if s.cfg.keepOpen {
		return false, errors.New("embedded: compact: not in keep-open mode")
	}
	return s.compact(ctx)
}

// compact is Compact in either mode, for a Store that holds no handle.
func (s *Store) compact(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Wait for this process's operations in flight to release the file.
	for s.db != nil && !s.closed {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return false, ctx.Err()
		}
		s.mu.Lock()
	}
	if s.closed {
		return false, fmt.Errorf("embedded: compact: store %s is closed", s.path)
	}
	gate, err := s.lockGate(ctx)
	if err != nil || gate == nil {
		return false, err
	}
	defer func() { _ = gate.Close() }()
	db, err := s.openFile(false, s.cfg.lockTimeout)
	if err != nil {
		return false, fmt.Errorf("embedded: compact: %w", err)
	}
	defer s.closeDB(db) // after the rename: the old file, unlinked
	if worth, err := s.worthCompacting(db); err != nil || !worth {
		return false, err
	}
	// The file a symbolic link leads to is replaced, not the link.
	file, err := filepath.EvalSymlinks(s.path)
	if err != nil {
		return false, fmt.Errorf("embedded: compact: %w", err)
	}
	tmp := file + ".compact"
	if err := copyCompacted(db, tmp); err != nil {
		_ = os.Remove(tmp)
		return false, fmt.Errorf("embedded: compact %s: %w", s.path, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
		return false, fmt.Errorf("embedded: compact %s: %w", s.path, err)
	}
	if err := syncDir(filepath.Dir(file)); err != nil {
		return true, fmt.Errorf("embedded: compact %s: %w", s.path, err)
	}
	return true, nil
}

// worthCompacting reports whether at least one page in compactFreeShare
// of db's file is free.
func (s *Store) worthCompacting(db *bolt.DB) (bool, error) {
	st, err := os.Stat(s.path)
	if err != nil {
		return false, fmt.Errorf("embedded: compact: %w", err)
	}
	pages := st.Size() / int64(db.Info().PageSize)
	return int64(db.Stats().FreePageN)*compactFreeShare >= pages, nil
}

// copyCompacted copies src's buckets into a new file at path, which ends
// at its last page, synced once at the end (the copy is used only once
// complete).
func copyCompacted(src *bolt.DB, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dst, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return err
	}
	err = bolt.Compact(dst, src, compactTxBytes)
	if err == nil {
		err = dst.View(func(tx *bolt.Tx) error { return os.Truncate(path, tx.Size()) })
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
