//go:build !unix

package httpstore

import "os"

// tryLock is a no-op where flock(2) is missing: the outbox is then safe for
// one memex process at a time only.
func tryLock(*os.File) (bool, error) { return true, nil }
