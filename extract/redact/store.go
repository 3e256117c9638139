package redact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/memex-dev/memex/core"
)

// Policy is what a Store does with a secret in QA content (question,
// answer, summary, tags, metadata, source, author).
type Policy int

const (
	// PolicyRedact replaces each secret with its marker and stores the rest.
	PolicyRedact Policy = iota
	// PolicyBlock refuses the write with core.ErrSecret (strict_secret_block).
	PolicyBlock
)

// Store is the one place every write to a memory store passes: a
// core.MemoryPlugin decorator that redacts every string a write carries —
// candidates (question, answer, summary, tags, metadata, source, author),
// hit and validation context, payload and client, human edits, imported
// records, run reports and audit entries — before the wrapped store, and
// whatever stands behind it (a file, Redis and its AOF, a remote service, an
// outbox spool), sees it. cmd/memex applies it to every store it opens and
// to the store of memex serve.
//
// Content is redacted before any cut to a size limit, so no cut leaves part
// of a secret. Ids a store keys on (run_id, event_id, receipt ids) are
// replaced by a digest when they hold a secret, so that equal ids stay equal
// and distinct ids distinct.
//
// Store implements every write capability of package core and forwards it;
// readers (Getter, Lister, Statser, ...) are found through Unwrap with
// core.As, which callers use instead of type assertions. Errors never hold
// the secret: a blocked write names the field and the rule.
type Store struct {
	p      core.MemoryPlugin
	r      *Redactor
	policy Policy
}

// WrapStore returns p behind redaction with r (nil: New()) and policy.
func WrapStore(p core.MemoryPlugin, r *Redactor, policy Policy) *Store {
	if r == nil {
		r = New()
	}
	return &Store{p: p, r: r, policy: policy}
}

var (
	_ core.MemoryPlugin     = (*Store)(nil)
	_ core.Unwrapper        = (*Store)(nil)
	_ core.Patcher          = (*Store)(nil)
	_ core.Importer         = (*Store)(nil)
	_ core.CandidateBatcher = (*Store)(nil)
	_ core.RunRecorder      = (*Store)(nil)
	_ core.Auditor          = (*Store)(nil)
	_ core.ItemsProvider    = (*Store)(nil)
	_ io.Closer             = (*Store)(nil)
)

// Unwrap returns the wrapped plugin.
func (s *Store) Unwrap() core.MemoryPlugin { return s.p }

// Name is the wrapped plugin's name.
func (s *Store) Name() string { return s.p.Name() }

// Search is the wrapped plugin's (a query is never stored).
func (s *Store) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	return s.p.Search(ctx, req)
}

// TaskGrade is the wrapped plugin's.
func (s *Store) TaskGrade(ctx context.Context, req core.TaskGradeRequest) (core.TaskGrade, error) {
	return s.p.TaskGrade(ctx, req)
}

// RecordHit redacts each reference's context and the ids.
func (s *Store) RecordHit(ctx context.Context, req core.HitRequest) (core.HitResult, error) {
	return s.p.RecordHit(ctx, s.hit(req))
}

// RecordCandidate redacts (or, under PolicyBlock, refuses) the candidate.
func (s *Store) RecordCandidate(ctx context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	req, err := s.candidate(req)
	if err != nil {
		return core.CandidateResult{}, err
	}
	return s.p.RecordCandidate(ctx, req)
}

// RecordValidation redacts context, payload and client (kept for audit)
// and the ids.
func (s *Store) RecordValidation(ctx context.Context, req core.ValidateRequest) (core.Record, error) {
	return s.p.RecordValidation(ctx, s.validation(req))
}

// RecordValidationBefore forwards a store's combined validation (the
// service's before → after audit) with the request redacted.
func (s *Store) RecordValidationBefore(ctx context.Context, req core.ValidateRequest) (before, after core.Record, err error) {
	vb, ok := core.As[validationRecorder](s.p)
	if !ok {
		after, err = s.RecordValidation(ctx, req)
		return core.Record{}, after, err
	}
	return vb.RecordValidationBefore(ctx, s.validation(req))
}

type validationRecorder interface {
	RecordValidationBefore(ctx context.Context, req core.ValidateRequest) (before, after core.Record, err error)
}

// RecordValidationAudited forwards a store's audited validation (the
// service's audit entry appended with the write) with the request and
// the entry redacted; over a store without it, RecordValidationBefore,
// and the caller appends the entry (audited false).
func (s *Store) RecordValidationAudited(ctx context.Context, req core.ValidateRequest,
	entry func(before, after core.Record) core.AuditEntry) (before, after core.Record, audited bool, err error) {
	va, ok := core.As[validationAuditor](s.p)
	if !ok {
		before, after, err = s.RecordValidationBefore(ctx, req)
		return before, after, false, err
	}
	return va.RecordValidationAudited(ctx, s.validation(req), func(before, after core.Record) core.AuditEntry {
		return s.redactAudit(entry(before, after))
	})
}

type validationAuditor interface {
	RecordValidationAudited(ctx context.Context, req core.ValidateRequest,
		entry func(before, after core.Record) core.AuditEntry) (before, after core.Record, audited bool, err error)
}

// Patch redacts a human edit's answer, summary and tags.
func (s *Store) Patch(ctx context.Context, req core.PatchRequest) (core.Record, error) {
	pt, ok := core.As[core.Patcher](s.p)
	if !ok {
		return core.Record{}, unsupported(s.p, "patch")
	}
	var c content
	if req.Answer != nil {
		a := s.text(&c, "answer", *req.Answer, core.MaxAnswerBytes)
		req.Answer = &a
	}
	if req.Summary != nil {
		v := s.text(&c, "summary", *req.Summary, core.MaxAnswerBytes)
		req.Summary = &v
	}
	if req.Tags != nil {
		ts := s.tags(&c, *req.Tags)
		req.Tags = &ts
	}
	if err := s.blocked(c); err != nil {
		return core.Record{}, err
	}
	req.EventID = s.id(req.EventID)
	return pt.Patch(ctx, req)
}

// Import redacts each record (its content hash follows the redacted text).
func (s *Store) Import(ctx context.Context, recs []core.Record) error {
	im, ok := core.As[core.Importer](s.p)
	if !ok {
		return unsupported(s.p, "import")
	}
	out := make([]core.Record, len(recs))
	for i, rec := range recs {
		var err error
		if out[i], err = s.record(rec); err != nil {
			return fmt.Errorf("record %d: %w", i+1, err)
		}
	}
	return im.Import(ctx, out)
}

// RecordCandidates redacts every candidate of the batch.
func (s *Store) RecordCandidates(ctx context.Context, reqs []core.CandidateRequest) ([]core.CandidateResult, error) {
	b, ok := core.As[core.CandidateBatcher](s.p)
	if !ok {
		return nil, unsupported(s.p, "record candidates in a batch")
	}
	out := make([]core.CandidateRequest, len(reqs))
	for i, req := range reqs {
		var err error
		if out[i], err = s.candidate(req); err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i+1, err)
		}
	}
	return b.RecordCandidates(ctx, out)
}

// RecordRun redacts every part of the report. Under PolicyBlock a
// candidate holding a secret is left out; the hit and validations are kept.
func (s *Store) RecordRun(ctx context.Context, r core.RunReport) (core.RunRecords, error) {
	rr, ok := core.As[core.RunRecorder](s.p)
	if !ok {
		return core.RunRecords{}, unsupported(s.p, "record a run in one write")
	}
	if r.Hit != nil {
		h := s.hit(*r.Hit)
		r.Hit = &h
	}
	if len(r.Validations) > 0 {
		vs := make([]core.ValidateRequest, len(r.Validations))
		for i, v := range r.Validations {
			vs[i] = s.validation(v)
		}
		r.Validations = vs
	}
	if r.Candidate != nil {
		c, err := s.candidate(*r.Candidate)
		if err != nil {
			r.Candidate = nil
		} else {
			r.Candidate = &c
		}
	}
	return rr.RecordRun(ctx, r)
}

// AppendAudit redacts an entry's ids and its before/after values.
func (s *Store) AppendAudit(ctx context.Context, e core.AuditEntry) error {
	a, ok := core.As[core.Auditor](s.p)
	if !ok {
		return unsupported(s.p, "keep an audit log")
	}
	return a.AppendAudit(ctx, s.redactAudit(e))
}

// redactAudit redacts an entry's ids, names and before/after values.
func (s *Store) redactAudit(e core.AuditEntry) core.AuditEntry {
	e.KeyID, e.RunID, e.ReceiptID = s.id(e.KeyID), s.id(e.RunID), s.id(e.ReceiptID)
	e.Namespace, _ = s.r.Redact(e.Namespace)
	e.Key, _ = s.r.Redact(e.Key)
	if e.Before != nil {
		v, _ := s.r.RedactValue(e.Before)
		e.Before = v.(map[string]any)
	}
	if e.After != nil {
		v, _ := s.r.RedactValue(e.After)
		e.After = v.(map[string]any)
	}
	return e
}

// AppendAudits redacts every entry like AppendAudit and appends them in
// one call (core.As finds it only over a store that batches).
func (s *Store) AppendAudits(ctx context.Context, es []core.AuditEntry) error {
	b, ok := core.As[core.AuditBatcher](s.p)
	if !ok {
		return unsupported(s.p, "append audit entries in a batch")
	}
	out := make([]core.AuditEntry, len(es))
	for i, e := range es {
		out[i] = s.redactAudit(e)
	}
	return b.AppendAudits(ctx, out)
}

// Audit is the wrapped store's.
func (s *Store) Audit(ctx context.Context, projectID string, since time.Time, limit int) ([]core.AuditEntry, error) {
	a, ok := core.As[core.Auditor](s.p)
	if !ok {
		return nil, unsupported(s.p, "keep an audit log")
	}
	return a.Audit(ctx, projectID, since, limit)
}

// Items is the wrapped plugin's namespaced store, its values redacted on
// every Put.
func (s *Store) Items() core.ItemStore {
	ip, ok := core.As[core.ItemsProvider](s.p)
	if !ok {
		return nil
	}
	return &Items{ItemStore: ip.Items(), r: s.r}
}

// Items is a core.ItemStore whose Put redacts every string of the value
// (keys too) before the wrapped store sees it.
type Items struct {
	core.ItemStore
	r *Redactor
}

// RedactItems returns items behind redaction with r (nil: New()).
func RedactItems(items core.ItemStore, r *Redactor) *Items {
	if r == nil {
		r = New()
	}
	return &Items{ItemStore: items, r: r}
}

// Put redacts the value's strings, then stores it. A key or namespace
// segment holding a secret is refused (core.ErrSecret): they name the item,
// so redacting them would store it under another name.
func (x *Items) Put(ctx context.Context, req core.PutRequest) (core.PutResult, error) {
	for i, name := range append([]string{req.Key}, req.Namespace...) {
		if _, fs := x.r.Redact(name); len(fs) > 0 {
			field := "key"
			if i > 0 {
				field = fmt.Sprintf("namespace[%d]", i-1)
			}
			return core.PutResult{}, fmt.Errorf("%s holds a secret (%s): name the item without it: %w", field, fs[0].Rule, core.ErrSecret)
		}
	}
	if len(req.Value) > 0 && x.r.Has(string(req.Value)) {
		var v any
		if err := json.Unmarshal(req.Value, &v); err == nil {
			red, _ := x.r.RedactValue(v)
			b, err := json.Marshal(red)
			if err != nil {
				return core.PutResult{}, fmt.Errorf("redact: %w", err)
			}
			req.Value = b
		} else {
			return core.PutResult{}, core.Invalid("value", "must be a JSON object")
		}
	}
	return x.ItemStore.Put(ctx, req)
}

// Close closes the wrapped plugin when it holds resources.
func (s *Store) Close() error {
	if c, ok := core.As[io.Closer](s.p); ok {
		return c.Close()
	}
	return nil
}

func unsupported(p core.MemoryPlugin, what string) error {
	return fmt.Errorf("the %s store cannot %s: %w", p.Name(), what, core.ErrInvalid)
}

// content collects the findings of one write's content fields.
type content struct{ findings []Finding }

// blocked is ErrSecret naming the first field and rule when the policy
// blocks and c found a secret.
func (s *Store) blocked(c content) error {
	if s.policy != PolicyBlock || len(c.findings) == 0 {
		return nil
	}
	f := c.findings[0]
	return fmt.Errorf("%s holds a secret (%s; %d finding(s)): %w", f.Field, f.Rule, len(c.findings), core.ErrSecret)
}

// text redacts a content field, then cuts it to max bytes (on a rune
// boundary) and redacts the cut again: no cut can keep part of a secret.
func (s *Store) text(c *content, field, v string, max int) string {
	out, fs := s.r.Redact(v)
	c.findings = append(c.findings, withField(fs, field)...)
	for range 3 {
		if max <= 0 || len(out) <= max {
			return out
		}
		out = cutBytes(out, max)
		out, _ = s.r.Redact(out)
	}
	return cutBytes(out, max)
}

func (s *Store) tags(c *content, tags []string) []string {
	if tags == nil {
		return nil
	}
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = s.text(c, fmt.Sprintf("tags[%d]", i), t, core.MaxTagBytes)
	}
	return out
}

func (s *Store) metadata(c *content, md map[string]any) map[string]any {
	if md == nil {
		return nil
	}
	v, fs := s.r.RedactValue(md)
	c.findings = append(c.findings, withPrefix(fs, "metadata")...)
	return v.(map[string]any)
}

func withPrefix(fs []Finding, prefix string) []Finding {
	for i := range fs {
		if fs[i].Field == "" {
			fs[i].Field = prefix
		} else {
			fs[i].Field = prefix + "." + fs[i].Field
		}
	}
	return fs
}

// id returns v, or a digest of v when v holds a secret: equal ids stay
// equal, distinct ids distinct, and the secret is gone.
func (s *Store) id(v string) string {
	if v == "" || !s.r.Has(v) {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "redacted-" + hex.EncodeToString(sum[:16])
}

// raw redacts every string of a JSON value; text that is not JSON is
// redacted as text and kept as a JSON string.
func (s *Store) raw(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || !s.r.Has(string(v)) {
		return v
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		out, _ := s.r.Redact(string(v))
		b, _ := json.Marshal(out)
		return b
	}
	x, _ = s.r.RedactValue(x)
	b, err := json.Marshal(x)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

func (s *Store) candidate(req core.CandidateRequest) (core.CandidateRequest, error) {
	var c content
	req.Question = s.text(&c, "question", req.Question, core.MaxQuestionBytes)
	req.Answer = s.text(&c, "answer", req.Answer, core.MaxAnswerBytes)
	req.Summary = s.text(&c, "summary", req.Summary, core.MaxAnswerBytes)
	req.Tags = s.tags(&c, req.Tags)
	req.Metadata = s.metadata(&c, req.Metadata)
	req.Source = s.text(&c, "source", req.Source, 0)
	req.Author = s.text(&c, "author", req.Author, 0)
	if err := s.blocked(c); err != nil {
		return req, err
	}
	req.RunID, req.EventID = s.id(req.RunID), s.id(req.EventID)
	return req, nil
}

func (s *Store) record(rec core.Record) (core.Record, error) {
	var c content
	q, a := rec.Question, rec.Answer
	rec.Question = s.text(&c, "question", rec.Question, core.MaxQuestionBytes)
	rec.Answer = s.text(&c, "answer", rec.Answer, core.MaxAnswerBytes)
	rec.Summary = s.text(&c, "summary", rec.Summary, core.MaxAnswerBytes)
	rec.Tags = s.tags(&c, rec.Tags)
	rec.Metadata = s.metadata(&c, rec.Metadata)
	rec.Source = s.text(&c, "source", rec.Source, 0)
	rec.Author = s.text(&c, "author", rec.Author, 0)
	rec.Evidence = s.raw(rec.Evidence) // source and creator ids
	if err := s.blocked(c); err != nil {
		return rec, err
	}
	if (rec.Question != q || rec.Answer != a) && rec.ContentHash != "" {
		rec.ContentHash = core.ContentHash(rec.Question, rec.Answer)
	}
	return rec, nil
}

func (s *Store) hit(req core.HitRequest) core.HitRequest {
	if len(req.References) > 0 {
		refs := slices.Clone(req.References)
		for i := range refs {
			refs[i].Context, _ = s.r.Redact(refs[i].Context)
			refs[i].MessageID = s.id(refs[i].MessageID)
		}
		req.References = refs
	}
	req.RunID, req.ReceiptID, req.EventID = s.id(req.RunID), s.id(req.ReceiptID), s.id(req.EventID)
	return req
}

func (s *Store) validation(req core.ValidateRequest) core.ValidateRequest {
	req.Context, req.Payload, req.Client = s.raw(req.Context), s.raw(req.Payload), s.raw(req.Client)
	req.Source = s.id(req.Source)
	req.RunID, req.ReceiptID, req.EventID = s.id(req.RunID), s.id(req.ReceiptID), s.id(req.EventID)
	return req
}

// cutBytes cuts s to at most n bytes on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
