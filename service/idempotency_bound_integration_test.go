//go:build integration

package service

import "testing"

// TestIdempotencyCacheBoundedInHeap is TestIdempotencyCacheBoundedInBytes
// at 150 validations of a 180 KB QA against a bound of 2 MB, measured in
// the heap: unbounded, the 27 MB of answers stayed; the heap may grow by
// the bound and 10 MB of the server's own.
func TestIdempotencyCacheBoundedInHeap(t *testing.T) {
	const budget = 2 << 20
	if grew := idempotencyBounded(t, budget, 60<<10, 150); grew > budget+10<<20 {
		t.Errorf("the heap grew by %d MB over 150 validations (bound %d MB)", grew>>20, budget>>20)
	}
}
