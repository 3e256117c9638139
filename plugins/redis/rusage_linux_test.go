package redisstore

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU reports the process's CPU time (user and system) per
// operation of the benchmark loop that it began: on a shared machine a
// steadier measure than wall time, which other jobs' load stretches.
func reportCPU(b *testing.B) func() {
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() {
		var after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		if b.N <= 0 {
			return
		}
		cpu := time.Duration(after.Utime.Nano()-before.Utime.Nano()) + time.Duration(after.Stime.Nano()-before.Stime.Nano())
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
