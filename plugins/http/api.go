package httpstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
	"github.com/memex-dev/memex/wire"
)

// Outbox operation names (the "op" of a spooled entry).
const (
	opHit       = "hit"
	opCandidate = "candidate"
	opValidate  = "validate"
)

// read sends a read-only call. While the cooldown lasts it fails at once.
func (s *Store) read(ctx context.Context, c call) (response, error) {
	if err := ctx.Err(); err != nil {
		return response{}, ctxErr(c.op, err)
	}
	if s.offline() {
		return response{}, fmt.Errorf("http: %s: %w: %w", c.op, errOffline, core.ErrUnavailable)
	}
	resp, err := s.do(ctx, c)
	s.note(err)
	return resp, err
}

// write sends a write. A post record (spool != "") that the service could
// not take is appended to the outbox and reported as a *SpooledError.
func (s *Store) write(ctx context.Context, c call, spool string) (response, error) {
	if err := ctx.Err(); err != nil {
		return response{}, ctxErr(c.op, err)
	}
	canSpool := spool != "" && s.outbox != nil
	if s.offline() {
		if canSpool {
			return response{}, s.spool(spool, c, errOffline)
		}
		return response{}, fmt.Errorf("http: %s: %w: %w", c.op, errOffline, core.ErrUnavailable)
	}
	resp, err := s.do(ctx, c)
	s.note(err)
	if err != nil && canSpool && s.shouldSpool(err) {
		return resp, s.spool(spool, c, err)
	}
	return resp, err
}

// note starts the cooldown after an unavailable answer and ends it after a
// good one.
func (s *Store) note(err error) {
	switch {
	case err == nil:
		s.setOffline(false)
	case errors.Is(err, core.ErrUnavailable) && !errors.Is(err, context.Canceled):
		s.setOffline(true)
	}
}

// shouldSpool: the write may not have been applied and resending it is
// safe. A cancelled call is the caller's choice, not an outage.
func (s *Store) shouldSpool(err error) bool {
	if errors.Is(err, context.Canceled) || !errors.Is(err, core.ErrUnavailable) {
		return false
	}
	if !s.cfg.Compat {
		return true
	}
	var te *transportError
	return errors.As(err, &te) && te.neverSent
}

func ctxErr(op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("http: %s: %w (%w)", op, err, core.ErrUnavailable)
	}
	return fmt.Errorf("http: %s: %w", op, err)
}

func invalid(op string, err error) error { return fmt.Errorf("http: %s: %w", op, err) }

// encode marshals a payload. Payloads are plain structs of strings,
// numbers and maps; only a caller's unencodable metadata value fails.
func encode(op string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("http: %s: %w", op, core.Invalid("metadata", "cannot be encoded as JSON"))
	}
	return b, nil
}

// Search implements core.MemoryPlugin (POST /v1/qa/search). Limit 0 is
// sent as the default (6); in Compat mode the limit is clamped to 1–20.
func (s *Store) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	const op = "search"
	if err := req.Normalize(); err != nil {
		return nil, invalid(op, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, err)
	}
	if strings.TrimSpace(req.Query) == "" {
		return []core.Match{}, nil
	}
	if s.cfg.Compat {
		req.Limit = min(max(req.Limit, 1), CompatMaxLimit)
		req.Explain = false
	}
	body, err := encode(op, req)
	if err != nil {
		return nil, err
	}
	resp, err := s.read(ctx, call{op: op, method: http.MethodPost, path: wire.RouteSearch, body: body})
	if err != nil {
		return nil, err
	}
	ms, skipped, err := decodeSearch(op, resp)
	if err != nil {
		return nil, err
	}
	if skipped > 0 {
		s.log.Debug("search response: items skipped", "plugin", "http", "op", op, "skipped", skipped)
	}
	return ms, nil
}

// RecordHit implements core.MemoryPlugin (POST /v1/qa/hit). The request's
// EventID (generated when empty) is its Idempotency-Key.
func (s *Store) RecordHit(ctx context.Context, req core.HitRequest) (core.HitResult, error) {
	const op = "record hit"
	if err := req.Validate(); err != nil {
		return core.HitResult{}, invalid(op, err)
	}
	if req.EventID == "" {
		req.EventID = newKey()
	}
	body, err := encode(op, req)
	if err != nil {
		return core.HitResult{}, err
	}
	resp, err := s.write(ctx, call{op: op, method: http.MethodPost, path: wire.RouteHit, body: body, key: req.EventID}, opHit)
	if err != nil {
		return core.HitResult{}, err
	}
	return decodeHit(op, resp, len(req.References))
}

// RecordCandidate implements core.MemoryPlugin (POST /v1/qa/candidates).
// Against the original service the result has no qa_id and status
// "pending" (it creates candidates asynchronously).
func (s *Store) RecordCandidate(ctx context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	const op = "record candidate"
	if err := req.Validate(); err != nil {
		return core.CandidateResult{}, invalid(op, err)
	}
	if req.EventID == "" {
		req.EventID = newKey()
	}
	body, err := encode(op, req)
	if err != nil {
		return core.CandidateResult{}, err
	}
	resp, err := s.write(ctx, call{op: op, method: http.MethodPost, path: wire.RouteCandidates, body: body, key: req.EventID}, opCandidate)
	if err != nil {
		return core.CandidateResult{}, err
	}
	return decodeCandidate(op, resp)
}

// RecordValidation implements core.MemoryPlugin (POST /v1/qa/validate).
// The result is sent as "pass" or "fail" (the original counted "success"
// as a fail). A 204 gives a record holding only the ids.
func (s *Store) RecordValidation(ctx context.Context, req core.ValidateRequest) (core.Record, error) {
	const op = "record validation"
	if err := req.Validate(); err != nil {
		return core.Record{}, invalid(op, err)
	}
	if req.Result != "" {
		if r, err := core.ParseResult(req.Result); err == nil {
			req.Result = string(r)
		}
	}
	if req.EventID == "" {
		req.EventID = newKey()
	}
	body, err := encode(op, req)
	if err != nil {
		return core.Record{}, err
	}
	resp, err := s.write(ctx, call{op: op, method: http.MethodPost, path: wire.RouteValidate, body: body, key: req.EventID}, opValidate)
	if err != nil {
		return core.Record{}, err
	}
	ans, err := decodeRecordAnswer(op, resp)
	if err != nil {
		return core.Record{}, err
	}
	rec := ans.rec
	if !ans.ok {
		rec = core.Record{QAID: req.QAID, ProjectID: req.ProjectID, Level: core.LevelName(0), Tags: []string{}, Metadata: map[string]any{}}
	}
	if ans.applied != nil && !*ans.applied {
		return rec, &NotAppliedError{Op: op, QAID: req.QAID, Reason: ans.reason, Record: rec}
	}
	return rec, nil
}

// TaskGrade implements core.MemoryPlugin (POST /v1/task/grade).
func (s *Store) TaskGrade(ctx context.Context, req core.TaskGradeRequest) (core.TaskGrade, error) {
	const op = "task grade"
	body, err := encode(op, req)
	if err != nil {
		return core.TaskGrade{}, err
	}
	resp, err := s.read(ctx, call{op: op, method: http.MethodPost, path: wire.RouteGrade, body: body})
	if err != nil {
		return core.TaskGrade{}, err
	}
	var g core.TaskGrade
	if err := decodeObject(op, resp, &g, ""); err != nil {
		return core.TaskGrade{}, err
	}
	if g.TaskLevel == "" {
		return core.TaskGrade{}, errUndecodable(op, resp.status, "no task_level")
	}
	return g, nil
}

func qaPath(prefix, qaID string) string { return prefix + "/" + url.PathEscape(qaID) }

func projectQuery(projectID string) url.Values { return url.Values{"project_id": {projectID}} }

func checkIDs(op, projectID, qaID string) error {
	if err := core.ValidateProjectID(projectID); err != nil {
		return invalid(op, err)
	}
	if err := core.ValidateQAID(qaID); err != nil {
		return invalid(op, err)
	}
	return nil
}

// Get implements core.Getter (GET /v1/qa/{qa_id}?project_id=).
func (s *Store) Get(ctx context.Context, projectID, qaID string) (core.Record, error) {
	const op = "get"
	if err := checkIDs(op, projectID, qaID); err != nil {
		return core.Record{}, err
	}
	resp, err := s.read(ctx, call{op: op, method: http.MethodGet, path: qaPath(wire.RouteQA, qaID), query: projectQuery(projectID)})
	if err != nil {
		return core.Record{}, err
	}
	ans, err := decodeRecordAnswer(op, resp)
	if err != nil {
		return core.Record{}, err
	}
	if !ans.ok {
		return core.Record{}, errUndecodable(op, resp.status, "no record")
	}
	return ans.rec, nil
}

// List implements core.Lister (GET /v1/qa?project_id=&status=&min_level=&q=&cursor=&limit=).
// A full export (req.Evidence) reads GET /admin/v1/export, whose records
// carry their evidence: it needs an admin key (core.ErrForbidden
// otherwise). The original service keeps no evidence: there it is a plain
// list.
func (s *Store) List(ctx context.Context, req core.ListRequest) (core.ListPage, error) {
	const op = "list"
	if err := req.Validate(); err != nil {
		return core.ListPage{}, invalid(op, err)
	}
	path := wire.RouteQA
	if req.Evidence && !s.cfg.Compat {
		path = wire.RouteExport
	}
	q := projectQuery(req.ProjectID)
	if req.Status != "" {
		q.Set("status", string(req.Status))
	}
	if req.MinLevel > 0 {
		q.Set("min_level", strconv.Itoa(req.MinLevel))
	}
	if req.Q != "" {
		q.Set("q", req.Q)
	}
	if req.Cursor != "" {
		q.Set("cursor", req.Cursor)
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	resp, err := s.read(ctx, call{op: op, method: http.MethodGet, path: path, query: q})
	if err != nil {
		return core.ListPage{}, err
	}
	return decodeList(op, resp)
}

// importBody bounds one POST /admin/v1/import body below the service's
// default request limit (1 MiB).
const importBody = 900 << 10

// Import implements core.Importer (POST /admin/v1/import, an admin key's
// route: records are stored as they are, evidence included). Records go in
// requests of at most 1,000 records and importBody bytes; a record too
// large for one request is the service's 413. Requests already sent stay
// imported when a later one fails. A record with an empty answer is the
// caller's question-only QA (core.Importer's contract), so the request
// opts in with questions_only, which the service otherwise refuses.
func (s *Store) Import(ctx context.Context, recs []core.Record) error {
	const op = "import"
	if s.cfg.Compat {
		return fmt.Errorf("http: %s: the original memory service has no import: %w", op, errors.ErrUnsupported)
	}
	var batch []json.RawMessage
	size, questionsOnly := 0, false
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		body, err := encode(op, struct {
			Records       []json.RawMessage `json:"records"`
			QuestionsOnly bool              `json:"questions_only,omitempty"`
		}{batch, questionsOnly})
		if err != nil {
			return err
		}
		batch, size, questionsOnly = batch[:0], 0, false
		_, err = s.write(ctx, call{op: op, method: http.MethodPost, path: wire.RouteImport, body: body, key: newKey()}, "")
		return err
	}
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("http: %s: record %d: %w", op, i, core.Invalid("metadata", "cannot be encoded as JSON"))
		}
		if len(batch) == 1000 || len(batch) > 0 && size+len(b) > importBody {
			if err := send(); err != nil {
				return err
			}
		}
		batch = append(batch, b)
		size += len(b) + 1
		questionsOnly = questionsOnly || !ledger.Showable(r.Answer)
	}
	return send()
}

// Delete implements core.Deleter (DELETE /v1/qa/{qa_id}?project_id=). It is
// never spooled: a person is waiting for the answer.
func (s *Store) Delete(ctx context.Context, projectID, qaID string) error {
	const op = "delete"
	if err := checkIDs(op, projectID, qaID); err != nil {
		return err
	}
	resp, err := s.write(ctx, call{op: op, method: http.MethodDelete, path: qaPath(wire.RouteQA, qaID), query: projectQuery(projectID), key: newKey()}, "")
	if err != nil {
		return err
	}
	if b := payload(resp); b != nil {
		var v struct {
			Deleted *bool `json:"deleted"`
		}
		if json.Unmarshal(b, &v) == nil && v.Deleted != nil && !*v.Deleted {
			return fmt.Errorf("http: %s: %s: %w", op, qaID, core.ErrNotFound)
		}
	}
	return nil
}

// Patch implements core.Patcher: a human verdict or edit. A status change
// alone that is a human verdict goes to its own route (POST
// /admin/v1/qa/{qa_id}/{verdict}, audited under the verdict's name);
// anything else is PATCH /admin/v1/qa/{qa_id}. Never spooled.
func (s *Store) Patch(ctx context.Context, req core.PatchRequest) (core.Record, error) {
	const op = "patch"
	if err := req.Validate(); err != nil {
		return core.Record{}, invalid(op, err)
	}
	if req.EventID == "" {
		req.EventID = newKey()
	}
	c := call{op: op, method: http.MethodPatch, path: qaPath(wire.RouteAdminQA, req.QAID),
		query: projectQuery(req.ProjectID), key: req.EventID}
	var err error
	if v, ok := verdictOnly(req); ok {
		c.method, c.path = http.MethodPost, wire.VerdictPath(req.QAID, v)
		c.body, err = encode(op, wire.VerdictRequest{ProjectID: req.ProjectID})
	} else {
		c.body, err = encode(op, req)
	}
	if err != nil {
		return core.Record{}, err
	}
	resp, err := s.write(ctx, c, "")
	if err != nil {
		return core.Record{}, err
	}
	ans, err := decodeRecordAnswer(op, resp)
	if err != nil {
		return core.Record{}, err
	}
	if !ans.ok {
		return s.Get(ctx, req.ProjectID, req.QAID)
	}
	return ans.rec, nil
}

// verdictOnly is the human verdict req gives when it changes nothing but
// the status.
func verdictOnly(req core.PatchRequest) (core.Verdict, bool) {
	if req.Status == nil || req.Answer != nil || req.Summary != nil || req.Tags != nil {
		return "", false
	}
	return core.VerdictFor(*req.Status)
}

// Expire implements core.Expirer (POST /v1/qa/expire {batch_size, now}).
// now is sent as an RFC 3339 "now" field (omitted when zero); a service that
// does not take it (the original, or memex serve for a non-admin key) uses
// its own clock. batch is clamped to 1–1000 (0 → 200).
func (s *Store) Expire(ctx context.Context, now time.Time, batch int) (int, error) {
	const op = "expire"
	if batch <= 0 {
		batch = 200
	}
	req := struct {
		BatchSize int    `json:"batch_size"`
		Now       string `json:"now,omitempty"`
	}{BatchSize: min(batch, 1000)}
	if !now.IsZero() {
		req.Now = now.UTC().Format(time.RFC3339Nano)
	}
	body, _ := encode(op, req)
	resp, err := s.write(ctx, call{op: op, method: http.MethodPost, path: wire.RouteExpire, body: body, key: newKey()}, "")
	if err != nil {
		return 0, err
	}
	var v struct {
		Expired int `json:"expired"`
	}
	if err := decodeObject(op, resp, &v, ""); err != nil {
		return 0, err
	}
	return v.Expired, nil
}

// Stats implements core.Statser (GET /admin/v1/projects/{id}/stats).
func (s *Store) Stats(ctx context.Context, projectID string) (core.ProjectStats, error) {
	const op = "stats"
	if err := core.ValidateProjectID(projectID); err != nil {
		return core.ProjectStats{}, invalid(op, err)
	}
	resp, err := s.read(ctx, call{op: op, method: http.MethodGet, path: wire.RouteProjects + "/" + url.PathEscape(projectID) + "/stats"})
	if err != nil {
		return core.ProjectStats{}, err
	}
	var st core.ProjectStats
	if err := decodeObject(op, resp, &st, "stats"); err != nil {
		return core.ProjectStats{}, err
	}
	if st.ProjectID == "" {
		st.ProjectID = projectID
	}
	return st, nil
}

// Projects implements core.ProjectLister (GET /admin/v1/projects).
func (s *Store) Projects(ctx context.Context) ([]core.ProjectSummary, error) {
	const op = "projects"
	resp, err := s.read(ctx, call{op: op, method: http.MethodGet, path: wire.RouteProjects})
	if err != nil {
		return nil, err
	}
	return decodeProjects(op, resp)
}

// Ping implements core.Pinger (GET /readyz): one attempt, no cooldown.
func (s *Store) Ping(ctx context.Context) error {
	const op = "ping"
	if err := ctx.Err(); err != nil {
		return ctxErr(op, err)
	}
	c := call{op: op, method: http.MethodGet, path: wire.RouteReady}
	resp, err := s.once(ctx, c)
	if err == nil {
		err = checkBody(op, resp)
	}
	s.note(err)
	return err
}
