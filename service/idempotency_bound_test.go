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
// Idempotency-Key, keep at most IdempotencyMaxBytes of answers (unbounded,
// 150 × 180 KB = 27 MB stayed).
func TestIdempotencyCacheBoundedInBytes(t *testing.T) {
	const budget = 2 << 20
	e := newEnv(t, withConfig(func(c *Config) {
		c.RequireReceipts = false
		c.IdempotencyMaxBytes = budget
	}))
	big := strings.Repeat("x", 60<<10)
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
	for i := range 150 {
		e.must(http.StatusOK, keyAdmin, "POST", "/v1/qa/validate", map[string]any{
			"project_id": "a-proj", "qa_id": res.QAID, "result": "pass"}, "Idempotency-Key", fmt.Sprintf("v-%d", i))
	}
	grew := int64(heapInUse()) - int64(before)
	if b := e.srv.idem.Bytes(); b > budget {
		t.Errorf("the idempotency cache holds %d bytes, over its bound of %d", b, budget)
	}
	if grew > budget+10<<20 {
		t.Errorf("the heap grew by %d MB over 150 validations (bound %d MB)", grew>>20, budget>>20)
	}
	t.Logf("heap growth after 150 validations of a 180 KB QA: %d MB; cache %d bytes", grew>>20, e.srv.idem.Bytes())

	// The newest answers are still replayed.
	r = e.must(http.StatusOK, keyAdmin, "POST", "/v1/qa/validate", map[string]any{
		"project_id": "a-proj", "qa_id": res.QAID, "result": "pass"}, "Idempotency-Key", "v-149")
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Error("the latest answer was not replayed")
	}
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
