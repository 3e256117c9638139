package service

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The idempotency cache is bounded in bytes (issue 13.6): validations of a
// QA with a large answer, summary and metadata, each under its own
// Idempotency-Key, keep at most IdempotencyMaxBytes of answers — 30 answers
// of 60 KB each against a bound of 256 KB — and the bytes the cache counts
// are those of the bodies it holds. The integration tier's
// TestIdempotencyCacheBoundedInHeap measures the heap at 150 × 180 KB.
func TestIdempotencyCacheBoundedInBytes(t *testing.T) {
	idempotencyBounded(t, 256<<10, 20<<10, 30)
}

// idempotencyBounded validates a QA whose answer, summary and metadata
// hold field bytes each n times, under n Idempotency-Keys, with the cache
// bounded to budget bytes. It checks the bound, the count of bytes
// against the bodies held, and the replay of the newest answer, and
// returns how much the heap grew over the validations.
func idempotencyBounded(t *testing.T, budget int64, field, n int) (grew int64) {
	t.Helper()
	e := newEnv(t, withConfig(func(c *Config) {
		c.RequireReceipts = false
		c.IdempotencyMaxBytes = budget
	}))
	big := strings.Repeat("x", field)
	r := e.must(http.StatusCreated, keyAgentA, "POST", "/v1/qa/candidates", map[string]any{
		"project_id": "a-proj", "question": "how big can metadata be", "answer": big, "summary": big,
		"metadata": map[string]any{"blob": big}})
	var res struct {
		QAID string `json:"qa_id"`
	}
	r.decode(t, &res)

	// Another key than the creator's validates (the creator's own reports
	// are refusals, never kept).
	before := heapInUse()
	for i := range n {
		r = e.must(http.StatusOK, keyAdmin, "POST", "/v1/qa/validate", map[string]any{
			"project_id": "a-proj", "qa_id": res.QAID, "result": "pass"}, "Idempotency-Key", fmt.Sprintf("v-%d", i))
	}
	grew = int64(heapInUse()) - int64(before)
	if all := int64(n * len(r.body)); all <= 4*budget {
		t.Fatalf("%d answers of %d bytes: %d bytes, not past the bound of %d: this test proves nothing", n, len(r.body), all, budget)
	}
	b := e.srv.idem.Bytes()
	if b > budget {
		t.Errorf("the idempotency cache holds %d bytes, over its bound of %d", b, budget)
	}
	var held int64
	e.srv.idem.mu.Lock()
	for _, en := range e.srv.idem.entries {
		held += int64(len(en.body))
	}
	e.srv.idem.mu.Unlock()
	if held != b {
		t.Errorf("the idempotency cache counts %d bytes and holds bodies of %d", b, held)
	}
	t.Logf("heap growth after %d validations of a %d KB QA: %d MB; cache %d bytes", n, 3*field>>10, grew>>20, b)

	// The newest answers are still replayed.
	r = e.must(http.StatusOK, keyAdmin, "POST", "/v1/qa/validate", map[string]any{
		"project_id": "a-proj", "qa_id": res.QAID, "result": "pass"}, "Idempotency-Key", fmt.Sprintf("v-%d", n-1))
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Error("the latest answer was not replayed")
	}
	return grew
}

// A refusal (a report stored in the audit log only, applied:false) is not
// kept for replay: a retry is judged again.
func TestIdempotencyRefusalNotCached(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "refused question", "refused answer")
	for range 2 {
		r := e.must(http.StatusOK, keyAgentA, "POST", "/v1/qa/validate", map[string]any{
			"project_id": "a-proj", "qa_id": id, "result": "pass"}, "Idempotency-Key", "same")
		if r.header.Get("Idempotent-Replayed") == "true" {
			t.Fatal("a refusal (no receipt) was replayed from the cache")
		}
		if !strings.Contains(string(r.body), `"applied":false`) {
			t.Fatalf("validation without a receipt: %s", r.body)
		}
	}
	if b := e.srv.idem.Bytes(); b != 0 {
		t.Errorf("the cache holds %d bytes of refusals", b)
	}
}
