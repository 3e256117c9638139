package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

func TestFlow(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "How do I rotate the redis logs?", "Use logrotate with copytruncate on /var/log/redis.")

	t.Run("search returns a top-level array with a receipt", func(t *testing.T) {
		r := e.must(200, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "rotate redis logs"})
		var ms []core.Match
		r.decode(t, &ms)
		if len(ms) != 1 || ms[0].QAID != id {
			t.Fatalf("matches %s, want the one QA", r.body)
		}
		rid := r.header.Get(wire.HeaderReceipt)
		if rid == "" || ms[0].ReceiptID != rid+".1" {
			t.Errorf("receipt header %q, match receipt_id %q: want a search receipt and a per-QA one", rid, ms[0].ReceiptID)
		}
		if !strings.HasPrefix(string(r.body), "[") {
			t.Errorf("body is not a top-level array: %s", r.body)
		}
	})
	t.Run("get", func(t *testing.T) {
		r := e.must(200, keyAgentA, "GET", "/v1/qa/"+id+"?project_id=a-proj", nil)
		var rr wire.RecordResponse
		r.decode(t, &rr)
		if rr.Record.QAID != id || rr.Record.Status != core.StatusCandidate {
			t.Errorf("record %s", r.body)
		}
	})
	t.Run("list", func(t *testing.T) {
		r := e.must(200, keyAgentA, "GET", "/v1/qa?project_id=a-proj&limit=10", nil)
		var page core.ListPage
		r.decode(t, &page)
		if len(page.Items) != 1 || page.Items[0].QAID != id {
			t.Errorf("page %s", r.body)
		}
	})
	t.Run("empty list is an empty array", func(t *testing.T) {
		r := e.must(200, keyAgentA, "GET", "/v1/qa?project_id=a-other", nil)
		if !strings.Contains(string(r.body), `"items":[]`) {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("grade", func(t *testing.T) {
		r := e.must(200, keyAgentA, "POST", "/v1/task/grade", map[string]any{"prompt": "debug the stack trace of this panic"})
		var g core.TaskGrade
		r.decode(t, &g)
		if g.TaskLevel == "" {
			t.Errorf("grade %s", r.body)
		}
	})
	t.Run("health and readiness", func(t *testing.T) {
		e.must(200, Key{}, "GET", "/healthz", nil)
		e.must(200, Key{}, "GET", "/readyz", nil)
	})
	t.Run("delete", func(t *testing.T) {
		e.must(200, keyAgentA, "DELETE", "/v1/qa/"+id+"?project_id=a-proj", nil)
		r := e.must(404, keyAgentA, "GET", "/v1/qa/"+id+"?project_id=a-proj", nil)
		if r.apiErr(t).Code != "not_found" {
			t.Errorf("body %s", r.body)
		}
	})
}

func TestCandidateDedupe(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "How to clear the go build cache?", "Run go clean -cache.")
	r := e.must(201, keyAgentA, "POST", "/v1/qa/candidates", map[string]any{
		"project_id": "a-proj", "question": "How to clear the go build cache?", "answer": "Run go clean -cache."})
	var res core.CandidateResult
	r.decode(t, &res)
	if res.DeduplicatedInto != id {
		t.Errorf("deduplicated_into %q, want %s", res.DeduplicatedInto, id)
	}
}

func TestValidateAsAdminUpdatesTrust(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "How to list open ports?", "Use ss -ltnp to list listening sockets.")
	r := e.must(200, keyAdmin, "POST", "/v1/qa/validate", map[string]any{
		"project_id": "a-proj", "qa_id": id, "result": "pass", "signal_strength": "strong"})
	var rr wire.RecordResponse
	r.decode(t, &rr)
	if rr.Applied == nil || !*rr.Applied || rr.Record.SuccessCount != 1 {
		t.Errorf("validate by admin: %s", r.body)
	}
}

func TestInject(t *testing.T) {
	t.Run("without injector is 501", func(t *testing.T) {
		e := newEnv(t)
		r := e.must(501, keyAgentA, "POST", "/v1/qa/inject", map[string]any{"project_id": "a-proj", "query": "x"})
		if r.apiErr(t).Code != "not_implemented" {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("with injector", func(t *testing.T) {
		var got wire.InjectRequest
		inj := func(_ context.Context, ms []core.Match, req wire.InjectRequest) (wire.InjectResponse, error) {
			got = req
			var items []wire.InjectItem
			for _, m := range ms {
				items = append(items, wire.InjectItem{Match: m, Probation: true})
			}
			return wire.InjectResponse{Items: items, Block: "BLOCK", Shown: []string{ms[0].QAID}}, nil
		}
		e := newEnv(t, withOpts(WithInjector(inj)))
		id := e.addQA(keyAgentA, "a-proj", "How to tail a systemd unit log?", "journalctl -u unit -f follows it.")
		r := e.must(200, keyAgentA, "POST", "/v1/qa/inject", map[string]any{"project_id": "a-proj", "query": "tail systemd log", "max_block_chars": 2000})
		var ir wire.InjectResponse
		r.decode(t, &ir)
		if ir.Block != "BLOCK" || len(ir.Items) != 1 || ir.Items[0].QAID != id || !ir.Items[0].Probation {
			t.Errorf("inject %s", r.body)
		}
		if ir.ReceiptID == "" || ir.Items[0].ReceiptID != ir.ReceiptID+".1" || r.header.Get(wire.HeaderReceipt) != ir.ReceiptID {
			t.Errorf("receipt missing: %s", r.body)
		}
		if got.MaxBlockChars != 2000 {
			t.Errorf("injector got %+v", got)
		}
	})
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter bool
	}{
		{"field error", core.Invalid("limit", "out of range"), 400, "invalid_request", false},
		{"invalid", fmt.Errorf("x: %w", core.ErrInvalid), 400, "invalid_request", false},
		{"unauthorized", core.ErrUnauthorized, 401, "unauthorized", false},
		{"forbidden", core.ErrForbidden, 403, "forbidden", false},
		{"not found", fmt.Errorf("qa q1: %w", core.ErrNotFound), 404, "not_found", false},
		{"conflict", core.ErrConflict, 409, "conflict", false},
		{"too large", core.ErrTooLarge, 413, "too_large", false},
		{"body too large", &http.MaxBytesError{Limit: 10}, 413, "too_large", false},
		{"secret", core.ErrSecret, 422, "secret_detected", false},
		{"rate limited", &rateLimitedError{retryAfter: 1500 * time.Millisecond}, 429, "rate_limited", true},
		{"unavailable", fmt.Errorf("redis: dial: %w", core.ErrUnavailable), 503, "unavailable", true},
		{"deadline", context.DeadlineExceeded, 503, "unavailable", true},
		{"not implemented", &notImplementedError{what: "x"}, 501, "not_implemented", false},
		{"echo 405", echo.ErrMethodNotAllowed, 405, "method_not_allowed", false},
		{"echo 404", echo.ErrNotFound, 404, "not_found", false},
		{"other", errors.New("disk on fire: /secret/path"), 500, "internal", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvFor(t, errStore{err: tc.err})
			r := e.do(keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "q"})
			if r.status != tc.status {
				t.Fatalf("status %d, want %d (%s)", r.status, tc.status, r.body)
			}
			ae := r.apiErr(t)
			if ae.Code != tc.code {
				t.Errorf("code %q, want %q", ae.Code, tc.code)
			}
			if got := r.header.Get("Retry-After") != ""; got != tc.retryAfter {
				t.Errorf("Retry-After present %v, want %v", got, tc.retryAfter)
			}
			if tc.status == 500 && strings.Contains(ae.Message, "disk on fire") {
				t.Errorf("internal error text leaked: %q", ae.Message)
			}
		})
	}
	t.Run("429 Retry-After rounds up", func(t *testing.T) {
		e := newEnvFor(t, errStore{err: &rateLimitedError{retryAfter: 1500 * time.Millisecond}})
		r := e.do(keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "q"})
		if r.header.Get("Retry-After") != "2" {
			t.Errorf("Retry-After %q, want 2", r.header.Get("Retry-After"))
		}
	})
	t.Run("unknown route is 404 in the one shape", func(t *testing.T) {
		e := newEnv(t)
		r := e.must(404, keyAgentA, "GET", "/v1/nope", nil)
		if r.apiErr(t).Code != "not_found" {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("wrong method is 405", func(t *testing.T) {
		e := newEnv(t)
		r := e.must(405, keyAgentA, "PUT", "/healthz", nil)
		if r.apiErr(t).Code != "method_not_allowed" {
			t.Errorf("body %s", r.body)
		}
	})
}

func TestBadInputNamesTheField(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, method, path string
		body               string
		field              string
	}{
		{"search limit out of range", "POST", "/v1/qa/search", `{"project_id":"a-proj","query":"x","limit":51}`, "limit"},
		{"search limit wrong type", "POST", "/v1/qa/search", `{"project_id":"a-proj","limit":"six"}`, "limit"},
		{"search min_score", "POST", "/v1/qa/search", `{"project_id":"a-proj","min_score":2}`, "min_score"},
		{"search project missing", "POST", "/v1/qa/search", `{"query":"x"}`, "project_id"},
		{"search malformed", "POST", "/v1/qa/search", `{"project_id":`, "body"},
		{"search array body", "POST", "/v1/qa/search", `[1,2]`, "body"},
		{"search empty body", "POST", "/v1/qa/search", ``, "body"},
		{"candidate answer missing", "POST", "/v1/qa/candidates", `{"project_id":"a-proj","question":"q"}`, "answer"},
		{"candidate confidence", "POST", "/v1/qa/candidates", `{"project_id":"a-proj","question":"q","answer":"a","confidence":7}`, "confidence"},
		{"hit qa_id", "POST", "/v1/qa/hit", `{"project_id":"a-proj","references":[{"qa_id":"bad id"}]}`, "references[0].qa_id"},
		{"validate result", "POST", "/v1/qa/validate", `{"project_id":"a-proj","qa_id":"q1"}`, "result"},
		{"validate strength", "POST", "/v1/qa/validate", `{"project_id":"a-proj","qa_id":"q1","result":"pass","signal_strength":"huge"}`, "signal_strength"},
		{"list min_level", "GET", "/v1/qa?project_id=a-proj&min_level=x", "", "min_level"},
		{"list status", "GET", "/v1/qa?project_id=a-proj&status=zombie", "", "status"},
		{"get qa_id", "GET", "/v1/qa/bad%20id?project_id=a-proj", "", "qa_id"},
		{"get project", "GET", "/v1/qa/q1", "", "project_id"},
		{"inject block", "POST", "/v1/qa/inject", `{"project_id":"a-proj","max_block_chars":-1}`, "max_block_chars"},
		{"idempotency key", "POST", "/v1/qa/hit", `{"project_id":"a-proj","references":[]}`, "Idempotency-Key"},
		{"audit since", "GET", "/admin/v1/audit?project_id=a-proj&since=yesterday", "", "since"},
		{"patch status", "PATCH", "/admin/v1/qa/q1", `{"project_id":"a-proj","status":"zombie"}`, "status"},
		{"expire batch", "POST", "/v1/qa/expire", `{"batch_size":5000}`, "batch_size"},
		{"import empty answer", "POST", "/admin/v1/import", `{"records":[{"qa_id":"x1","project_id":"a-proj","question":"q?","answer":"a"},{"qa_id":"x2","project_id":"a-proj","question":"q?","answer":" "}]}`, "records[1].answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.field == "Idempotency-Key" {
				hdr = []string{"Idempotency-Key", "has space"}
			}
			r := e.must(400, keyAdmin, tc.method, tc.path, tc.body, hdr...)
			ae := r.apiErr(t)
			if ae.Code != "invalid_request" || ae.Field != tc.field || !strings.Contains(ae.Message, tc.field) {
				t.Errorf("error %+v, want invalid_request naming %q", ae, tc.field)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	search := map[string]any{"project_id": "a-proj", "query": "x"}
	t.Run("missing key", func(t *testing.T) {
		r := e.must(401, Key{}, "POST", "/v1/qa/search", search)
		if r.apiErr(t).Code != "unauthorized" || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("body %s headers %v", r.body, r.header)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		e.must(401, Key{ID: "nobody"}, "POST", "/v1/qa/search", search)
	})
	t.Run("malformed authorization header", func(t *testing.T) {
		e.must(401, Key{}, "POST", "/v1/qa/search", search, "Authorization", "Basic "+secretOf(keyAgentA))
	})
	t.Run("X-Api-Key", func(t *testing.T) {
		e.must(200, Key{}, "POST", "/v1/qa/search", search, "X-Api-Key", secretOf(keyAgentA))
	})
	t.Run("other project", func(t *testing.T) {
		r := e.must(403, keyAgentB, "POST", "/v1/qa/search", search)
		if r.apiErr(t).Code != "forbidden" {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("agent on admin route", func(t *testing.T) {
		e.must(403, keyAgentA, "GET", "/admin/v1/projects", nil)
		e.must(403, keyAgentA, "GET", "/admin/v1/projects/a-proj/stats", nil)
		e.must(403, keyAgentA, "POST", "/v1/qa/expire", "{}")
		e.must(403, keyAgentA, "GET", "/metrics", nil)
	})
	t.Run("admin may", func(t *testing.T) {
		e.must(200, keyAdmin, "GET", "/admin/v1/projects", nil)
		e.must(200, keyAdmin, "GET", "/metrics", nil)
	})
	t.Run("admin limited by patterns", func(t *testing.T) {
		e.must(403, keyAdminA, "GET", "/admin/v1/projects/b-proj/stats", nil)
		r := e.must(200, keyAdminA, "GET", "/admin/v1/projects", nil)
		var pr wire.ProjectsResponse
		r.decode(t, &pr)
		for _, p := range pr.Projects {
			if p.ProjectID != "a-proj" {
				t.Errorf("admin-a sees project %s", p.ProjectID)
			}
		}
	})
	t.Run("principal is the key", func(t *testing.T) {
		var got core.Principal
		probe := &principalProbe{errStore: errStore{}, got: &got}
		pe := newEnvFor(t, probe)
		pe.must(200, keyAgentA, "POST", "/v1/qa/search", search)
		if got.ID != keyAgentA.ID || got.Admin {
			t.Errorf("principal %+v", got)
		}
	})
}

type principalProbe struct {
	errStore
	got *core.Principal
}

func (p *principalProbe) Search(ctx context.Context, _ core.SearchRequest) ([]core.Match, error) {
	*p.got, _ = core.PrincipalFrom(ctx)
	return nil, nil
}

func TestInsecureLocal(t *testing.T) {
	cfg := DefaultConfig()
	if _, err := New(newEmbedded(t), cfg); err == nil {
		t.Fatal("New without keys succeeded; want a refusal")
	}
	e := newEnvFor(t, newEmbedded(t), withConfig(func(c *Config) { c.Keys = nil; c.InsecureLocal = true }))
	e.must(200, Key{}, "GET", "/admin/v1/audit?project_id=anything", nil)
	e.addQA(Key{}, "anything", "question one here", "answer one here")
}

func TestIsolationMatrix(t *testing.T) {
	e := newEnv(t, withOpts(WithInjector(func(context.Context, []core.Match, wire.InjectRequest) (wire.InjectResponse, error) {
		return wire.InjectResponse{Block: "x"}, nil
	})))
	const secretWord = "zanzibarquux"
	bID := e.addQA(keyAgentB, "b-proj", "How does "+secretWord+" deploy work?", "The "+secretWord+" deploy uses blue green.")
	// B's scoped entries in the namespaced store: its user, a conversation
	// of its user, its project.
	for _, ns := range [][]string{{"user", "agent-b"}, {"conversation", "agent-b", "s1"}, {"project", "b-proj"}} {
		e.must(200, keyAgentB, "PUT", "/v1/store/items", map[string]any{"namespace": ns, "key": "k", "value": map[string]any{"text": secretWord + " preference"}})
	}
	// Requests by agent-a (and admin-a) aimed at project B's data: by
	// naming project B (403) or by naming B's QA from project A (404).
	reqs := []struct {
		name, method, path string
		body               any
		key                Key
	}{
		{"search B", "POST", "/v1/qa/search", map[string]any{"project_id": "b-proj", "query": secretWord}, keyAgentA},
		{"search A for B's words", "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": secretWord}, keyAgentA},
		{"inject B", "POST", "/v1/qa/inject", map[string]any{"project_id": "b-proj", "query": secretWord}, keyAgentA},
		{"candidate into B", "POST", "/v1/qa/candidates", map[string]any{"project_id": "b-proj", "question": "q?", "answer": "a!"}, keyAgentA},
		{"candidate shared into B", "POST", "/v1/qa/candidates", map[string]any{"project_id": "a-proj", "question": "q?", "answer": "a!", "shared_projects": []string{"b-proj"}}, keyAgentA},
		{"hit B", "POST", "/v1/qa/hit", map[string]any{"project_id": "b-proj", "references": []map[string]any{{"qa_id": bID}}}, keyAgentA},
		{"validate B", "POST", "/v1/qa/validate", map[string]any{"project_id": "b-proj", "qa_id": bID, "result": "pass"}, keyAgentA},
		{"validate B's QA from A", "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": bID, "result": "pass"}, keyAgentA},
		{"get B", "GET", "/v1/qa/" + bID + "?project_id=b-proj", nil, keyAgentA},
		{"get B's QA from A", "GET", "/v1/qa/" + bID + "?project_id=a-proj", nil, keyAgentA},
		{"list B", "GET", "/v1/qa?project_id=b-proj", nil, keyAgentA},
		{"list A for B's words", "GET", "/v1/qa?project_id=a-proj&q=" + secretWord, nil, keyAgentA},
		{"delete B", "DELETE", "/v1/qa/" + bID + "?project_id=b-proj", nil, keyAgentA},
		{"delete B's QA from A", "DELETE", "/v1/qa/" + bID + "?project_id=a-proj", nil, keyAgentA},
		{"expire", "POST", "/v1/qa/expire", "{}", keyAgentA},
		{"admin projects", "GET", "/admin/v1/projects", nil, keyAgentA},
		{"admin stats B", "GET", "/admin/v1/projects/b-proj/stats", nil, keyAdminA},
		{"admin patch B", "PATCH", "/admin/v1/qa/" + bID, map[string]any{"project_id": "b-proj", "status": "deprecated"}, keyAdminA},
		{"admin patch B's QA from A", "PATCH", "/admin/v1/qa/" + bID, map[string]any{"project_id": "a-proj", "status": "deprecated"}, keyAdminA},
		{"admin audit B", "GET", "/admin/v1/audit?project_id=b-proj", nil, keyAdminA},
		{"admin projects as admin-a", "GET", "/admin/v1/projects", nil, keyAdminA},
		{"export B", "GET", "/admin/v1/export?project_id=b-proj", nil, keyAgentA},
		{"export B as admin-a", "GET", "/admin/v1/export?project_id=b-proj", nil, keyAdminA},
		{"export A as an agent", "GET", "/admin/v1/export?project_id=a-proj", nil, keyAgentA},
		{"import into B", "POST", "/admin/v1/import", map[string]any{"records": []map[string]any{{"qa_id": bID, "project_id": "b-proj", "question": "q?", "answer": "a!"}}}, keyAgentA},
		{"import into B as admin-a", "POST", "/admin/v1/import", map[string]any{"records": []map[string]any{{"qa_id": bID, "project_id": "b-proj", "question": "q?", "answer": "a!"}}}, keyAdminA},
		{"import into A as an agent", "POST", "/admin/v1/import", map[string]any{"records": []map[string]any{{"qa_id": "x1", "project_id": "a-proj", "question": "q?", "answer": "a!"}}}, keyAgentA},
		{"store get B's user entry", "GET", "/v1/store/items?namespace=user/agent-b&key=k", nil, keyAgentA},
		{"store get B's conversation entry", "GET", "/v1/store/items?namespace=conversation/agent-b/s1&key=k", nil, keyAgentA},
		{"store get B's project entry", "GET", "/v1/store/items?namespace=project/b-proj&key=k", nil, keyAgentA},
		{"store get B's user entry as admin-a", "GET", "/v1/store/items?namespace=user/agent-b&key=k", nil, keyAdminA},
		{"store list every user", "GET", "/v1/store/list?prefix=user", nil, keyAgentA},
		{"store list the root", "GET", "/v1/store/list", nil, keyAgentA},
		{"store list B's conversations", "GET", "/v1/store/list?prefix=conversation/agent-b", nil, keyAgentA},
		{"store list every project as admin-a", "GET", "/v1/store/list?prefix=project", nil, keyAdminA},
		{"store search B's project", "POST", "/v1/store/search", map[string]any{"prefix": []string{"project", "b-proj"}, "query": secretWord}, keyAgentA},
		{"store search every conversation", "POST", "/v1/store/search", map[string]any{"prefix": []string{"conversation"}, "query": secretWord}, keyAgentA},
		{"store search A's user for B's words", "POST", "/v1/store/search", map[string]any{"prefix": []string{"user", "agent-a"}, "query": secretWord}, keyAgentA},
		{"store put into B's user", "PUT", "/v1/store/items", map[string]any{"namespace": []string{"user", "agent-b"}, "key": "k", "value": map[string]any{"text": "x"}}, keyAgentA},
		{"store put into global as an agent", "PUT", "/v1/store/items", map[string]any{"namespace": []string{"global"}, "key": "k", "value": map[string]any{"text": "x"}}, keyAgentA},
		{"store delete B's project entry", "DELETE", "/v1/store/items?namespace=project/b-proj&key=k", nil, keyAgentA},
		{"store clear B's conversation", "POST", "/v1/store/clear", map[string]any{"prefix": []string{"conversation", "agent-b"}}, keyAgentA},
		{"store clear every user", "POST", "/v1/store/clear", map[string]any{"prefix": []string{"user"}}, keyAdminA},
	}
	for _, rq := range reqs {
		t.Run(rq.name, func(t *testing.T) {
			r := e.do(rq.key, rq.method, rq.path, rq.body)
			// The error may repeat the ids the request named; it must not
			// hold B's content or any record.
			if strings.Contains(string(r.body), secretWord) || strings.Contains(string(r.body), `"question"`) || strings.Contains(string(r.body), `"answer"`) {
				t.Fatalf("status %d leaked project B's data: %s", r.status, r.body)
			}
			switch r.status {
			case 403, 404:
				r.apiErr(t)
			case 200:
				// Allowed only where the answer is A's own (empty) view.
				if !strings.Contains(rq.name, "for B's words") && rq.name != "admin projects as admin-a" {
					t.Fatalf("status 200, want 403 or 404: %s", r.body)
				}
			default:
				t.Fatalf("status %d, want 403 or 404: %s", r.status, r.body)
			}
		})
	}
	// Votes and hits on QAs a key reads but does not own (a global QA, one
	// shared with its project) count only when its patterns cover the QA's
	// own project (SPEC §5.4); a refused one is audited under the owner, so
	// the owner sees who tried to change its QA. The last rows are the
	// controls: the same report by a key that covers the owner counts.
	glob := e.addQA(keyAdmin, "global", "How to tame the global caracal?", "caracal tame --gently")
	sharedQA := func(owner, with, question, answer string) string {
		var res core.CandidateResult
		e.must(201, keyAdmin, "POST", "/v1/qa/candidates", map[string]any{"project_id": owner, "question": question,
			"answer": answer, "shared_projects": []string{with}}).decode(t, &res)
		return res.QAID
	}
	sharedByB := sharedQA("b-proj", "a-proj", "How to feed the shared caracal?", "caracal feed --twice")
	sharedByA := sharedQA("a-proj", "b-proj", "How to groom the shared caracal?", "caracal groom --softly")
	lanes := []struct {
		name, action   string
		key            Key
		project, query string
		qa, owner      string
		applied        bool
	}{
		{"vote on a global QA, key without global", "validate", keyAgentB, "b-proj", "tame caracal", glob, "global", false},
		{"vote on B's QA shared with A", "validate", keyAgentA, "a-proj", "feed caracal", sharedByB, "b-proj", false},
		{"vote on A's QA shared with B, as B", "validate", keyAgentB, "b-proj", "groom caracal", sharedByA, "a-proj", false},
		{"hit on a global QA, key without global", "hit", keyAgentB, "b-proj", "tame caracal", glob, "global", false},
		{"hit on B's QA shared with A", "hit", keyAgentA, "a-proj", "feed caracal", sharedByB, "b-proj", false},
		{"hit on A's QA shared with B, as B", "hit", keyAgentB, "b-proj", "groom caracal", sharedByA, "a-proj", false},
		{"vote on a global QA, key with global", "validate", keyAgentA, "a-proj", "tame caracal", glob, "global", true},
		{"hit on a global QA, key with global", "hit", keyAgentA, "a-proj", "tame caracal", glob, "global", true},
	}
	for _, tc := range lanes {
		t.Run(tc.name, func(t *testing.T) {
			before := e.record(tc.owner, tc.qa)
			rid := receiptOf(t, e.searchAs(tc.key, tc.project, tc.query), tc.qa)
			var applied bool
			var reason string
			if tc.action == "hit" {
				var hr wire.HitResponse
				e.must(200, tc.key, "POST", "/v1/qa/hit", map[string]any{"project_id": tc.project, "receipt_id": rid,
					"references": []map[string]any{{"qa_id": tc.qa, "shown": true, "used": true}}}).decode(t, &hr)
				applied, reason = hr.Updated == 1 && hr.Ignored == 0, hr.Reason
			} else {
				rr := e.validateAs(tc.key, tc.project, tc.qa, "fail", rid)
				applied, reason = *rr.Applied, rr.Reason
			}
			after := e.record(tc.owner, tc.qa)
			changed := after.FailureCount != before.FailureCount || after.UseCount != before.UseCount || after.UsageCount != before.UsageCount
			if applied != tc.applied || changed != tc.applied {
				t.Errorf("applied %v (reason %q), changed %v; want applied %v", applied, reason, changed, tc.applied)
			}
			if !tc.applied && reason != wire.ReasonOtherOwner {
				t.Errorf("reason %q, want %q", reason, wire.ReasonOtherOwner)
			}
			// A counted hit is filed where the QA was used.
			filed := tc.owner
			if tc.applied && tc.action == "hit" {
				filed = tc.project
			}
			ents := e.team.auditEntries()
			last := ents[len(ents)-1]
			if last.Action != tc.action || last.QAID != tc.qa || last.ProjectID != filed || last.KeyID != tc.key.ID {
				t.Errorf("audit entry %+v, want one filed under %s", last, filed)
			}
		})
	}
	// Nothing of B changed.
	rec := e.record("b-proj", bID)
	if rec.Status != core.StatusCandidate || rec.UsageCount != 0 || rec.SuccessCount != 0 {
		t.Errorf("project B's QA changed: %+v", rec)
	}
	for _, path := range []string{"/v1/store/items?namespace=user/agent-b&key=k", "/v1/store/items?namespace=conversation/agent-b/s1&key=k", "/v1/store/items?namespace=project/b-proj&key=k"} {
		r := e.must(200, keyAgentB, "GET", path, nil)
		if !strings.Contains(string(r.body), secretWord+" preference") {
			t.Errorf("B's entry %s changed: %s", path, r.body)
		}
	}
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.BodyLimit = 1024 }))
	big := fmt.Sprintf(`{"project_id":"a-proj","question":"q","answer":%q}`, strings.Repeat("x", 4096))
	r := e.must(413, keyAgentA, "POST", "/v1/qa/candidates", big)
	if r.apiErr(t).Code != "too_large" {
		t.Errorf("body %s", r.body)
	}
	t.Run("chunked body without a length", func(t *testing.T) {
		req, _ := http.NewRequest("POST", e.ts.URL+"/v1/qa/candidates", &slowReader{s: big})
		req.Header.Set("Authorization", "Bearer "+secretOf(keyAgentA))
		res, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 413 {
			t.Errorf("status %d, want 413", res.StatusCode)
		}
	})
}

// slowReader hides its length so the request is sent chunked.
type slowReader struct {
	s string
	i int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.i >= len(r.s) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 100)], r.s[r.i:])
	r.i += n
	return n, nil
}

func TestQuotas(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) {
		c.Quota = Quota{MaxAnswerBytes: 100}
		c.ProjectQuotas = map[string]Quota{"a-small*": {MaxQAs: 1}}
	}))
	r := e.must(413, keyAgentA, "POST", "/v1/qa/candidates", map[string]any{"project_id": "a-proj", "question": "q?", "answer": strings.Repeat("y", 101)})
	if r.apiErr(t).Code != "too_large" {
		t.Errorf("body %s", r.body)
	}
	e.addQA(keyAgentA, "a-small1", "first question", "first answer")
	e.must(413, keyAgentA, "POST", "/v1/qa/candidates", map[string]any{"project_id": "a-small1", "question": "second question", "answer": "second answer"})
}

func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEnv(t, withConfig(func(c *Config) { c.RateLimit = 1; c.RateBurst = 2 }), withOpts(WithClock(clock)))
	body := map[string]any{"project_id": "a-proj", "query": "x"}
	e.must(200, keyAgentA, "POST", "/v1/qa/search", body)
	e.must(200, keyAgentA, "POST", "/v1/qa/search", body)
	r := e.must(429, keyAgentA, "POST", "/v1/qa/search", body)
	if r.apiErr(t).Code != "rate_limited" || r.header.Get("Retry-After") != "1" {
		t.Errorf("429 body %s Retry-After %q", r.body, r.header.Get("Retry-After"))
	}
	// Per key: agent-b still has its own bucket.
	e.must(200, keyAgentB, "POST", "/v1/qa/search", map[string]any{"project_id": "b-proj", "query": "x"})
	now = now.Add(time.Second)
	e.must(200, keyAgentA, "POST", "/v1/qa/search", body)
}

func TestIdempotency(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "How to find big files?", "du -ah . | sort -h | tail")
	hit := map[string]any{"project_id": "a-proj", "references": []map[string]any{{"qa_id": id, "used": true}}}
	// An admin's report needs no receipt.
	r1 := e.must(200, keyAdmin, "POST", "/v1/qa/hit", hit, "Idempotency-Key", "run-1-hit")
	r2 := e.must(200, keyAdmin, "POST", "/v1/qa/hit", hit, "Idempotency-Key", "run-1-hit")
	if string(r1.body) != string(r2.body) || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay differs: %s vs %s", r1.body, r2.body)
	}
	if rec := e.record("a-proj", id); rec.UsageCount != 1 || rec.UseCount != 1 {
		t.Errorf("counters usage %d use %d, want 1 and 1", rec.UsageCount, rec.UseCount)
	}
	t.Run("candidate replays the same id", func(t *testing.T) {
		c := map[string]any{"project_id": "a-proj", "question": "idempotent question", "answer": "idempotent answer"}
		a := e.must(201, keyAgentA, "POST", "/v1/qa/candidates", c, "Idempotency-Key", "cand-1")
		b := e.must(201, keyAgentA, "POST", "/v1/qa/candidates", c, "Idempotency-Key", "cand-1")
		if string(a.body) != string(b.body) {
			t.Errorf("replay differs: %s vs %s", a.body, b.body)
		}
	})
	t.Run("same key with another body is 409", func(t *testing.T) {
		other := map[string]any{"project_id": "a-proj", "references": []map[string]any{{"qa_id": id}}}
		r := e.must(409, keyAdmin, "POST", "/v1/qa/hit", other, "Idempotency-Key", "run-1-hit")
		if r.apiErr(t).Code != "conflict" {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("scoped by key", func(t *testing.T) {
		// The same header from another key is another request.
		e.must(200, keyAdminA, "POST", "/v1/qa/hit", hit, "Idempotency-Key", "run-1-hit")
		if rec := e.record("a-proj", id); rec.UsageCount != 2 {
			t.Errorf("usage %d, want 2", rec.UsageCount)
		}
	})
	t.Run("failures are not replayed", func(t *testing.T) {
		bad := map[string]any{"project_id": "a-proj", "qa_id": "nope", "result": "pass"}
		e.must(404, keyAdmin, "POST", "/v1/qa/validate", bad, "Idempotency-Key", "v-1")
		e.addQA(keyAgentA, "a-proj", "late question", "late answer")
		e.must(404, keyAdmin, "POST", "/v1/qa/validate", bad, "Idempotency-Key", "v-1")
	})
}

func TestRequestID(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, in string
		keep     bool
	}{
		{"none", "", false},
		{"sane", "req-123.abc", true},
		{"insane", "bad id\twith tabs", false},
		{"too long", strings.Repeat("a", 200), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.in != "" {
				hdr = []string{"X-Request-Id", tc.in}
			}
			for _, path := range []string{"/healthz", "/v1/qa/search"} { // success and error
				r := e.do(Key{}, "POST", path, nil, hdr...)
				got := r.header.Get("X-Request-Id")
				if got == "" || (tc.keep && got != tc.in) || (!tc.keep && got == tc.in) {
					t.Errorf("%s: X-Request-Id %q (sent %q)", path, got, tc.in)
				}
			}
		})
	}
}

func TestReceipts(t *testing.T) {
	voter := Key{ID: "voter", Role: RoleAgent, Projects: []string{"a-*"}}
	e := newEnv(t)
	e = e.withKeys(t, voter) // agent-a creates; voter votes
	id := e.addQA(keyAgentA, "a-proj", "How to undo the last git commit?", "git reset --soft HEAD~1 keeps the changes.")
	other := e.addQA(keyAgentA, "a-proj", "How to rename a git branch?", "git branch -m old new renames it.")
	// search returns the search receipt and the per-QA receipt of id.
	search := func(k Key) (string, string) {
		r := e.must(200, k, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "undo commit"})
		var ms []core.Match
		r.decode(t, &ms)
		if len(ms) != 1 || ms[0].QAID != id {
			t.Fatalf("search: %s", r.body)
		}
		return r.header.Get(wire.HeaderReceipt), ms[0].ReceiptID
	}
	validate := func(k Key, qa, rid string) wire.RecordResponse {
		r := e.must(200, k, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": qa, "result": "pass", "signal_strength": "strong", "receipt_id": rid})
		var rr wire.RecordResponse
		r.decode(t, &rr)
		return rr
	}
	tests := []struct {
		name    string
		key     Key
		qa      string
		rid     func() string
		applied bool
		reason  string
	}{
		{"no receipt", voter, id, func() string { return "" }, false, wire.ReasonReceiptMissing},
		{"unknown receipt", voter, id, func() string { return "rcpt_nope" }, false, wire.ReasonReceiptUnknown},
		{"someone else's receipt", keyAgentA, id, func() string { _, m := search(voter); return m }, false, wire.ReasonReceiptOtherKey},
		{"QA the receipt did not serve", voter, other, func() string { _, m := search(voter); return m }, false, wire.ReasonNotServed},
		{"per-QA receipt", voter, id, func() string { _, m := search(voter); return m }, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rid := tc.rid()
			before := e.record("a-proj", tc.qa)
			rr := validate(tc.key, tc.qa, rid)
			after := e.record("a-proj", tc.qa)
			if rr.Applied == nil || *rr.Applied != tc.applied || rr.Reason != tc.reason {
				t.Fatalf("applied %v reason %q, want %v %q", rr.Applied, rr.Reason, tc.applied, tc.reason)
			}
			changed := after.SuccessCount != before.SuccessCount
			if changed != tc.applied {
				t.Errorf("success_count %d → %d, applied %v", before.SuccessCount, after.SuccessCount, tc.applied)
			}
			entries := e.team.auditEntries()
			last := entries[len(entries)-1]
			if last.Action != "validate" || last.QAID != tc.qa || last.KeyID != tc.key.ID || (last.Weight == 0) == tc.applied || last.ReceiptID != rid {
				t.Errorf("audit entry %+v", last)
			}
		})
	}
	t.Run("a receipt is accepted once", func(t *testing.T) {
		_, m := search(voter)
		if rr := validate(voter, id, m); !*rr.Applied {
			t.Fatalf("first use not applied: %+v", rr)
		}
		before := e.record("a-proj", id)
		if rr := validate(voter, id, m); *rr.Applied || rr.Reason != wire.ReasonReceiptUsed {
			t.Errorf("second use: applied %v reason %q", *rr.Applied, rr.Reason)
		}
		if after := e.record("a-proj", id); after.SuccessCount != before.SuccessCount {
			t.Errorf("replayed receipt counted again: %d → %d", before.SuccessCount, after.SuccessCount)
		}
	})
	t.Run("one search backs a hit report and a validation", func(t *testing.T) {
		h, m := search(voter)
		r := e.must(200, voter, "POST", "/v1/qa/hit", map[string]any{"project_id": "a-proj", "receipt_id": h,
			"references": []map[string]any{{"qa_id": id, "used": true}, {"qa_id": other, "used": true}}})
		var hr wire.HitResponse
		r.decode(t, &hr)
		if hr.Updated != 1 || hr.Ignored != 1 || hr.Reason != wire.ReasonNotServed {
			t.Errorf("hit %s", r.body)
		}
		if e.record("a-proj", other).UseCount != 0 {
			t.Error("hit on an unserved QA applied")
		}
		if rr := validate(voter, id, m); !*rr.Applied {
			t.Errorf("validation after the hit report not applied: %+v", rr)
		}
	})
	t.Run("a hit report may quote a per-QA receipt", func(t *testing.T) {
		_, m := search(voter)
		before := e.record("a-proj", id).UseCount
		r := e.must(200, voter, "POST", "/v1/qa/hit", map[string]any{"project_id": "a-proj", "receipt_id": m,
			"references": []map[string]any{{"qa_id": id, "used": true}}})
		var hr wire.HitResponse
		r.decode(t, &hr)
		if hr.Updated != 1 || e.record("a-proj", id).UseCount != before+1 {
			t.Errorf("hit quoting %s: %s", m, r.body)
		}
		if rr := validate(voter, id, m); !*rr.Applied {
			t.Errorf("the per-QA receipt was spent by the hit report: %+v", rr)
		}
	})
	t.Run("expired receipt", func(t *testing.T) {
		now := time.Now()
		clock := func() time.Time { return now }
		ce := newEnvFor(t, e.store, withOpts(WithClock(clock)), withConfig(func(c *Config) { c.Keys = append(c.Keys, withHash(voter)...) }))
		r := ce.must(200, voter, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "undo commit"})
		var ms []core.Match
		r.decode(t, &ms)
		now = now.Add(DefaultReceiptTTL + time.Minute)
		var rr wire.RecordResponse
		ce.must(200, voter, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id, "result": "pass", "receipt_id": ms[0].ReceiptID}).decode(t, &rr)
		if *rr.Applied || rr.Reason != wire.ReasonReceiptExpired {
			t.Errorf("expired receipt: applied %v reason %q", *rr.Applied, rr.Reason)
		}
	})
	t.Run("off when not required", func(t *testing.T) {
		e2 := newEnv(t, withConfig(func(c *Config) { c.RequireReceipts = false }))
		q := e2.addQA(keyAdminA, "a-proj", "question of e2", "answer of e2") // (another key votes: the creator's own reports do not count)
		var rr wire.RecordResponse
		e2.must(200, keyAgentA, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": q, "result": "fail"}).decode(t, &rr)
		if rr.Applied == nil || !*rr.Applied {
			t.Errorf("validate without receipt not applied: %+v", rr)
		}
	})
	t.Run("off without store support", func(t *testing.T) {
		pe := newEnvFor(t, newEmbedded(t))
		q := pe.addQA(keyAdminA, "a-proj", "question plain", "answer plain") // (another key votes: the creator's own reports do not count)
		r := pe.must(200, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "question plain"})
		if r.header.Get(wire.HeaderReceipt) != "" {
			t.Error("receipt issued by a store without receipts")
		}
		var rr wire.RecordResponse
		pe.must(200, keyAgentA, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": q, "result": "pass"}).decode(t, &rr)
		if !*rr.Applied {
			t.Errorf("not applied: %+v", rr)
		}
	})
}

// withKeys returns a new env over the same store with extra keys.
func (e *env) withKeys(tb testing.TB, keys ...Key) *env {
	tb.Helper()
	ne := newEnvFor(tb, e.store, withConfig(func(c *Config) { c.Keys = append(c.Keys, withHash(keys...)...) }))
	ne.team = e.team
	return ne
}

func TestAdmin(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "How to check disk usage?", "df -h shows it per filesystem.")
	t.Run("patch is audited", func(t *testing.T) {
		r := e.must(200, keyAdmin, "PATCH", "/admin/v1/qa/"+id, map[string]any{"project_id": "a-proj", "status": "verified", "tags": []string{"disk"}})
		var rr wire.RecordResponse
		r.decode(t, &rr)
		if rr.Record.Status != core.StatusVerified {
			t.Errorf("patched %s", r.body)
		}
		r = e.must(200, keyAdmin, "GET", "/admin/v1/audit?project_id=a-proj", nil)
		var ar wire.AuditResponse
		r.decode(t, &ar)
		var found bool
		for _, en := range ar.Entries {
			if en.Action == "patch" && en.QAID == id && en.KeyID == "admin" && en.Before["status"] == "candidate" && en.After["status"] == "verified" {
				found = true
			}
		}
		if !found {
			t.Errorf("no patch entry in %s", r.body)
		}
		if strings.Contains(string(r.body), "df -h") {
			t.Errorf("audit holds answer text: %s", r.body)
		}
	})
	t.Run("stats", func(t *testing.T) {
		r := e.must(200, keyAdmin, "GET", "/admin/v1/projects/a-proj/stats", nil)
		var ps core.ProjectStats
		r.decode(t, &ps)
		if ps.Total != 1 || ps.ByStatus[core.StatusVerified] != 1 {
			t.Errorf("stats %s", r.body)
		}
	})
	t.Run("projects", func(t *testing.T) {
		r := e.must(200, keyAdmin, "GET", "/admin/v1/projects", nil)
		var pr wire.ProjectsResponse
		r.decode(t, &pr)
		if len(pr.Projects) != 3 {
			t.Errorf("projects %s", r.body)
		}
	})
	t.Run("every write is audited", func(t *testing.T) {
		e.must(200, keyAdmin, "DELETE", "/v1/qa/"+id+"?project_id=a-proj", nil)
		want := map[string]bool{"candidate": false, "patch": false, "delete": false}
		for _, en := range e.team.auditEntries() {
			if _, ok := want[en.Action]; ok && en.QAID == id {
				want[en.Action] = true
			}
		}
		for a, ok := range want {
			if !ok {
				t.Errorf("no %s audit entry", a)
			}
		}
	})
	t.Run("import keeps a question-only record only when asked", func(t *testing.T) {
		rec := map[string]any{"qa_id": "qa-qo", "project_id": "a-proj", "question": "How do I reset the wombat cache?", "answer": ""}
		r := e.must(400, keyAdmin, "POST", "/admin/v1/import", map[string]any{"records": []any{rec}})
		if ae := r.apiErr(t); !strings.Contains(ae.Message, "questions_only") {
			t.Errorf("refusal %+v does not name questions_only", ae)
		}
		e.must(404, keyAdmin, "GET", "/v1/qa/qa-qo?project_id=a-proj", nil)
		e.must(200, keyAdmin, "POST", "/admin/v1/import", map[string]any{"records": []any{rec}, "questions_only": true})
		e.must(200, keyAdmin, "GET", "/v1/qa/qa-qo?project_id=a-proj", nil)
	})
	t.Run("projects without a lister is 501", func(t *testing.T) {
		pe := newEnvFor(t, newEmbedded(t))
		pe.must(501, keyAdmin, "GET", "/admin/v1/projects", nil)
	})
}

func TestExpire(t *testing.T) {
	now := time.Now()
	e := newEnv(t, withOpts(WithClock(func() time.Time { return now })))
	e.addQA(keyAgentA, "a-proj", "an old candidate", "that nobody validated")
	r := e.must(200, keyAdmin, "POST", "/v1/qa/expire", `{"batch_size":10}`)
	if string(r.body) != `{"expired":0}` {
		t.Errorf("expire now: %s", r.body)
	}
	now = now.Add(31 * 24 * time.Hour)
	r = e.must(200, keyAdmin, "POST", "/v1/qa/expire", ``)
	if string(r.body) != `{"expired":1}` {
		t.Errorf("expire after the TTL: %s", r.body)
	}
}

// laxStore redeems receipts without checking the source: the service
// checks it again.
type laxStore struct{ *teamStore }

func (l laxStore) RedeemReceipt(_ context.Context, projectID, id, _ string, _ time.Time) (core.Receipt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.receipts[id]
	if !ok || r.ProjectID != projectID {
		return core.Receipt{}, core.ErrNotFound
	}
	return r, nil
}

func TestReceiptChecksDoNotTrustTheStore(t *testing.T) {
	team := newTeamStore(t)
	e := newEnvFor(t, laxStore{team})
	id := e.addQA(keyAgentA, "a-proj", "How to see cgroup memory?", "cat /sys/fs/cgroup/memory.current")
	voter := Key{ID: "voter", Role: RoleAgent, Projects: []string{"a-*"}}
	e2 := newEnvFor(t, laxStore{team}, withConfig(func(c *Config) { c.Keys = append(c.Keys, withHash(voter)...) }))
	r := e2.must(200, voter, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "cgroup memory"})
	var ms []core.Match
	r.decode(t, &ms)
	var rr wire.RecordResponse
	e.must(200, keyAgentA, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id, "result": "pass", "receipt_id": ms[0].ReceiptID}).decode(t, &rr)
	if *rr.Applied || rr.Reason != wire.ReasonReceiptOtherKey {
		t.Errorf("a receipt of another key: applied %v reason %q", *rr.Applied, rr.Reason)
	}
}

// TestMethodNotAllowed: a route served with another method answers 405
// with Allow, before authentication; an unknown path stays 404.
func TestMethodNotAllowed(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		method, path, allow string
		key                 Key
	}{
		{"PUT", "/v1/qa/hit", "GET, POST, DELETE", keyAgentA}, // GET and DELETE /v1/qa/{qa_id} serve it too
		{"GET", "/v1/qa/validate", "", keyAgentA},             // GET /v1/qa/{qa_id} serves it: qa_id "validate"
		{"POST", "/v1/qa", "GET", keyAgentA},
		{"PUT", "/v1/qa/qa_1", "GET, DELETE", keyAgentA},
		{"DELETE", "/admin/v1/projects", "GET", keyAgentA},
		{"POST", "/readyz", "GET", Key{}},
		{"PUT", "/v1/qa/candidates", "GET, POST, DELETE", Key{ID: "nobody"}},
	} {
		if tc.allow == "" {
			continue
		}
		r := e.do(tc.key, tc.method, tc.path, nil)
		if r.status != 405 || r.header.Get("Allow") != tc.allow || r.apiErr(t).Code != "method_not_allowed" || r.header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s: %d Allow %q %s, want 405 Allow %q in the error shape", tc.method, tc.path, r.status, r.header.Get("Allow"), r.body, tc.allow)
		}
	}
	if r := e.do(keyAgentA, "PUT", "/v1/nope", nil); r.status != 404 {
		t.Errorf("unknown path: %d, want 404", r.status)
	}
}

// TestHeadersTooLarge: headers past MaxHeaderBytes get 431 in the error
// shape with X-Request-Id, through the server memex serve runs.
func TestHeadersTooLarge(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); _ = <-done })
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", MaxHeaderBytes+10))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body wire.ErrorResponse
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 431 || body.Error.Code != "headers_too_large" || res.Header.Get("X-Request-Id") == "" {
		t.Errorf("431: status %d, body %+v (%v), X-Request-Id %q", res.StatusCode, body, err, res.Header.Get("X-Request-Id"))
	}
}

// Each human verdict has its own admin route (POST
// /admin/v1/qa/{id}/{verdict}), audited under the verdict's name with the
// key and the status before and after; an agent key cannot give one; a
// deprecation can be undone.
func TestAdminVerdictRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.addQA(keyAgentA, "a-proj", "How to list open ports?", "ss -tlnp lists them.")
	steps := []struct {
		verdict core.Verdict
		path    string
		body    any
		want    core.Status
	}{
		{core.VerdictVerify, "/admin/v1/qa/" + id + "/verify", map[string]any{"project_id": "a-proj"}, core.StatusVerified},
		{core.VerdictFreeze, "/admin/v1/qa/" + id + "/freeze?project_id=a-proj", nil, core.StatusFrozen},
		{core.VerdictDeprecate, "/admin/v1/qa/" + id + "/deprecate?project_id=a-proj", nil, core.StatusDeprecated},
		{core.VerdictReactivate, "/admin/v1/qa/" + id + "/reactivate", map[string]any{"project_id": "a-proj"}, core.StatusActive},
	}
	before := "candidate"
	for _, st := range steps {
		var rr wire.RecordResponse
		e.must(200, keyAdmin, "POST", st.path, st.body).decode(t, &rr)
		if rr.Record.Status != st.want {
			t.Fatalf("%s: status %s, want %s", st.verdict, rr.Record.Status, st.want)
		}
		var found bool
		for _, en := range e.team.auditEntries() {
			if en.Action == string(st.verdict) && en.QAID == id && en.KeyID == "admin" &&
				en.Before["status"] == before && en.After["status"] == string(st.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s audit entry %s → %s", st.verdict, before, st.want)
		}
		before = string(st.want)
	}
	ms := e.must(200, keyAgentA, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "list open ports"})
	if !strings.Contains(string(ms.body), id) {
		t.Errorf("a reactivated QA is not found: %s", ms.body)
	}
	e.must(403, keyAgentA, "POST", "/admin/v1/qa/"+id+"/verify", map[string]any{"project_id": "a-proj"})
	e.must(400, keyAdmin, "POST", "/admin/v1/qa/"+id+"/verify", nil)
	e.must(400, keyAdmin, "POST", "/admin/v1/qa/"+id+"/verify?project_id=b-proj", map[string]any{"project_id": "a-proj"})
	e.must(404, keyAdmin, "POST", "/admin/v1/qa/qa-nope/verify", map[string]any{"project_id": "a-proj"})
}
