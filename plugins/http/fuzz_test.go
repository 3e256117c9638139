package httpstore

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// FuzzDecodeResponse feeds arbitrary answers to every response decoder:
// none panics, every error maps to a core sentinel, and what decodes is
// well formed.
func FuzzDecodeResponse(f *testing.F) {
	seeds := []struct {
		status int
		body   string
	}{
		{200, `[{"qa_id":"a","score":"0.5","meta":{"stats":{"consecutive_fail":"2"}},"expiry_at":"2026-01-01T00:00:00"}]`},
		{200, `{"code":0,"msg":"success","data":[{"qa_id":"b"}]}`},
		{200, `{"code":404,"msg":"QA memory not found","data":{}}`},
		{200, `{"code":"500","msg":"boom"}`},
		{200, `{"code":0,"msg":"success","data":{"record":` + origRecord + `}}`},
		{200, `{"record":{"qa_id":"x","created_at":"yesterday","tags":"notalist","trust_score":"high"}}`},
		{200, `{"items":[{"qa_id":"x"},{"nope":1},7],"next_cursor":"c"}`},
		{200, `{"code":0,"msg":"success","data":{"task_id":"t","status":"pending"}}`},
		{201, `{"qa_id":"q","status":"candidate","deduplicated_into":"p"}`},
		{204, ``},
		{400, `{"error":{"code":"invalid","message":"limit: must be between 1 and 50"}}`},
		{422, `{"detail":[{"loc":["body","references",0,"qa_id"],"msg":"field required"}]}`},
		{422, `{"detail":"bad"}`},
		{503, `<html>bad gateway</html>`},
		{200, `{"error":"plain string"}`},
		{200, `[1,"x",null,{"qa_id":""}]`},
		{200, `{"projects":[{"project_id":"acme","total":2}]}`},
	}
	for _, s := range seeds {
		f.Add(s.status, "rc-1", []byte(s.body))
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, receipt string, body []byte) {
		h := http.Header{}
		h.Set(wire.HeaderReceipt, receipt)
		h.Set("Retry-After", receipt)
		r := response{status: status, header: h, body: body}
		if status < 200 || status > 299 {
			checkErr(t, statusError("op", status, h, body, now))
			return
		}
		if err := checkBody("op", r); err != nil {
			checkErr(t, err)
			return
		}
		if ms, _, err := decodeSearch("search", r); err == nil {
			for _, m := range ms {
				if m.QAID == "" || m.Tags == nil || m.Metadata == nil || m.ValidationLevel < 0 || m.ValidationLevel > 3 {
					t.Fatalf("malformed match %+v", m)
				}
			}
		} else {
			checkErr(t, err)
		}
		if ans, err := decodeRecordAnswer("get", r); err == nil && ans.ok {
			if rec := ans.rec; rec.QAID == "" || rec.Level != core.LevelName(rec.ValidationLevel) || rec.Tags == nil {
				t.Fatalf("malformed record %+v", rec)
			}
		} else if err != nil {
			checkErr(t, err)
		}
		if page, err := decodeList("list", r); err == nil {
			if page.Items == nil {
				t.Fatal("nil items")
			}
		} else {
			checkErr(t, err)
		}
		if cr, err := decodeCandidate("candidate", r); err == nil && cr.QAID == "" && cr.Status != "pending" {
			t.Fatalf("candidate without id not pending: %+v", cr)
		}
		if hr, err := decodeHit("hit", r, 3); err == nil && r.status == http.StatusNoContent && hr.Updated != 3 {
			t.Fatalf("204 hit: %+v", hr)
		}
		var g core.TaskGrade
		_ = decodeObject("grade", r, &g, "")
		_, _ = decodeProjects("projects", r)
	})
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	for _, s := range []error{core.ErrInvalid, core.ErrUnauthorized, core.ErrForbidden, core.ErrNotFound,
		core.ErrConflict, core.ErrTooLarge, core.ErrUnavailable, core.ErrSecret} {
		if errors.Is(err, s) {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty error message")
			}
			return
		}
	}
	t.Fatalf("error %v maps to no core sentinel", err)
}
