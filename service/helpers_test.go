package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/plugins/embedded"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/wire"
)

// Test keys: the secret is the key id prefixed "secret-".
var (
	keyAgentA = Key{ID: "agent-a", Role: RoleAgent, Projects: []string{"a-*", "global"}}
	keyAgentB = Key{ID: "agent-b", Role: RoleAgent, Projects: []string{"b-*"}}
	keyAdmin  = Key{ID: "admin", Role: RoleAdmin, Projects: []string{"*"}}
	keyAdminA = Key{ID: "admin-a", Role: RoleAdmin, Projects: []string{"a-*"}}
)

func secretOf(k Key) string { return "secret-" + k.ID }

func withHash(keys ...Key) []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		k.SecretSHA256 = HashSecret(secretOf(k))
		out[i] = k
	}
	return out
}

// teamStore is the embedded store plus in-memory receipts, an audit log and
// a project list: the team capabilities the embedded store does not have.
type teamStore struct {
	*embedded.Store

	mu       sync.Mutex
	receipts map[string]core.Receipt
	redeemed map[string]string
	audit    []core.AuditEntry
	projects []string
}

var (
	_ core.Receipts      = (*teamStore)(nil)
	_ core.Auditor       = (*teamStore)(nil)
	_ core.ProjectLister = (*teamStore)(nil)
)

func (t *teamStore) IssueReceipt(_ context.Context, r core.Receipt) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.receipts[r.ID] = r
	return nil
}

// RedeemReceipt accepts a receipt once, from the source it was issued to
// (as plugins/redis does).
func (t *teamStore) RedeemReceipt(_ context.Context, projectID, id, source string, now time.Time) (core.Receipt, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.receipts[id]
	if !ok || r.ProjectID != projectID {
		return core.Receipt{}, fmt.Errorf("receipt %s: %w", id, core.ErrNotFound)
	}
	if !now.Before(r.ExpiresAt) {
		return core.Receipt{}, fmt.Errorf("receipt %s: %w", id, core.ErrReceiptExpired)
	}
	if r.Source != source {
		return core.Receipt{}, fmt.Errorf("receipt %s: %w", id, core.ErrReceiptOtherSource)
	}
	if _, used := t.redeemed[id]; used {
		return core.Receipt{}, fmt.Errorf("receipt %s: %w", id, core.ErrReceiptUsed)
	}
	t.redeemed[id] = source
	return r, nil
}

func (t *teamStore) AppendAudit(_ context.Context, e core.AuditEntry) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.audit = append(t.audit, e)
	return nil
}

func (t *teamStore) Audit(_ context.Context, projectID string, since time.Time, limit int) ([]core.AuditEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []core.AuditEntry
	for _, e := range t.audit {
		if e.ProjectID == projectID && !e.Time.Before(since) && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (t *teamStore) auditEntries() []core.AuditEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.audit)
}

func (t *teamStore) Projects(ctx context.Context) ([]core.ProjectSummary, error) {
	t.mu.Lock()
	ps := slices.Clone(t.projects)
	t.mu.Unlock()
	var out []core.ProjectSummary
	for _, p := range ps {
		st, err := t.Stats(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, core.ProjectSummary{ProjectID: p, Total: st.Total, ByStatus: st.ByStatus, ByLevel: st.ByLevel})
	}
	return out, nil
}

// newEmbedded opens an embedded store with the service's trust flavour
// (the creator's own reports do not count: SPEC §5.1), as memex serve does.
func newEmbedded(tb testing.TB) *embedded.Store {
	tb.Helper()
	s, err := embedded.Open(filepath.Join(tb.TempDir(), "memex.db"), embedded.WithKeepOpen(), embedded.WithTrustParams(trust.DefaultParams()))
	if err != nil {
		tb.Fatalf("embedded.Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func newTeamStore(tb testing.TB) *teamStore {
	return &teamStore{Store: newEmbedded(tb), receipts: map[string]core.Receipt{}, redeemed: map[string]string{},
		projects: []string{"a-proj", "b-proj", "global"}}
}

// env is one test server and its store.
type env struct {
	t     testing.TB
	srv   *Server
	ts    *httptest.Server
	store core.MemoryPlugin
	team  *teamStore // nil when the store is plain
	reg   *prometheus.Registry
}

type envOpt func(*Config, *[]Option)

func withConfig(f func(*Config)) envOpt { return func(c *Config, _ *[]Option) { f(c) } }
func withOpts(o ...Option) envOpt {
	return func(_ *Config, os *[]Option) { *os = append(*os, o...) }
}

func defaultTestConfig() Config {
	cfg := DefaultConfig()
	cfg.Keys = withHash(keyAgentA, keyAgentB, keyAdmin, keyAdminA)
	cfg.ExpiryInterval = -1
	return cfg
}

// newEnv serves the team store (the embedded store with receipts, audit and
// projects) with the four test keys.
func newEnv(tb testing.TB, eo ...envOpt) *env {
	tb.Helper()
	team := newTeamStore(tb)
	e := newEnvFor(tb, team, eo...)
	e.team = team
	return e
}

func newEnvFor(tb testing.TB, store core.MemoryPlugin, eo ...envOpt) *env {
	tb.Helper()
	cfg := defaultTestConfig()
	reg := prometheus.NewRegistry()
	opts := []Option{WithRegisterer(reg)}
	for _, o := range eo {
		o(&cfg, &opts)
	}
	srv, err := New(store, cfg, opts...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(srv)
	tb.Cleanup(ts.Close)
	return &env{t: tb, srv: srv, ts: ts, store: store, reg: reg}
}

// resp is one answered request.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		tb.Fatalf("decode %s: %v", r.body, err)
	}
}

// apiErr decodes the one error shape.
func (r resp) apiErr(tb testing.TB) wire.APIError {
	tb.Helper()
	var eb wire.ErrorResponse
	r.decode(tb, &eb)
	if eb.Error.Code == "" || eb.Error.Message == "" {
		tb.Fatalf("error body without code or message: %s", r.body)
	}
	return eb.Error
}

// do sends a request as key k (zero Key: no credentials). body is JSON
// (a string or []byte is sent as is).
func (e *env) do(k Key, method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		bs, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(bs)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if k.ID != "" {
		req.Header.Set("Authorization", "Bearer "+secretOf(k))
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// must sends a request and fails unless the status is want.
func (e *env) must(want int, k Key, method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	r := e.do(k, method, path, body, hdr...)
	if r.status != want {
		e.t.Fatalf("%s %s as %q: status %d, want %d; body %s", method, path, k.ID, r.status, want, r.body)
	}
	return r
}

// addQA records a candidate as k and returns its id.
func (e *env) addQA(k Key, project, question, answer string) string {
	e.t.Helper()
	r := e.must(http.StatusCreated, k, "POST", "/v1/qa/candidates", map[string]any{
		"project_id": project, "question": question, "answer": answer, "tags": []string{"test"}})
	var res core.CandidateResult
	r.decode(e.t, &res)
	if res.QAID == "" {
		e.t.Fatalf("candidate without qa_id: %s", r.body)
	}
	return res.QAID
}

// record reads a QA straight from the store.
func (e *env) record(project, id string) core.Record {
	e.t.Helper()
	rec, err := e.store.(core.Getter).Get(context.Background(), project, id)
	if err != nil {
		e.t.Fatalf("Get %s: %v", id, err)
	}
	return rec
}

// errStore is a MemoryPlugin whose every method returns err.
type errStore struct{ err error }

var _ core.MemoryPlugin = errStore{}

func (s errStore) Name() string { return "err" }
func (s errStore) Search(context.Context, core.SearchRequest) ([]core.Match, error) {
	return nil, s.err
}
func (s errStore) RecordHit(context.Context, core.HitRequest) (core.HitResult, error) {
	return core.HitResult{}, s.err
}
func (s errStore) RecordCandidate(context.Context, core.CandidateRequest) (core.CandidateResult, error) {
	return core.CandidateResult{}, s.err
}
func (s errStore) RecordValidation(context.Context, core.ValidateRequest) (core.Record, error) {
	return core.Record{}, s.err
}
func (s errStore) TaskGrade(context.Context, core.TaskGradeRequest) (core.TaskGrade, error) {
	return core.TaskGrade{}, s.err
}
func (s errStore) Ping(context.Context) error { return s.err }

var errUnavailable = fmt.Errorf("test store: %w", core.ErrUnavailable)
