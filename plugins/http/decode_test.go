package httpstore

import (
	"errors"
	"net/http"
	"testing"

	"github.com/memex-dev/memex/core"
)

func resp(status int, body string) response {
	return response{status: status, header: http.Header{}, body: []byte(body)}
}

func TestDecodeSearchShapes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
		err        error
	}{
		{"bare array", `[{"qa_id":"a"},{"qa_id":"b"}]`, []string{"a", "b"}, nil},
		{"envelope with an array", `{"code":0,"msg":"success","data":[{"qa_id":"a"}]}`, []string{"a"}, nil},
		{"bad items skipped", `[{"qa_id":"a"},42,{"nope":1}]`, []string{"a"}, nil},
		{"empty", ``, []string{}, nil},
		{"not a search answer", `{"items":[]}`, nil, core.ErrUnavailable},
		{"html", `<html>`, nil, core.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, _, err := decodeSearch("search", resp(200, tc.body))
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if tc.err != nil {
				return
			}
			if len(ms) != len(tc.want) {
				t.Fatalf("matches = %+v, want %v", ms, tc.want)
			}
			for i, m := range ms {
				if m.QAID != tc.want[i] {
					t.Errorf("match %d = %s, want %s", i, m.QAID, tc.want[i])
				}
			}
		})
	}
}

func TestDecodeAnswers(t *testing.T) {
	t.Run("bare record", func(t *testing.T) {
		ans, err := decodeRecordAnswer("get", resp(200, `{"qa_id":"q1","status":"verified"}`))
		if err != nil || !ans.ok || ans.rec.Status != core.StatusVerified {
			t.Fatalf("= %+v, %v", ans, err)
		}
	})
	t.Run("list skips bad items", func(t *testing.T) {
		page, err := decodeList("list", resp(200, `{"items":[{"qa_id":"a"},{"x":1},"s"],"next_cursor":"c2"}`))
		if err != nil || len(page.Items) != 1 || page.NextCursor != "c2" {
			t.Fatalf("= %+v, %v", page, err)
		}
	})
	t.Run("candidate deduplicated", func(t *testing.T) {
		cr, err := decodeCandidate("candidate", resp(201, `{"qa_id":"old","status":"active","deduplicated_into":"old"}`))
		if err != nil || cr.QAID != "old" || cr.DeduplicatedInto != "old" || cr.Status != core.StatusActive {
			t.Fatalf("= %+v, %v", cr, err)
		}
	})
	t.Run("hit count", func(t *testing.T) {
		if hr, err := decodeHit("hit", resp(200, `{"updated":0}`), 5); err != nil || hr.Updated != 0 {
			t.Fatalf("= %+v, %v; want the service's 0 kept", hr, err)
		}
	})
	t.Run("projects", func(t *testing.T) {
		for _, body := range []string{`[{"project_id":"a"}]`, `{"projects":[{"project_id":"a"}]}`, `{"items":[{"project_id":"a"}]}`} {
			ps, err := decodeProjects("projects", resp(200, body))
			if err != nil || len(ps) != 1 || ps[0].ProjectID != "a" {
				t.Errorf("%s: %+v, %v", body, ps, err)
			}
		}
	})
	t.Run("stats wrapped", func(t *testing.T) {
		var st core.ProjectStats
		if err := decodeObject("stats", resp(200, `{"stats":{"project_id":"a","total":4}}`), &st, "stats"); err != nil || st.Total != 4 {
			t.Fatalf("= %+v, %v", st, err)
		}
	})
}
