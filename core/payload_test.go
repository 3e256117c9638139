package core

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSearchRequestDecodeDefaults(t *testing.T) {
	var r SearchRequest
	if err := json.Unmarshal([]byte(`{"project_id":"p","query":"q"}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.MinScore != DefaultMinScore {
		t.Errorf("min_score = %v, want default %v when absent", r.MinScore, DefaultMinScore)
	}
	if err := r.Normalize(); err != nil || r.Limit != DefaultSearchLimit {
		t.Errorf("Normalize: limit %d err %v", r.Limit, err)
	}
	r = SearchRequest{}
	if err := json.Unmarshal([]byte(`{"project_id":"p","query":"q","min_score":0}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.MinScore != 0 {
		t.Errorf("explicit min_score 0 became %v", r.MinScore)
	}
}

func TestHitRefShownDefaultsTrue(t *testing.T) {
	var h HitRequest
	if err := json.Unmarshal([]byte(`{"project_id":"p","references":[{"qa_id":"a"},{"qa_id":"b","shown":false,"used":true}]}`), &h); err != nil {
		t.Fatal(err)
	}
	if !h.References[0].Shown || h.References[0].Used {
		t.Errorf("ref 0 = %+v, want shown true used false", h.References[0])
	}
	if h.References[1].Shown || !h.References[1].Used {
		t.Errorf("ref 1 = %+v, want shown false used true", h.References[1])
	}
}

func TestValidateNamesField(t *testing.T) {
	long := strings.Repeat("x", MaxAnswerBytes+1)
	tests := []struct {
		name  string
		v     interface{ Validate() error }
		field string
	}{
		{"search no project", SearchRequest{Query: "q"}, "project_id"},
		{"search bad project", SearchRequest{ProjectID: "Bad Project", Query: "q"}, "project_id"},
		{"search limit", SearchRequest{ProjectID: "p", Limit: 51}, "limit"},
		{"search min_score", SearchRequest{ProjectID: "p", MinScore: 1.5}, "min_score"},
		{"hit ref id", HitRequest{ProjectID: "p", References: []HitRef{{QAID: "ok"}, {QAID: "bad id!"}}}, "references[1].qa_id"},
		{"candidate question", CandidateRequest{ProjectID: "p", Answer: "a"}, "question"},
		{"candidate answer", CandidateRequest{ProjectID: "p", Question: "q"}, "answer"},
		{"candidate long answer", CandidateRequest{ProjectID: "p", Question: "q", Answer: long}, "answer"},
		{"candidate tag", CandidateRequest{ProjectID: "p", Question: "q", Answer: "a", Tags: []string{"go", ""}}, "tags[1]"},
		{"candidate confidence", CandidateRequest{ProjectID: "p", Question: "q", Answer: "a", Confidence: ptr(2.0)}, "confidence"},
		{"candidate shared", CandidateRequest{ProjectID: "p", Question: "q", Answer: "a", SharedProjects: []string{"X"}}, "shared_projects[0]"},
		{"validate result", ValidateRequest{ProjectID: "p", QAID: "a"}, "result"},
		{"validate bad result", ValidateRequest{ProjectID: "p", QAID: "a", Result: "maybe"}, "result"},
		{"validate strength", ValidateRequest{ProjectID: "p", QAID: "a", Result: "pass", SignalStrength: "huge"}, "signal_strength"},
		{"validate ts", ValidateRequest{ProjectID: "p", QAID: "a", Result: "pass", TS: "yesterday"}, "ts"},
		{"list min_level", ListRequest{ProjectID: "p", MinLevel: 4}, "min_level"},
		{"patch status", PatchRequest{ProjectID: "p", QAID: "a", Status: ptr(Status("gone"))}, "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want a *FieldError wrapping ErrInvalid", err)
			}
			if fe.Field != tt.field {
				t.Errorf("field = %q, want %q", fe.Field, tt.field)
			}
		})
	}
}

func TestValidateOutcome(t *testing.T) {
	tr, fa := true, false
	tests := []struct {
		name string
		req  ValidateRequest
		res  Result
		st   Strength
	}{
		{"success means pass (the original server's bug fixed)", ValidateRequest{Result: "success"}, ResultPass, StrengthWeak},
		{"fail", ValidateRequest{Result: "fail", SignalStrength: "MEDIUM"}, ResultFail, StrengthMedium},
		{"bool success + strong_signal", ValidateRequest{Success: &tr, StrongSignal: true}, ResultPass, StrengthStrong},
		{"bool failure", ValidateRequest{Success: &fa}, ResultFail, StrengthWeak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, st, err := tt.req.Outcome()
			if err != nil || res != tt.res || st != tt.st {
				t.Errorf("got %v %v %v, want %v %v", res, st, err, tt.res, tt.st)
			}
		})
	}
}

func TestDecodeTypeErrorNamesField(t *testing.T) {
	var r SearchRequest
	err := json.Unmarshal([]byte(`{"project_id":"p","limit":"six"}`), &r)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "limit" {
		t.Fatalf("err = %v, want field limit", err)
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzDecodePayloads: decoding any body into any request never panics, and a
// request that decodes and validates re-encodes and decodes to the same value.
func FuzzDecodePayloads(f *testing.F) {
	seeds := []string{
		`{"project_id":"p","query":"go test race","limit":6,"min_score":0.2}`,
		`{"project_id":"p","references":[{"qa_id":"a","used":true}]}`,
		`{"project_id":"p","question":"q","answer":"a","tags":["go"],"confidence":0.5,"metadata":{"k":1}}`,
		`{"project_id":"p","qa_id":"a","result":"success","signal_strength":"strong","context":{"exit_code":0}}`,
		`{"project_id":"p","limit":1e400}`, `{"references":[1,2]}`, `[]`, `{"min_score":"x"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(v interface{ Validate() error }, fresh func() any) {
			if err := json.Unmarshal(body, v); err != nil {
				if !errors.Is(err, ErrInvalid) && !strings.Contains(err.Error(), "json") && !strings.Contains(err.Error(), "unexpected") && !strings.Contains(err.Error(), "invalid") {
					t.Fatalf("decode error not descriptive: %v", err)
				}
				return
			}
			if v.Validate() != nil {
				return
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			w := fresh()
			if err := json.Unmarshal(b, w); err != nil {
				t.Fatalf("round trip decode: %v", err)
			}
		}
		check(&SearchRequest{}, func() any { return &SearchRequest{} })
		check(&HitRequest{}, func() any { return &HitRequest{} })
		check(&CandidateRequest{}, func() any { return &CandidateRequest{} })
		check(&ValidateRequest{}, func() any { return &ValidateRequest{} })
		check(&ListRequest{}, func() any { return &ListRequest{} })
		check(&PatchRequest{}, func() any { return &PatchRequest{} })
	})
}
