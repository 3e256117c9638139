package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func ptr[T any](v T) *T { return &v }

// goldenBodies is every body of the HTTP API with a value that sets each
// field, by golden file name. A field renamed, retyped or dropped on either
// side changes a file.
func goldenBodies() map[string]any {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	rec := core.Record{QAID: "qa_1", ProjectID: "acme", Question: "why does go test -race fail?", Answer: "guard the map with a mutex",
		Tags: []string{"go"}, Metadata: map[string]any{}, Status: core.StatusActive, ValidationLevel: 2, Level: "L2",
		SuccessCount: 3, FailureCount: 1, TrustScore: 0.7, CreatedAt: t0, UpdatedAt: t0, TTLExpireAt: t0.Add(30 * 24 * time.Hour)}
	match := core.Match{QAID: "qa_1", ProjectID: "acme", Question: rec.Question, Answer: rec.Answer, Score: 0.81, Relevance: 0.9,
		Trust: 0.7, Freshness: 0.5, ValidationLevel: 2, Level: "L2", Status: core.StatusActive, Tags: []string{"go"},
		Metadata: map[string]any{}, ReceiptID: "rcpt_abc.1"}
	item := core.Item{Namespace: core.Namespace{"user", "alice"}, Key: "pref", Value: []byte(`{"text":"prefers table-driven tests"}`), CreatedAt: t0, UpdatedAt: t0.Add(time.Hour)}
	scored := item
	scored.Score = 0.42
	return map[string]any{
		"search_request":        core.SearchRequest{ProjectID: "acme", Query: "data race in the cache", Limit: 6, MinScore: 0.2},
		"search_response":       []core.Match{match},
		"inject_request":        InjectRequest{ProjectID: "acme", Query: "data race", Limit: 6, MinScore: ptr(0.3), MaxBlockChars: 4000, Seed: ptr(uint64(42))},
		"inject_response":       InjectResponse{ReceiptID: "rcpt_abc", Items: []InjectItem{{Match: match, Probation: true, Why: "probation"}}, Block: "<memory>…</memory>", Shown: []string{"qa_1"}, Reasons: []InjectReason{{Code: "filtered_relevance", QAID: "qa_2", Detail: "relevance=0.100 < 0.300"}}},
		"hit_request":           core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "qa_1", Shown: true, Used: true}}, RunID: "run-1", ReceiptID: "rcpt_abc", EventID: "ev-1"},
		"hit_response":          HitResponse{Updated: 1, Ignored: 1, Reason: ReasonNotServed},
		"candidate_request":     core.CandidateRequest{ProjectID: "acme", Question: "q?", Answer: "a.", Tags: []string{"go"}, Source: "memex-cli", Confidence: ptr(0.7), RunID: "run-1", Evidence: &core.Evidence{Result: core.ResultPass, Strength: core.StrengthStrong}, EventID: "ev-2"},
		"candidate_result":      core.CandidateResult{QAID: "qa_1", Status: core.StatusActive, DeduplicatedInto: "qa_1"},
		"validate_request":      core.ValidateRequest{ProjectID: "acme", QAID: "qa_1", Result: "pass", SignalStrength: "strong", Source: "memex-cli", RunID: "run-1", ReceiptID: "rcpt_abc.1", EventID: "ev-3"},
		"record_response":       RecordResponse{Record: rec, Applied: ptr(true)},
		"record_refused":        RecordResponse{Record: rec, Applied: ptr(false), Reason: ReasonReceiptUsed},
		"list_page":             core.ListPage{Items: []core.Record{rec}, NextCursor: "c2"},
		"patch_request":         core.PatchRequest{ProjectID: "acme", QAID: "qa_1", Status: ptr(core.StatusDeprecated), EventID: "ev-4"},
		"expire_request":        ExpireRequest{BatchSize: 200, Now: "2026-03-04T05:06:07Z"},
		"expire_response":       ExpireResponse{Expired: 3},
		"delete_response":       DeleteResponse{Deleted: true},
		"grade_request":         core.TaskGradeRequest{Prompt: "fix the flaky test"},
		"grade_response":        core.TaskGrade{TaskLevel: "L2", Reason: "programming", RecommendedModel: "large", RecommendedModelProvider: "local", Confidence: 0.7},
		"projects_response":     ProjectsResponse{Projects: []core.ProjectSummary{{ProjectID: "acme"}}},
		"status_response":       StatusResponse{Status: "ready", Store: "redis"},
		"store_put_request":     core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Key: "pref", Value: []byte(`{"text":"prefers table-driven tests"}`), MaxEntries: 100},
		"store_put_result":      core.PutResult{Item: item, Previous: &item},
		"store_item_response":   ItemResponse{Item: &item},
		"store_item_missing":    ItemResponse{},
		"store_delete_response": DeleteItemResponse{Deleted: true, Item: &item},
		"store_list_page":       core.ItemPage{Items: []core.Item{item}, NextCursor: "dXNlcgBhbGljZQABcHJlZg"},
		"store_search_request":  core.SearchItemsRequest{Prefix: core.Namespace{"user", "alice"}, Query: "table tests", Filter: map[string]json.RawMessage{"kind": json.RawMessage(`"pref"`)}, Limit: 5},
		"store_search_response": SearchItemsResponse{Items: []core.Item{scored}},
		"store_clear_request":   ClearItemsRequest{Prefix: core.Namespace{"conversation", "alice", "s1"}},
		"store_clear_response":  ClearItemsResponse{Deleted: 3},
		"error_response":        ErrorResponse{Error: APIError{Code: "invalid_request", Message: "limit: must be between 1 and 50", Field: "limit"}},
	}
}

// TestGolden pins the encoding of every body (testdata/golden/*.json) and
// that each file decodes back to the same value.
func TestGolden(t *testing.T) {
	for name, v := range goldenBodies() {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./wire -run TestGolden -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s changed: the wire format is a contract (docs/WIRE.md); if the change is meant, run go test ./wire -run TestGolden -update\n got: %s\nwant: %s", path, got, want)
			}
			back := reflect.New(reflect.TypeOf(v))
			if err := json.Unmarshal(want, back.Interface()); err != nil {
				t.Fatalf("decode %s: %v", path, err)
			}
			again, _ := json.MarshalIndent(back.Elem().Interface(), "", "  ")
			if !bytes.Equal(append(again, '\n'), want) {
				t.Errorf("%s does not survive a decode and encode:\n%s", path, again)
			}
		})
	}
}

// TestGoldenFilesAllUsed keeps testdata/golden free of files no test reads.
func TestGoldenFilesAllUsed(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	bodies := goldenBodies()
	for _, f := range files {
		name := filepath.Base(f)
		if _, ok := bodies[name[:len(name)-len(".json")]]; !ok {
			t.Errorf("%s is pinned by no test", f)
		}
	}
}

// TestOriginalResponses reads the original memory service's answers (the
// fixtures in testdata/original/) the way plugins/http does.
func TestOriginalResponses(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "original", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("search", func(t *testing.T) {
		ms, skipped, err := ParseSearchResponse(Payload(read("search.json")))
		if err != nil || skipped != 1 || len(ms) != 1 {
			t.Fatalf("= %+v, %d, %v", ms, skipped, err)
		}
		m := ms[0]
		if m.QAID != "7f1c0e2a-1111-4222-8333-944455556666" || m.ConsecutiveFail != 2 || m.Level != "L1" || m.Source != "" ||
			m.ExpiryAt == nil || !m.ExpiryAt.Equal(time.Date(2026, 2, 26, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("match = %+v", m)
		}
	})
	t.Run("validate", func(t *testing.T) {
		var v struct {
			Record json.RawMessage `json:"record"`
		}
		if err := json.Unmarshal(Payload(read("validate.json")), &v); err != nil {
			t.Fatal(err)
		}
		rec, err := DecodeRecord(v.Record)
		if err != nil {
			t.Fatal(err)
		}
		if rec.QAID != "7f1c0e2a-1111-4222-8333-944455556666" || rec.SuccessCount != 4 || rec.ConsecutiveFail != 0 ||
			!rec.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || rec.TTLExpireAt.IsZero() {
			t.Errorf("record = %+v", rec)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			file  string
			shape string
			kind  error
			field string
		}{
			{"error_envelope_404.json", ShapeEnvelope, core.ErrNotFound, ""},
			{"error_envelope_403.json", ShapeEnvelope, core.ErrForbidden, ""},
			{"error_fastapi_422.json", ShapeDetail, core.ErrInvalid, "limit"},
		} {
			r, ok := ParseErrorReply(read(tc.file))
			if !ok || r.Shape != tc.shape || r.Field != tc.field {
				t.Errorf("%s: %+v, %v", tc.file, r, ok)
			}
			if err := ParseErrorBody(read(tc.file)); !errors.Is(err, tc.kind) {
				t.Errorf("%s: %v, want %v", tc.file, err, tc.kind)
			}
		}
	})
}

// TestSentinelFor pins the status → sentinel map both the client and the
// search parser use.
func TestSentinelFor(t *testing.T) {
	for status, want := range map[int]error{400: core.ErrInvalid, 422: core.ErrInvalid, 401: core.ErrUnauthorized, 403: core.ErrForbidden,
		404: core.ErrNotFound, 409: core.ErrConflict, 413: core.ErrTooLarge, 429: core.ErrUnavailable, 500: core.ErrUnavailable, 503: core.ErrUnavailable} {
		if got := SentinelFor(status, ""); got != want {
			t.Errorf("SentinelFor(%d) = %v, want %v", status, got, want)
		}
	}
	for code, want := range map[string]error{"not_found": core.ErrNotFound, "invalid_request": core.ErrInvalid, "forbidden": core.ErrForbidden,
		"unauthorized": core.ErrUnauthorized, "conflict": core.ErrConflict, "too_large": core.ErrTooLarge, "unavailable": core.ErrUnavailable} {
		if got := SentinelFor(0, code); got != want {
			t.Errorf("SentinelFor(%q) = %v, want %v", code, got, want)
		}
	}
	if got := SentinelFor(418, ""); got != nil {
		t.Errorf("SentinelFor(418) = %v, want nil (the caller decides)", got)
	}
}
