//go:build unix

package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockGate takes the store's gate: an exclusive, blocking flock on the side
// file <path>.lock, held only while opening the database file. bbolt's own
// flock is taken by polling every 50 ms, so on its own a process issuing
// operations back to back starves the others. With the gate, the process
// waiting for bbolt's lock holds the gate, so nobody else can take bbolt's
// lock before it (a turnstile): readers in flight finish, then it goes.
// Closing the returned file releases the gate.
func (s *Store) lockGate(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: open lock file of %s: %w", s.path, err)
	}
	how := syscall.LOCK_EX
	fd := int(f.Fd())
	if err := syscall.Flock(fd, how|syscall.LOCK_NB); err == nil {
		return f, nil
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		_ = f.Close()
		return nil, fmt.Errorf("embedded: lock %s: %w", s.path, err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(fd, how)
			if !errors.Is(err, syscall.EINTR) {
				done <- err
				return
			}
		}
	}()
	timer := time.NewTimer(s.cfg.lockTimeout)
	defer timer.Stop()
	abandon := func() {
		go func() { _ = <-done; _ = f.Close() }()
	}
	select {
	case err := <-done:
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("embedded: lock %s: %w", s.path, err)
		}
		return f, nil
	case <-timer.C:
		abandon()
		return nil, s.lockedError()
	case <-ctx.Done():
		abandon()
		return nil, ctx.Err()
	}
}
