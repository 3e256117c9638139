package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

func TestParseSearchResponse(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantIDs  []string
		skipped  int
		wantErr  error
		checkFst func(t *testing.T, m core.Match)
	}{
		{name: "top-level array, only qa_id required", body: `[{"qa_id":"a"}]`, wantIDs: []string{"a"},
			checkFst: func(t *testing.T, m core.Match) {
				if m.Status != core.StatusActive {
					t.Errorf("status = %q, want active (default)", m.Status)
				}
				if m.Level != "L0" || m.Score != 0 || m.Metadata == nil || m.Tags == nil {
					t.Errorf("defaults wrong: %+v", m)
				}
			}},
		{name: "meta accepted for metadata", body: `[{"qa_id":"a","meta":{"consecutive_fail":"2"}}]`, wantIDs: []string{"a"},
			checkFst: func(t *testing.T, m core.Match) {
				if m.ConsecutiveFail != 2 {
					t.Errorf("consecutive_fail = %d, want 2 from meta as numeric string", m.ConsecutiveFail)
				}
			}},
		{name: "stats path of the original server", body: `[{"qa_id":"a","metadata":{"stats":{"consecutive_fail":3}}}]`, wantIDs: []string{"a"},
			checkFst: func(t *testing.T, m core.Match) {
				if m.ConsecutiveFail != 3 {
					t.Errorf("consecutive_fail = %d, want 3", m.ConsecutiveFail)
				}
			}},
		{name: "bad items skipped", body: `[{"qa_id":"a"},{"question":"no id"},42,{"qa_id":7},{"qa_id":"b","score":"0.5"}]`, wantIDs: []string{"a", "b"}, skipped: 3,
			checkFst: func(t *testing.T, m core.Match) {}},
		{name: "numbers as strings and naive expiry", body: `[{"qa_id":"a","score":"0.9","trust":0.5,"validation_level":2,"expiry_at":"2026-01-02T03:04:05"}]`, wantIDs: []string{"a"},
			checkFst: func(t *testing.T, m core.Match) {
				if m.Score != 0.9 || m.Trust != 0.5 || m.Level != "L2" {
					t.Errorf("got score %v trust %v level %s", m.Score, m.Trust, m.Level)
				}
				if m.ExpiryAt == nil || !m.ExpiryAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
					t.Errorf("expiry_at = %v, want naive time read as UTC", m.ExpiryAt)
				}
			}},
		{name: "level string only", body: `[{"qa_id":"a","level":"L3"}]`, wantIDs: []string{"a"},
			checkFst: func(t *testing.T, m core.Match) {
				if m.ValidationLevel != 3 {
					t.Errorf("validation_level = %d, want 3 from level", m.ValidationLevel)
				}
			}},
		{name: "empty array", body: `[]`, wantIDs: []string{}},
		{name: "object is an error", body: `{"foo":1}`, wantErr: core.ErrInvalid},
		{name: "memex error shape", body: `{"error":{"code":"not_found","message":"no such qa"}}`, wantErr: core.ErrNotFound},
		{name: "original envelope error with HTTP 200", body: `{"code":404,"msg":"QA memory not found","data":{}}`, wantErr: core.ErrNotFound},
		{name: "fastapi 422", body: `{"detail":[{"loc":["body","limit"],"msg":"too big"}]}`, wantErr: core.ErrInvalid},
		{name: "not json", body: `<html>`, wantErr: core.ErrInvalid},
		{name: "empty", body: ``, wantErr: core.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, skipped, err := ParseSearchResponse([]byte(tt.body))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if skipped != tt.skipped {
				t.Errorf("skipped = %d, want %d", skipped, tt.skipped)
			}
			if len(ms) != len(tt.wantIDs) {
				t.Fatalf("got %d matches, want %d", len(ms), len(tt.wantIDs))
			}
			for i, id := range tt.wantIDs {
				if ms[i].QAID != id {
					t.Errorf("match %d = %q, want %q", i, ms[i].QAID, id)
				}
			}
			if tt.checkFst != nil && len(ms) > 0 {
				tt.checkFst(t, ms[0])
			}
		})
	}
}

func FuzzParseSearchResponse(f *testing.F) {
	for _, s := range []string{`[]`, `[{"qa_id":"a","score":1}]`, `{"code":500,"msg":"x"}`, `[{"qa_id":"a","meta":{"stats":{"consecutive_fail":"x"}}}]`, `null`, `[null]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ms, skipped, err := ParseSearchResponse(body)
		if err != nil {
			if ms != nil {
				t.Fatal("matches returned with an error")
			}
			return
		}
		if skipped < 0 {
			t.Fatal("negative skipped")
		}
		for _, m := range ms {
			if m.QAID == "" {
				t.Fatal("match without qa_id")
			}
			if m.ValidationLevel < 0 || m.ValidationLevel > 3 || m.Level != core.LevelName(m.ValidationLevel) {
				t.Fatalf("level out of range: %d %q", m.ValidationLevel, m.Level)
			}
			if m.Status == "" || m.Metadata == nil || m.Tags == nil {
				t.Fatal("defaults not applied")
			}
		}
	})
}

func TestDecodeRecordLenient(t *testing.T) {
	rec, err := DecodeRecord([]byte(`{"qa_id":"q1","trust_score":"high","tags":"go","meta":{"stats":{"consecutive_fail":3}},
		"level":"L2","created_at":"2026-01-02 03:04:05","updated_at":"not a time","status":"active"}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec.QAID != "q1" || rec.TrustScore != 0 || len(rec.Tags) != 0 || rec.ValidationLevel != 2 || rec.ConsecutiveFail != 3 {
		t.Errorf("record = %+v", rec)
	}
	if !rec.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || !rec.UpdatedAt.IsZero() {
		t.Errorf("times = %v, %v", rec.CreatedAt, rec.UpdatedAt)
	}
	for _, bad := range []string{`{"qa_id":7}`, `{"question":"q"}`, `[]`, `null`, `{`} {
		if _, err := DecodeRecord([]byte(bad)); err == nil {
			t.Errorf("DecodeRecord(%s) accepted it", bad)
		}
	}
}
