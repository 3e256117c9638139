package service

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

func (s *Server) adminProjects(c echo.Context) error {
	pl, ok := s.store.(core.ProjectLister)
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

func (s *Server) adminStats(c echo.Context) error {
	p := c.Param("project_id")
	if err := core.ValidateProjectID(p); err != nil {
		return err
	}
	if err := authorize(c, p); err != nil {
		return err
	}
	st, ok := s.store.(core.Statser)
	if !ok {
		return &notImplementedError{what: "project statistics on the " + s.store.Name() + " store"}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	ps, err := st.Stats(ctx, p)
	if err != nil {
		return s.storeErr("stats", err)
	}
	return writeJSON(c, http.StatusOK, ps)
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
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	pt, ok := s.store.(core.Patcher)
	if !ok {
		return &notImplementedError{what: "human verdicts on the " + s.store.Name() + " store"}
	}
	return s.idempotent(c, body, func(eventID string) (int, any, error) {
		ctx, cancel := s.reqCtx(c)
		defer cancel()
		req.EventID = firstNonEmpty(eventID, scopedEventID(c, req.EventID))
		var before map[string]any
		if g, ok := s.store.(core.Getter); ok {
			r, err := g.Get(ctx, req.ProjectID, req.QAID)
			if err != nil {
				return 0, nil, s.storeErr("get", err)
			}
			before = summary(r)
		}
		rec, err := pt.Patch(ctx, req)
		if err != nil {
			return 0, nil, s.storeErr("patch", err)
		}
		after := summary(rec)
		after["answer_edited"] = req.Answer != nil
		after["tags_edited"] = req.Tags != nil
		s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: req.ProjectID, QAID: req.QAID, Action: "patch",
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
	es, err := s.auditor.Audit(ctx, p, since, limit)
	if err != nil {
		return s.storeErr("audit", err)
	}
	if es == nil {
		es = []core.AuditEntry{}
	}
	return writeJSON(c, http.StatusOK, wire.AuditResponse{Entries: es})
}
