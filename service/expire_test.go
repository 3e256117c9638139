package service

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestExpireAsOf checks that POST /v1/qa/expire judges expiry as of the
// admin's "now" instead of the server's clock, and that a bad "now" is a
// 400 naming the field.
func TestExpireAsOf(t *testing.T) {
	e := newEnv(t)
	e.addQA(keyAgentA, "a-proj", "an old candidate", "that nobody validated")
	if r := e.must(200, keyAdmin, "POST", "/v1/qa/expire", `{"batch_size":10}`); string(r.body) != `{"expired":0}` {
		t.Errorf("expire by the server's clock: %s", r.body)
	}
	later := time.Now().Add(365 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)
	if r := e.must(200, keyAdmin, "POST", "/v1/qa/expire", fmt.Sprintf(`{"batch_size":10,"now":%q}`, later)); string(r.body) != `{"expired":1}` {
		t.Errorf("expire as of a year later: %s", r.body)
	}
	found := false
	for _, en := range e.team.auditEntries() {
		if en.Action == "expire" && en.After["as_of"] == later {
			found = true
		}
	}
	if !found {
		t.Errorf("no expire audit entry with as_of %s", later)
	}
	for _, bad := range []string{`{"now":"tomorrow"}`, `{"now":"2027-01-02"}`, `{"now":5}`} {
		r := e.do(keyAdmin, "POST", "/v1/qa/expire", bad)
		if r.status != 400 || r.apiErr(t).Message == "" || !strings.Contains(string(r.body), "now") {
			t.Errorf("%s: status %d %s; want 400 naming now", bad, r.status, r.body)
		}
	}
	// Still admin-only: an agent key cannot move the clock.
	e.must(403, keyAgentA, "POST", "/v1/qa/expire", fmt.Sprintf(`{"now":%q}`, later))
}
