//go:build !linux

package embedded

import "testing"

// reportRusage reports nothing outside Linux.
func reportRusage(*testing.B) func() { return func() {} }
