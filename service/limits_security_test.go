package service

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
)

// Metadata, summary and tags count against the byte quota, on candidates
// and on human edits (issue 13.7); metadata has a bound of its own.
func TestQuotaCountsMetadataSummaryTags(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.Quota.MaxAnswerBytes = 100 }))
	for name, extra := range map[string]map[string]any{
		"metadata": {"metadata": map[string]any{"blob": strings.Repeat("m", 900)}},
		"summary":  {"summary": strings.Repeat("s", 200)},
		"tags":     {"tags": []string{strings.Repeat("t", 60), strings.Repeat("u", 60)}},
	} {
		body := map[string]any{"project_id": "a-proj", "question": "q " + name, "answer": "short answer"}
		for k, v := range extra {
			body[k] = v
		}
		if r := e.do(keyAgentA, "POST", "/v1/qa/candidates", body); r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s over the 100-byte quota: status %d, want 413: %s", name, r.status, r.body)
		}
	}
	id := e.addQA(keyAgentA, "a-proj", "patched question", "short answer")
	long := strings.Repeat("p", 300)
	if r := e.do(keyAdmin, "PATCH", "/admin/v1/qa/"+id, map[string]any{"project_id": "a-proj", "summary": long}); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("admin PATCH over the quota: status %d, want 413: %s", r.status, r.body)
	}
	big := newEnv(t)
	r := big.do(keyAgentA, "POST", "/v1/qa/candidates", map[string]any{"project_id": "a-proj", "question": "q", "answer": "a",
		"metadata": map[string]any{"blob": strings.Repeat("x", MaxMetadataBytes)}})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "metadata") {
		t.Errorf("metadata over %d bytes: status %d, want 400 naming metadata: %.200s", MaxMetadataBytes, r.status, r.body)
	}
}

// A search answer is bounded in bytes whatever the records hold.
func TestSearchResponseBounded(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.MaxResponseBytes = 100 << 10 }))
	for i := range 12 {
		e.addQA(keyAgentA, "a-proj", fmt.Sprintf("how to tune the zebra cache %d", i), strings.Repeat("zebra cache tuning words ", 1500))
	}
	r := e.must(http.StatusOK, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "zebra cache", "limit": 12, "min_score": 0})
	var ms []core.Match
	r.decode(t, &ms)
	if len(ms) == 0 {
		t.Fatal("no matches")
	}
	if len(r.body) > 130<<10 {
		t.Errorf("search answered %d KB, over the 100 KB bound", len(r.body)>>10)
	}
}

// max_qas holds under concurrent candidates: on one server, and across
// two servers (replicas) on one Redis, since the store checks it in the
// write that adds the QA. A refusal is 413 quota_exceeded naming max_qas.
func TestMaxQAsHoldsUnderConcurrency(t *testing.T) {
	quota := withConfig(func(c *Config) { c.Quota.MaxQAs = 3 })
	t.Run("one server", func(t *testing.T) {
		e := newEnv(t, quota)
		candidatesInto(t, "a-proj", e)
		if st, err := e.team.Stats(t.Context(), "a-proj"); err != nil || st.Total != 3 {
			t.Errorf("the project holds %d QAs (%v), want 3", st.Total, err)
		}
	})
	t.Run("two replicas on one Redis", func(t *testing.T) {
		url, prefix := redistest.URL(t), redistest.Prefix(t)
		var envs []*env
		for range 2 {
			st, err := redisstore.Open(t.Context(), url, redisstore.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			envs = append(envs, newEnvFor(t, st, quota))
		}
		candidatesInto(t, "a-proj", envs...)
		if st, err := envs[0].store.(core.Statser).Stats(t.Context(), "a-proj"); err != nil || st.Total != 3 {
			t.Errorf("the project holds %d QAs (%v), want 3", st.Total, err)
		}
	})
}

// candidatesInto posts 25 distinct candidates into project at once, spread
// over the servers, and checks that 3 are stored and 22 refused with 413
// quota_exceeded naming max_qas.
func candidatesInto(t *testing.T, project string, envs ...*env) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := envs[i%len(envs)].do(keyAgentA, "POST", "/v1/qa/candidates", map[string]any{"project_id": project,
				"question": fmt.Sprintf("distinct question number %d about walruses", i), "answer": fmt.Sprintf("distinct answer %d", i)})
			if r.status == http.StatusRequestEntityTooLarge && (!strings.Contains(string(r.body), "quota_exceeded") || !strings.Contains(string(r.body), "max_qas")) {
				t.Errorf("refusal does not name the limit: %s", r.body)
			}
			mu.Lock()
			codes[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusCreated] != 3 || codes[http.StatusRequestEntityTooLarge] != 22 {
		t.Errorf("25 concurrent candidates into max_qas = 3 over %d servers: statuses %v, want 3 × 201 and 22 × 413", len(envs), codes)
	}
}

// Unauthenticated requests are rate limited per remote address.
func TestUnauthenticatedRateLimited(t *testing.T) {
	e := newEnv(t)
	var limited int
	for range AuthFailBurst + 10 {
		r := e.do(Key{ID: "nobody"}, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "x"})
		switch r.status {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("status %d", r.status)
		}
	}
	if limited == 0 {
		t.Error("30 requests with an unknown key: none rate limited")
	}
	// A valid key is not held back by the failures of others.
	e.must(http.StatusOK, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "x"})
}

// With keys configured, --insecure-local cannot make keyless requests the
// admin: the combination is refused.
func TestInsecureLocalWithKeysRefused(t *testing.T) {
	cfg := defaultTestConfig()
	cfg.InsecureLocal = true
	if _, err := New(newTeamStore(t), cfg); err == nil || !strings.Contains(err.Error(), "insecure-local") {
		t.Fatalf("New with keys and InsecureLocal: %v, want a refusal", err)
	}
}
