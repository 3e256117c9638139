package service

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
	"github.com/memex-dev/memex/wire"
)

func (s *Server) adminProjects(c echo.Context) error {
	pl, ok := core.As[core.ProjectLister](s.store)
	if !ok {
		return &notImplementedError{what: "listing projects on the " + s.store.Name() + " store"}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	all, err := pl.Projects(ctx)
	if err != nil {
		return s.storeErr("projects", err)
	}
	who := callerOf(c)
	out := wire.ProjectsResponse{Projects: []core.ProjectSummary{}}
	for _, p := range all {
		if who.may(p.ProjectID) { // an admin sees the projects its patterns cover
			out.Projects = append(out.Projects, p)
		}
	}
	return writeJSON(c, http.StatusOK, out)
}

// maxImportRecords bounds one import request (a full export page's size).
const maxImportRecords = 1000

// adminImport serves POST /admin/v1/import: full records stored as they
// are, evidence included (an admin route: evidence is votes, and an agent
// key that wrote it would forge them). Every record's project must be
// covered by the key's patterns; the import is audited per project.
func (s *Server) adminImport(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req wire.ImportRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	if len(req.Records) == 0 {
		return core.Invalid("records", "is required")
	}
	if len(req.Records) > maxImportRecords {
		return core.Invalid("records", "more than %d records", maxImportRecords)
	}
	count := map[string]int{}
	var order []string
	for i, r := range req.Records {
		if err := core.ValidateProjectID(r.ProjectID); err != nil {
			return err
		}
		if !req.QuestionsOnly && !ledger.Showable(r.Answer) {
			return core.Invalid(fmt.Sprintf("records[%d].answer", i),
				"is empty (a QA needs an answer; questions_only keeps question-only records, which are searched but never injected)")
		}
		if count[r.ProjectID] == 0 {
			if err := authorize(c, r.ProjectID); err != nil {
				return err
			}
			order = append(order, r.ProjectID)
		}
		count[r.ProjectID]++
	}
	im, ok := core.As[core.Importer](s.store)
	if !ok {
		return &notImplementedError{what: "importing records on the " + s.store.Name() + " store"}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	if err := im.Import(ctx, req.Records); err != nil {
		return s.storeErr("import", err)
	}
	for _, p := range order {
		s.stats.drop(p)
		s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: p, Action: "import", Weight: 1,
			After: map[string]any{"records": count[p]}})
	}
	return writeJSON(c, http.StatusOK, wire.ImportResponse{Imported: len(req.Records)})
}

func (s *Server) adminStats(c echo.Context) error {
	p := c.Param("project_id")
	if err := core.ValidateProjectID(p); err != nil {
		return err
	}
	if err := authorize(c, p); err != nil {
		return err
	}
	st, ok := core.As[core.Statser](s.store)
	if !ok {
		return &notImplementedError{what: "project statistics on the " + s.store.Name() + " store"}
	}
	maxAge, err := queryInt(c, "max_age")
	if err != nil {
		return err
	}
	if maxAge < 0 || maxAge > 3600 {
		return core.Invalid("max_age", "must be 0-3600 seconds")
	}
	if ps, ok := s.stats.get(p, s.now(), time.Duration(maxAge)*time.Second); ok {
		return writeJSON(c, http.StatusOK, ps)
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	ps, err := st.Stats(ctx, p)
	if err != nil {
		return s.storeErr("stats", err)
	}
	s.stats.put(p, ps, s.now()) // aged from the end of the scan, which can take seconds
	return writeJSON(c, http.StatusOK, ps)
}

// statsCache keeps the latest stats of each project, read back by
// GET /admin/v1/projects/{id}/stats?max_age=N: a caller that accepts a
// figure up to N seconds old (the dashboard) is spared a scan of every QA
// per page. Without max_age the stats are computed afresh. A human verdict
// or delete through this server drops its project's entry.
type statsCache struct {
	mu sync.Mutex
	m  map[string]cachedStats
}

type cachedStats struct {
	st core.ProjectStats
	at time.Time
}

func newStatsCache() *statsCache { return &statsCache{m: map[string]cachedStats{}} }

func (c *statsCache) get(project string, now time.Time, maxAge time.Duration) (core.ProjectStats, bool) {
	if maxAge <= 0 {
		return core.ProjectStats{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[project]
	if !ok || now.Sub(e.at) > maxAge {
		return core.ProjectStats{}, false
	}
	return e.st, true
}

func (c *statsCache) put(project string, st core.ProjectStats, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[project]; ok && e.at.After(at) {
		return
	}
	c.m[project] = cachedStats{st: st, at: at}
}

func (c *statsCache) drop(project string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, project)
}

func (s *Server) adminPatch(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.PatchRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	id := c.Param("qa_id")
	if req.QAID != "" && req.QAID != id {
		return core.Invalid("qa_id", "differs from the qa_id of the path")
	}
	req.QAID = id
	if req.ProjectID == "" {
		req.ProjectID = c.QueryParam("project_id")
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if req.Tags != nil {
		if len(*req.Tags) > core.MaxTags {
			return core.Invalid("tags", "more than %d tags", core.MaxTags)
		}
		for _, t := range *req.Tags {
			if t == "" || len(t) > core.MaxTagBytes {
				return core.Invalid("tags", "each tag must be 1-%d bytes", core.MaxTagBytes)
			}
		}
	}
	if req.Summary != nil && len(*req.Summary) > core.MaxAnswerBytes {
		return core.Invalid("summary", "longer than %d bytes", core.MaxAnswerBytes)
	}
	return s.patchAudited(c, body, req, "patch")
}

// adminVerdict serves POST /admin/v1/qa/{qa_id}/{verdict}: the human
// verdict v, with project_id in the optional body or the query.
func (s *Server) adminVerdict(v core.Verdict) echo.HandlerFunc {
	st, _ := v.Status()
	return func(c echo.Context) error {
		body, err := readBody(c)
		if err != nil {
			return err
		}
		var vr wire.VerdictRequest
		if err := decodeJSON(body, &vr, true); err != nil {
			return err
		}
		q := c.QueryParam("project_id")
		if vr.ProjectID != "" && q != "" && vr.ProjectID != q {
			return core.Invalid("project_id", "the body and the query name different projects")
		}
		req := core.PatchRequest{ProjectID: firstNonEmpty(vr.ProjectID, q), QAID: c.Param("qa_id"), Status: &st}
		if err := req.Validate(); err != nil {
			return err
		}
		return s.patchAudited(c, body, req, string(v))
	}
}

// patchAudited applies a human verdict or edit through the store's
// Patcher (the ledger's Verdict rule) and audits it as action: who (the
// key), the QA, and its status, level and trust before and after.
func (s *Server) patchAudited(c echo.Context, body []byte, req core.PatchRequest, action string) error {
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	pt, ok := core.As[core.Patcher](s.store)
	if !ok {
		return &notImplementedError{what: "human verdicts on the " + s.store.Name() + " store"}
	}
	return s.idempotent(c, body, func(eventID string) (int, any, error) {
		ctx, cancel := s.reqCtx(c)
		defer cancel()
		req.EventID = firstNonEmpty(eventID, scopedEventID(c, req.EventID))
		var before map[string]any
		if g, ok := core.As[core.Getter](s.store); ok {
			r, err := g.Get(ctx, req.ProjectID, req.QAID)
			if err != nil {
				return 0, nil, s.storeErr("get", err)
			}
			if err := s.checkPatchQuota(r, req); err != nil {
				return 0, nil, err
			}
			before = summary(r)
		}
		rec, err := pt.Patch(ctx, req)
		if err != nil {
			return 0, nil, s.storeErr("patch", err)
		}
		s.stats.drop(req.ProjectID)
		after := summary(rec)
		after["answer_edited"] = req.Answer != nil
		after["tags_edited"] = req.Tags != nil
		s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: req.ProjectID, QAID: req.QAID, Action: action,
			Weight: 1, Before: before, After: after})
		return http.StatusOK, wire.RecordResponse{Record: rec}, nil
	})
}

func (s *Server) adminAudit(c echo.Context) error {
	p, err := projectQuery(c)
	if err != nil {
		return err
	}
	var since time.Time
	if v := c.QueryParam("since"); v != "" {
		t, ok := wire.ParseTime(v)
		if !ok {
			return core.Invalid("since", "must be an RFC 3339 time")
		}
		since = t
	}
	var f auditFilter
	if v := c.QueryParam("until"); v != "" {
		t, ok := wire.ParseTime(v)
		if !ok {
			return core.Invalid("until", "must be an RFC 3339 time")
		}
		f.until = t
	}
	if f.qaID = c.QueryParam("qa_id"); f.qaID != "" {
		if err := core.ValidateQAID(f.qaID); err != nil {
			return err
		}
	}
	if f.keyID = c.QueryParam("key_id"); len(f.keyID) > 128 {
		return core.Invalid("key_id", "longer than 128 bytes")
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if limit < 0 || limit > 1000 {
		return core.Invalid("limit", "must be between 1 and 1000")
	}
	if limit == 0 {
		limit = 100
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	var es []core.AuditEntry
	if f == (auditFilter{}) {
		es, err = s.auditor.Audit(ctx, p, since, limit)
	} else {
		es, err = s.auditFiltered(ctx, p, since, f, limit)
	}
	if err != nil {
		return s.storeErr("audit", err)
	}
	if es == nil {
		es = []core.AuditEntry{}
	}
	return writeJSON(c, http.StatusOK, wire.AuditResponse{Entries: es})
}

// auditFilter narrows GET /admin/v1/audit: entries up to until, by one
// key, about one QA (zero fields match everything).
type auditFilter struct {
	until       time.Time
	keyID, qaID string
}

func (f auditFilter) match(e core.AuditEntry) bool {
	return (f.keyID == "" || e.KeyID == f.keyID) && (f.qaID == "" || e.QAID == f.qaID)
}

// auditScanMax bounds how many entries one filtered read walks (the
// Redis store caps each project's log at 10,000).
const auditScanMax = 50_000

// auditFiltered reads the log page by page from since and keeps the first
// limit entries that match f, stopping past f.until.
func (s *Server) auditFiltered(ctx context.Context, project string, since time.Time, f auditFilter, limit int) ([]core.AuditEntry, error) {
	const pageSize = 1000
	out := []core.AuditEntry{}
	skip := 0 // entries at exactly since already read
	for read := 0; read < auditScanMax; {
		page, err := s.auditor.Audit(ctx, project, since, pageSize)
		if err != nil {
			return nil, err
		}
		read += len(page)
		seen := 0
		for _, e := range page {
			if skip > 0 && e.Time.Equal(since) && seen < skip {
				seen++
				continue
			}
			if !f.until.IsZero() && e.Time.After(f.until) {
				return out, nil
			}
			if f.match(e) {
				out = append(out, e)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(page) < pageSize {
			return out, nil
		}
		last := page[len(page)-1].Time
		n := 0
		for _, e := range page {
			if e.Time.Equal(last) {
				n++
			}
		}
		// The page re-read the skipped entries: n counts them when last
		// is still since.
		if last.Equal(since) && n == len(page) {
			return out, nil // a page of one instant: no way forward
		}
		since, skip = last, n
	}
	return out, nil
}
