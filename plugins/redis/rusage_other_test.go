//go:build !linux

package redisstore

import "testing"

// reportCPU reports nothing outside Linux.
func reportCPU(*testing.B) func() { return func() {} }
