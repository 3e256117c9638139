package embedded

import (
	"syscall"
	"testing"
	"time"
)

// reportRusage reports the page faults (minor and major) and the CPU time
// (user and system) per operation of the benchmark loop that it began:
// what a fresh memory map costs, in metrics that the load of a shared
// machine disturbs less than wall time.
func reportRusage(b *testing.B) func() {
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() {
		var after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		if b.N <= 0 {
			return
		}
		n := float64(b.N)
		b.ReportMetric(float64(after.Minflt-before.Minflt+after.Majflt-before.Majflt)/n, "faults/op")
		cpu := time.Duration(after.Utime.Nano()-before.Utime.Nano()) + time.Duration(after.Stime.Nano()-before.Stime.Nano())
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	}
}
