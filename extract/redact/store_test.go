package redact

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// recorder is a store that keeps every request it receives, as JSON.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) keep(v any) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	r.seen = append(r.seen, string(b))
	r.mu.Unlock()
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.seen, "\n")
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Search(_ context.Context, req core.SearchRequest) ([]core.Match, error) {
	return nil, nil
}
func (r *recorder) RecordHit(_ context.Context, req core.HitRequest) (core.HitResult, error) {
	r.keep(req)
	return core.HitResult{}, nil
}
func (r *recorder) RecordCandidate(_ context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	r.keep(req)
	return core.CandidateResult{QAID: "qa-1"}, nil
}
func (r *recorder) RecordValidation(_ context.Context, req core.ValidateRequest) (core.Record, error) {
	r.keep(req)
	return core.Record{}, nil
}
func (r *recorder) RecordValidationAudited(_ context.Context, req core.ValidateRequest,
	entry func(before, after core.Record) core.AuditEntry) (core.Record, core.Record, bool, error) {
	r.keep(req)
	r.keep(entry(core.Record{}, core.Record{}))
	return core.Record{}, core.Record{}, true, nil
}
func (r *recorder) TaskGrade(context.Context, core.TaskGradeRequest) (core.TaskGrade, error) {
	return core.TaskGrade{}, nil
}
func (r *recorder) Patch(_ context.Context, req core.PatchRequest) (core.Record, error) {
	r.keep(req)
	return core.Record{}, nil
}
func (r *recorder) Import(_ context.Context, recs []core.Record) error { r.keep(recs); return nil }
func (r *recorder) RecordCandidates(_ context.Context, reqs []core.CandidateRequest) ([]core.CandidateResult, error) {
	r.keep(reqs)
	return make([]core.CandidateResult, len(reqs)), nil
}
func (r *recorder) RecordRun(_ context.Context, rep core.RunReport) (core.RunRecords, error) {
	r.keep(rep)
	return core.RunRecords{}, nil
}
func (r *recorder) AppendAudit(_ context.Context, e core.AuditEntry) error { r.keep(e); return nil }
func (r *recorder) AppendAudits(_ context.Context, es []core.AuditEntry) error {
	r.keep(es)
	return nil
}
func (r *recorder) Audit(context.Context, string, time.Time, int) ([]core.AuditEntry, error) {
	return nil, nil
}

const (
	ghToken = "ghp_" + "R4nd0mT0k3nV4lu3F0rT3st1ngXyZ1234567"
	awsKey  = "AKIA" + "QYLPMN5HHHFQZ7WX"
)

// Every write capability redacts every string it carries before the
// wrapped store sees it.
func TestStoreRedactsEveryWrite(t *testing.T) {
	rec := &recorder{}
	s := WrapStore(rec, nil, PolicyRedact)
	ctx := t.Context()
	secret := "token " + ghToken + " and key " + awsKey
	raw := json.RawMessage(`{"note":"` + secret + `"}`)
	cand := core.CandidateRequest{ProjectID: "p", Question: "q " + secret, Answer: "a " + secret, Summary: secret,
		Tags: []string{ghToken}, Metadata: map[string]any{"k": secret, secret: []any{secret}}, Source: secret, Author: secret,
		RunID: "run-" + ghToken, EventID: "ev-" + ghToken}
	val := core.ValidateRequest{ProjectID: "p", QAID: "qa-1", Result: "pass", Context: raw, Payload: raw, Client: raw,
		RunID: "run-" + ghToken, EventID: "ev-" + ghToken, ReceiptID: "r-" + ghToken, Source: secret}
	hit := core.HitRequest{ProjectID: "p", References: []core.HitRef{{QAID: "qa-1", Context: secret, MessageID: ghToken}}, RunID: ghToken}
	ans, sum, tags := secret, secret, []string{secret}

	calls := map[string]func() error{
		"RecordCandidate":  func() error { _, err := s.RecordCandidate(ctx, cand); return err },
		"RecordCandidates": func() error { _, err := s.RecordCandidates(ctx, []core.CandidateRequest{cand}); return err },
		"RecordValidation": func() error { _, err := s.RecordValidation(ctx, val); return err },
		"RecordValidationBefore": func() error {
			_, _, err := s.RecordValidationBefore(ctx, val)
			return err
		},
		"RecordValidationAudited": func() error {
			_, _, _, err := s.RecordValidationAudited(ctx, val, func(core.Record, core.Record) core.AuditEntry {
				return core.AuditEntry{ProjectID: "p", KeyID: ghToken, RunID: ghToken, ReceiptID: ghToken, After: map[string]any{"x": secret}}
			})
			return err
		},
		"RecordHit": func() error { _, err := s.RecordHit(ctx, hit); return err },
		"Patch": func() error {
			_, err := s.Patch(ctx, core.PatchRequest{ProjectID: "p", QAID: "qa-1", Answer: &ans, Summary: &sum, Tags: &tags})
			return err
		},
		"Import": func() error {
			return s.Import(ctx, []core.Record{{QAID: "qa-1", ProjectID: "p", Question: secret, Answer: secret, Summary: secret,
				Tags: []string{secret}, Metadata: map[string]any{"m": secret}, Source: secret, Author: secret, ContentHash: "x",
				Evidence: json.RawMessage(`{"creator":"` + ghToken + `","sources":{"` + awsKey + `":{"s":1}}}`)}})
		},
		"RecordRun": func() error {
			_, err := s.RecordRun(ctx, core.RunReport{Hit: &hit, Validations: []core.ValidateRequest{val}, Candidate: &cand})
			return err
		},
		"AppendAudit": func() error {
			return s.AppendAudit(ctx, core.AuditEntry{ProjectID: "p", RunID: ghToken, ReceiptID: ghToken, After: map[string]any{"x": secret}})
		},
		"AppendAudits": func() error {
			return s.AppendAudits(ctx, []core.AuditEntry{{ProjectID: "p", RunID: ghToken, Key: ghToken, After: map[string]any{"x": secret}},
				{ProjectID: "p", Namespace: "user/" + ghToken, Before: map[string]any{"y": secret}}})
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			rec.seen = nil
			if err := call(); err != nil {
				t.Fatal(err)
			}
			got := rec.all()
			if got == "" {
				t.Fatal("the wrapped store received nothing")
			}
			for _, sec := range []string{ghToken, awsKey, ghToken[4:20]} {
				if strings.Contains(got, sec) {
					t.Errorf("the wrapped store received the secret %q:\n%s", sec[:8], got)
				}
			}
		})
	}
}

// strict_secret_block: content holding a secret is refused with ErrSecret,
// and the error holds neither the secret nor the text around it.
func TestStoreBlocksUnderStrictPolicy(t *testing.T) {
	rec := &recorder{}
	s := WrapStore(rec, nil, PolicyBlock)
	_, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p", Question: "q", Answer: "use " + ghToken})
	if !errors.Is(err, core.ErrSecret) {
		t.Fatalf("err = %v, want ErrSecret", err)
	}
	if strings.Contains(err.Error(), ghToken[4:12]) || strings.Contains(err.Error(), "use ") {
		t.Errorf("the error echoes the input: %v", err)
	}
	if rec.all() != "" {
		t.Error("a blocked candidate reached the store")
	}
	// Context and payload of reports are redacted, never refused.
	if _, err := s.RecordValidation(t.Context(), core.ValidateRequest{ProjectID: "p", QAID: "q", Result: "pass",
		Context: json.RawMessage(`"` + ghToken + `"`)}); err != nil {
		t.Errorf("a validation whose context holds a secret was refused: %v", err)
	}
}

// A secret longer than what is left under a size limit is redacted before
// the cut: no prefix of it survives.
func TestStoreRedactsBeforeCutting(t *testing.T) {
	rec := &recorder{}
	s := WrapStore(rec, nil, PolicyRedact)
	q := strings.Repeat("a ", (core.MaxQuestionBytes-20)/2) + ghToken
	if _, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p", Question: q, Answer: "a", Tags: []string{"ci " + ghToken}}); err != nil {
		t.Fatal(err)
	}
	if got := rec.all(); strings.Contains(got, ghToken[:12]) || strings.Contains(got, "ghp_R4nd") {
		t.Errorf("part of the token survived the cut")
	}
}

// Every capability interface of package core is either forwarded (and
// redacted) by Store or read-only and looked through with core.As. A new
// capability must be classified here, so that a new write path cannot
// bypass the redaction.
func TestStoreCoversEveryCoreCapability(t *testing.T) {
	writes := map[string]reflect.Type{
		"MemoryPlugin":     reflect.TypeFor[core.MemoryPlugin](),
		"Patcher":          reflect.TypeFor[core.Patcher](),
		"Importer":         reflect.TypeFor[core.Importer](),
		"CandidateBatcher": reflect.TypeFor[core.CandidateBatcher](),
		"RunRecorder":      reflect.TypeFor[core.RunRecorder](),
		"Auditor":          reflect.TypeFor[core.Auditor](),
		"AuditBatcher":     reflect.TypeFor[core.AuditBatcher](),
		"Unwrapper":        reflect.TypeFor[core.Unwrapper](),
		"ItemsProvider":    reflect.TypeFor[core.ItemsProvider](),
	}
	readOnly := map[string]string{
		"Getter": "reads", "Lister": "reads", "Statser": "reads", "Pinger": "reads", "ProjectLister": "reads",
		"Deleter":         "removes by id, carries no text",
		"Expirer":         "changes statuses by time, carries no text",
		"Receipts":        "server-made ids and key ids, no client text",
		"ReceiptRestorer": "restores a server-made receipt, no client text",
		"ItemStore":       "reached through ItemsProvider, whose Put Store redacts",
		"ItemBackend":     "a store's persistence under core.NewItemStore, reached through ItemsProvider, whose Put Store redacts",
		"ItemSearcher":    "ranks items, writes nothing",
	}
	st := reflect.TypeOf(&Store{})
	for name, it := range writes {
		if !st.Implements(it) {
			t.Errorf("Store does not implement core.%s", name)
		}
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", "core", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("core sources: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			if _, ok := ts.Type.(*ast.InterfaceType); !ok {
				return true
			}
			name := ts.Name.Name
			if _, ok := writes[name]; ok {
				return true
			}
			if _, ok := readOnly[name]; !ok {
				t.Errorf("core.%s is a new capability: forward and redact it in extract/redact.Store (a write) or list it as read-only here", name)
			}
			return true
		})
	}
}

// putRecorder is an item store that keeps the puts it receives.
type putRecorder struct {
	core.ItemStore
	puts []core.PutRequest
}

func (p *putRecorder) Put(_ context.Context, req core.PutRequest) (core.PutResult, error) {
	p.puts = append(p.puts, req)
	return core.PutResult{}, nil
}

// TestItemsPut: a value's strings are redacted; a secret in the key or a
// namespace segment refuses the put (it names the item) without echoing it.
func TestItemsPut(t *testing.T) {
	const secret = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
	rec := &putRecorder{}
	items := RedactItems(rec, nil)
	ctx := t.Context()
	if _, err := items.Put(ctx, core.PutRequest{Namespace: core.Namespace{"user", "a"}, Key: "k", Value: json.RawMessage(`{"text":"token ` + secret + `"}`)}); err != nil {
		t.Fatal(err)
	}
	if len(rec.puts) != 1 || strings.Contains(string(rec.puts[0].Value), secret) {
		t.Errorf("value not redacted: %v", rec.puts)
	}
	for _, req := range []core.PutRequest{
		{Namespace: core.Namespace{"user", "a"}, Key: "k " + secret},
		{Namespace: core.Namespace{"user", "a " + secret}, Key: "k"},
	} {
		req.Value = json.RawMessage(`{"text":"x"}`)
		_, err := items.Put(ctx, req)
		if !errors.Is(err, core.ErrSecret) || strings.Contains(err.Error(), secret) {
			t.Errorf("put %q %q: %v, want ErrSecret without the secret", req.Namespace, req.Key, err)
		}
	}
	if len(rec.puts) != 1 {
		t.Errorf("a put with a secret in its name reached the store: %d puts", len(rec.puts))
	}
}
