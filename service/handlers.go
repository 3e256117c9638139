package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// Injector runs the gatekeeper server-side for POST /v1/qa/inject: it
// selects and renders the matches of a search (cmd/memex wires
// gatekeeper.Select + Render). The server sets ReceiptID.
type Injector func(ctx context.Context, matches []core.Match, req wire.InjectRequest) (wire.InjectResponse, error)

func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, core.Invalid("body", "could not be read")
	}
	return b, nil
}

// storeErr counts a store failure that is not the client's fault.
func (s *Server) storeErr(op string, err error) error {
	status, _, _, _ := errorStatus(err)
	if status >= 500 {
		s.metrics.storeErrors.WithLabelValues(op).Inc()
	}
	return err
}

func (s *Server) healthz(c echo.Context) error {
	return writeJSON(c, http.StatusOK, wire.StatusResponse{Status: "ok"})
}

func (s *Server) readyz(c echo.Context) error {
	if p, ok := core.As[core.Pinger](s.store); ok {
		ctx, cancel := context.WithTimeout(c.Request().Context(), min(s.cfg.RequestTimeout, 5*time.Second))
		defer cancel()
		if err := p.Ping(ctx); err != nil {
			s.metrics.storeErrors.WithLabelValues("ping").Inc()
			return fmt.Errorf("readyz: %w: %w", core.ErrUnavailable, err)
		}
	}
	return writeJSON(c, http.StatusOK, wire.StatusResponse{Status: "ready", Store: s.store.Name()})
}

func (s *Server) search(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.SearchRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	req.ReceiptID = "" // receipts are issued by the server, never chosen by a client
	if err := req.Normalize(); err != nil {
		return err
	}
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	start := time.Now()
	ms, err := s.store.Search(ctx, req)
	s.metrics.searchSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return s.storeErr("search", err)
	}
	if ms == nil {
		ms = []core.Match{}
	}
	ms = boundMatches(ms, s.cfg.MaxResponseBytes)
	s.metrics.searchMatches.Observe(float64(len(ms)))
	ids := make([]string, len(ms))
	for i := range ms {
		ids[i] = ms[i].QAID
	}
	_, per := s.issueReceipts(ctx, c, req.ProjectID, ids)
	for i := range per {
		ms[i].ReceiptID = per[i]
	}
	return writeJSON(c, http.StatusOK, ms)
}

func (s *Server) inject(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req wire.InjectRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	if s.injector == nil {
		return &notImplementedError{what: "server-side injection (POST /v1/qa/inject)"}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	start := time.Now()
	ms, err := s.store.Search(ctx, req.Search())
	s.metrics.searchSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return s.storeErr("search", err)
	}
	ms = boundMatches(ms, s.cfg.MaxResponseBytes)
	s.metrics.searchMatches.Observe(float64(len(ms)))
	resp, err := s.injector(ctx, ms, req)
	if err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	if resp.Items == nil {
		resp.Items = []wire.InjectItem{}
	}
	if resp.Reasons == nil {
		resp.Reasons = []wire.InjectReason{}
	}
	if resp.Shown == nil {
		resp.Shown = []string{}
	}
	s.metrics.injected.Observe(float64(len(resp.Items)))
	ids := make([]string, len(resp.Items))
	for i := range resp.Items {
		ids[i] = resp.Items[i].QAID
	}
	var per []string
	resp.ReceiptID, per = s.issueReceipts(ctx, c, req.ProjectID, ids)
	for i := range per {
		resp.Items[i].ReceiptID = per[i]
	}
	return writeJSON(c, http.StatusOK, resp)
}

// scopedEventID keeps a client's own event id from colliding with another
// key's: it is prefixed with the caller's key id.
func scopedEventID(c echo.Context, id string) string {
	if id == "" {
		return ""
	}
	return "key:" + callerOf(c).id + ":" + id
}

func (s *Server) candidate(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.CandidateRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	for _, p := range req.SharedProjects {
		if err := authorize(c, p); err != nil {
			return err
		}
	}
	// A candidate's evidence is its creator's own report: it never counts
	// in the service (SPEC §5.1), and on a QA it duplicates it would be a
	// vote without a receipt (SPEC §5.4: only a validation carries one).
	// It is audited, with weight 0, and never reaches the store.
	evidence := req.Evidence
	req.Evidence = nil
	if metadataBytes(req.Metadata) > MaxMetadataBytes {
		return core.Invalid("metadata", "longer than %d bytes as JSON", MaxMetadataBytes)
	}
	return s.idempotent(c, body, func(eventID string) (int, any, error) {
		ctx, cancel := s.reqCtx(c)
		defer cancel()
		if err := s.checkQuota(&req); err != nil {
			return 0, nil, err
		}
		req.EventID = firstNonEmpty(eventID, scopedEventID(c, req.EventID))
		res, err := s.store.RecordCandidate(ctx, req)
		if err != nil {
			if errors.Is(err, core.ErrSecret) {
				s.metrics.candidates.WithLabelValues("blocked").Inc()
			}
			return 0, nil, s.storeErr("candidate", err)
		}
		outcome := "created"
		if res.DeduplicatedInto != "" {
			outcome = "deduplicated"
		}
		s.metrics.candidates.WithLabelValues(outcome).Inc()
		after := map[string]any{"status": string(res.Status), "outcome": outcome}
		if evidence != nil {
			reason := wire.ReasonOwnReport
			if res.DeduplicatedInto != "" {
				reason = wire.ReasonReceiptMissing
			}
			after["result"], after["strength"], after["applied"], after["reason"] = string(evidence.Result), string(evidence.Strength), false, reason
			if g, ok := core.As[core.Getter](s.store); ok && res.DeduplicatedInto != "" {
				if r, err := g.Get(ctx, req.ProjectID, res.QAID); err == nil {
					after["trust"], after["level"] = r.TrustScore, r.Level // unchanged: nothing was applied
				}
			}
		}
		s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: req.ProjectID, QAID: res.QAID, Action: "candidate",
			RunID: req.RunID, Weight: 1, After: after})
		return http.StatusCreated, res, nil
	})
}

func (s *Server) hit(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.HitRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	return s.idempotent(c, body, func(eventID string) (int, any, error) {
		ctx, cancel := s.reqCtx(c)
		defer cancel()
		req.EventID = firstNonEmpty(eventID, scopedEventID(c, req.EventID))
		v, err := s.checkReceipt(ctx, c, req.ProjectID, searchReceipt(req.ReceiptID))
		if err != nil {
			return 0, nil, err
		}
		var ignored []core.HitRef
		if v.enforced {
			if v.ok {
				req.EventID = "rcpt:" + v.receipt.ID + ":hit"
				kept := req.References[:0:0]
				for _, ref := range req.References {
					if slices.Contains(v.receipt.QAIDs, ref.QAID) {
						kept = append(kept, ref)
					} else {
						ignored = append(ignored, ref)
					}
				}
				req.References = kept
				if len(ignored) > 0 {
					v.reason = wire.ReasonNotServed
				}
			} else {
				ignored, req.References = req.References, nil
			}
		}
		for _, ref := range ignored {
			s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: req.ProjectID, QAID: ref.QAID, Action: "hit",
				RunID: req.RunID, ReceiptID: req.ReceiptID, Weight: 0, After: map[string]any{"applied": false, "reason": v.reason}})
		}
		resp := wire.HitResponse{Ignored: len(ignored)}
		if len(ignored) > 0 {
			resp.Reason = v.reason
		}
		if len(req.References) == 0 {
			return http.StatusOK, resp, nil
		}
		res, err := s.store.RecordHit(ctx, req)
		if err != nil {
			s.restoreReceipt(ctx, c, req.ProjectID, v)
			return 0, nil, s.storeErr("hit", err)
		}
		resp.Updated = res.Updated
		for _, ref := range req.References {
			if owner, ok := res.NotCovered[ref.QAID]; ok {
				// A global QA or one shared with the key's project, whose
				// own project the key does not cover: not counted, and
				// audited under its owner (SPEC §5.4).
				resp.Ignored++
				resp.Reason = firstNonEmpty(resp.Reason, wire.ReasonOtherOwner)
				s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: owner, QAID: ref.QAID, Action: "hit",
					RunID: req.RunID, ReceiptID: req.ReceiptID, Weight: 0,
					After: map[string]any{"applied": false, "reason": wire.ReasonOtherOwner, "from_project": req.ProjectID}})
				continue
			}
			if ref.Shown {
				s.metrics.hits.Inc()
			}
			if ref.Used {
				s.metrics.uses.Inc()
			}
			s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: req.ProjectID, QAID: ref.QAID, Action: "hit",
				RunID: req.RunID, ReceiptID: req.ReceiptID, Weight: 1, After: map[string]any{"shown": ref.Shown, "used": ref.Used}})
		}
		return http.StatusOK, resp, nil
	})
}

func (s *Server) validate(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.ValidateRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	res, strength, _ := req.Outcome() // checked by Validate
	return s.idempotent(c, body, func(eventID string) (int, any, error) {
		ctx, cancel := s.reqCtx(c)
		defer cancel()
		req.EventID = firstNonEmpty(eventID, scopedEventID(c, req.EventID))
		var before core.Record
		var haveBefore bool
		// A store that returns the record before the validation with its
		// result saves the Get (one or two round trips to Redis): it is
		// read only when the report will not be applied.
		vb, combined := core.As[validationRecorder](s.store)
		getBefore := func() error {
			if g, ok := core.As[core.Getter](s.store); ok && !haveBefore {
				r, err := g.Get(ctx, req.ProjectID, req.QAID)
				if err != nil {
					return s.storeErr("get", err)
				}
				before, haveBefore = r, true
			}
			return nil
		}
		if !combined {
			if err := getBefore(); err != nil {
				return 0, nil, err
			}
		}
		v, err := s.checkReceipt(ctx, c, req.ProjectID, req.ReceiptID)
		if err != nil {
			return 0, nil, err
		}
		if v.enforced && v.ok && !slices.Contains(v.receipt.QAIDs, req.QAID) {
			v.ok, v.reason = false, wire.ReasonNotServed
		}
		if v.enforced && !v.ok {
			if err := getBefore(); err != nil {
				return 0, nil, err
			}
			return s.refused(ctx, c, req, before, v.reason, res, strength)
		}
		if v.enforced {
			req.EventID = "rcpt:" + req.ReceiptID + ":validate:" + req.QAID
		}
		var rec core.Record
		audited := false // the store appended the entry with the write
		if va, ok := core.As[auditedValidator](s.store); ok {
			var b core.Record
			b, rec, audited, err = va.RecordValidationAudited(ctx, req, func(before, after core.Record) core.AuditEntry {
				return s.validationEntry(c, req, before, after, true, res, strength)
			})
			if b.QAID != "" {
				before, haveBefore = b, true
			}
		} else if combined {
			var b core.Record
			b, rec, err = vb.RecordValidationBefore(ctx, req)
			if b.QAID != "" {
				before, haveBefore = b, true
			}
		} else {
			rec, err = s.store.RecordValidation(ctx, req)
		}
		if err != nil {
			// A receipt is spent only when the write it guards commits
			// (SPEC §5.4): give it back, so a retry can quote it again.
			s.restoreReceipt(ctx, c, req.ProjectID, v)
			if !errors.Is(err, core.ErrForbidden) {
				return 0, nil, s.storeErr("validate", err)
			}
			// The key does not cover the QA's own project (a global QA or
			// one shared with the key's project): the vote is refused and
			// audited for the owner.
			if err := getBefore(); err != nil {
				return 0, nil, err
			}
			return s.refused(ctx, c, req, before, wire.ReasonOtherOwner, res, strength)
		}
		if !audited {
			s.audit(ctx, s.validationEntry(c, req, before, rec, haveBefore, res, strength))
		}
		if notCounted(before, rec, haveBefore) {
			return s.refusedAnswer(req, before, wire.ReasonNotCounted, res, strength)
		}
		s.metrics.validations.WithLabelValues(string(res), string(strength), "true").Inc()
		applied := true
		return http.StatusOK, wire.RecordResponse{Record: rec, Applied: &applied}, nil
	})
}

// notCounted tells a validation the store counted nothing for: it counts
// what the ledger counts, and the creator's own report and any report on
// a frozen QA change nothing (no counter, no expiry cancelled), and are
// not "applied".
func notCounted(before, after core.Record, haveBefore bool) bool {
	return haveBefore && after.SuccessCount+after.FailureCount == before.SuccessCount+before.FailureCount
}

// validationEntry is the audit entry of a validation the store wrote,
// from the record before (when haveBefore) and after it: the vote's
// weight and the summaries, or, when it counted nothing (notCounted), the
// refusal's entry.
func (s *Server) validationEntry(c echo.Context, req core.ValidateRequest, before, after core.Record, haveBefore bool, res core.Result, strength core.Strength) core.AuditEntry {
	if notCounted(before, after, haveBefore) {
		return s.refusedEntry(c, req, before, wire.ReasonNotCounted, res, strength)
	}
	e := core.AuditEntry{Time: s.now().UTC(), KeyID: callerOf(c).id, ProjectID: ownerOf(after, req.ProjectID), QAID: req.QAID, Action: "validate",
		RunID: req.RunID, ReceiptID: req.ReceiptID, Weight: strength.Weight(), After: summary(after)}
	e.After["result"], e.After["strength"] = string(res), string(strength)
	if e.ProjectID != req.ProjectID {
		e.After["from_project"] = req.ProjectID
	}
	if haveBefore {
		e.Before = summary(before)
	}
	return e
}

// refused answers a validation that changed nothing: applied false with
// the reason, audited with weight 0 under the QA's owner project (so the
// owner sees who tried to change its QA).
func (s *Server) refused(ctx context.Context, c echo.Context, req core.ValidateRequest, before core.Record, reason string, res core.Result, strength core.Strength) (int, any, error) {
	s.audit(ctx, s.refusedEntry(c, req, before, reason, res, strength))
	return s.refusedAnswer(req, before, reason, res, strength)
}

// refusedEntry is the audit entry of a refused validation (refused).
func (s *Server) refusedEntry(c echo.Context, req core.ValidateRequest, before core.Record, reason string, res core.Result, strength core.Strength) core.AuditEntry {
	e := core.AuditEntry{Time: s.now().UTC(), KeyID: callerOf(c).id, ProjectID: ownerOf(before, req.ProjectID), QAID: req.QAID, Action: "validate",
		RunID: req.RunID, ReceiptID: req.ReceiptID, Weight: 0,
		After: map[string]any{"applied": false, "reason": reason, "result": string(res), "strength": string(strength)}}
	if e.ProjectID != req.ProjectID {
		e.After["from_project"] = req.ProjectID
	}
	if before.QAID != "" {
		e.Before = summary(before)
	}
	return e
}

// refusedAnswer counts a refused validation and answers it: applied
// false with the reason and the record as it was.
func (s *Server) refusedAnswer(req core.ValidateRequest, before core.Record, reason string, res core.Result, strength core.Strength) (int, any, error) {
	s.metrics.validations.WithLabelValues(string(res), string(strength), "false").Inc()
	applied := false
	return http.StatusOK, wire.RecordResponse{Record: before, Applied: &applied, Reason: reason}, nil
}

// ownerOf is the project that owns r (def when r is unknown).
func ownerOf(r core.Record, def string) string {
	if r.ProjectID != "" {
		return r.ProjectID
	}
	return def
}

// validationRecorder is a store that returns the record as it was before a
// validation along with the result (plugins/redis), so the audit entry's
// before → after needs no Get.
type validationRecorder interface {
	RecordValidationBefore(ctx context.Context, req core.ValidateRequest) (before, after core.Record, err error)
}

// auditedValidator is a validationRecorder that also appends the
// validation's audit entry, built by entry from the record before and
// after, in the write itself (plugins/redis: one round trip less, and the
// entry is there exactly when the write is). audited false: no entry was
// appended, and the caller appends it.
type auditedValidator interface {
	RecordValidationAudited(ctx context.Context, req core.ValidateRequest,
		entry func(before, after core.Record) core.AuditEntry) (before, after core.Record, audited bool, err error)
}

// projectQuery reads and checks ?project_id=.
func projectQuery(c echo.Context) (string, error) {
	p := c.QueryParam("project_id")
	if err := core.ValidateProjectID(p); err != nil {
		return "", err
	}
	return p, authorize(c, p)
}

func (s *Server) get(c echo.Context) error {
	id := c.Param("qa_id")
	if err := core.ValidateQAID(id); err != nil {
		return err
	}
	p, err := projectQuery(c)
	if err != nil {
		return err
	}
	g, ok := core.As[core.Getter](s.store)
	if !ok {
		return &notImplementedError{what: "reading one QA on the " + s.store.Name() + " store"}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	rec, err := g.Get(ctx, p, id)
	if err != nil {
		return s.storeErr("get", err)
	}
	return writeJSON(c, http.StatusOK, wire.RecordResponse{Record: rec})
}

func queryInt(c echo.Context, name string) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, core.Invalid(name, "must be an integer")
	}
	return n, nil
}

func (s *Server) list(c echo.Context) error { return s.listPage(c, false) }

// adminExport serves GET /admin/v1/export: a page of GET /v1/qa whose
// records carry their evidence (a full export, restored by POST
// /admin/v1/import).
func (s *Server) adminExport(c echo.Context) error { return s.listPage(c, true) }

func (s *Server) listPage(c echo.Context, evidence bool) error {
	req := core.ListRequest{Evidence: evidence}
	var err error
	req.ProjectID = c.QueryParam("project_id")
	req.Status = core.Status(c.QueryParam("status"))
	req.Q = c.QueryParam("q")
	req.Cursor = c.QueryParam("cursor")
	if req.MinLevel, err = queryInt(c, "min_level"); err != nil {
		return err
	}
	if req.Limit, err = queryInt(c, "limit"); err != nil {
		return err
	}
	if len(req.Q) > core.MaxQueryBytes {
		return core.Invalid("q", "longer than %d bytes", core.MaxQueryBytes)
	}
	if len(req.Cursor) > 1024 {
		return core.Invalid("cursor", "longer than 1024 bytes")
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if err := authorize(c, req.ProjectID); err != nil {
		return err
	}
	l, ok := core.As[core.Lister](s.store)
	if !ok {
		return &notImplementedError{what: "listing QAs on the " + s.store.Name() + " store"}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	page, err := l.List(ctx, req)
	if err != nil {
		return s.storeErr("list", err)
	}
	if page.Items == nil {
		page.Items = []core.Record{}
	}
	return writeJSON(c, http.StatusOK, page)
}

func (s *Server) remove(c echo.Context) error {
	id := c.Param("qa_id")
	if err := core.ValidateQAID(id); err != nil {
		return err
	}
	p, err := projectQuery(c)
	if err != nil {
		return err
	}
	d, ok := core.As[core.Deleter](s.store)
	if !ok {
		return &notImplementedError{what: "deleting QAs on the " + s.store.Name() + " store"}
	}
	return s.idempotent(c, nil, func(string) (int, any, error) {
		ctx, cancel := s.reqCtx(c)
		defer cancel()
		var before map[string]any
		if g, ok := core.As[core.Getter](s.store); ok {
			if r, err := g.Get(ctx, p, id); err == nil {
				before = summary(r)
			}
		}
		if err := d.Delete(ctx, p, id); err != nil {
			return 0, nil, s.storeErr("delete", err)
		}
		s.stats.drop(p)
		s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: p, QAID: id, Action: "delete", Weight: 1,
			Before: before, After: map[string]any{"deleted": true}})
		return http.StatusOK, wire.DeleteResponse{Deleted: true}, nil
	})
}

func (s *Server) expire(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req wire.ExpireRequest
	if err := decodeJSON(body, &req, true); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if req.BatchSize == 0 {
		req.BatchSize = DefaultExpiryBatch
	}
	ex, ok := core.As[core.Expirer](s.store)
	if !ok {
		return &notImplementedError{what: "expiry on the " + s.store.Name() + " store"}
	}
	at, _ := req.At(s.now()) // checked by Validate
	return s.idempotent(c, body, func(string) (int, any, error) {
		ctx, cancel := s.reqCtx(c)
		defer cancel()
		n, err := ex.Expire(ctx, at, req.BatchSize)
		if err != nil {
			return 0, nil, s.storeErr("expire", err)
		}
		s.metrics.expired.Add(float64(n))
		after := map[string]any{"expired": n, "scope": "all projects"}
		if req.Now != "" {
			after["as_of"] = at.Format(time.RFC3339Nano)
		}
		s.audit(ctx, core.AuditEntry{KeyID: callerOf(c).id, ProjectID: core.GlobalProject, Action: "expire", Weight: 1, After: after})
		return http.StatusOK, wire.ExpireResponse{Expired: n}, nil
	})
}

func (s *Server) grade(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.TaskGradeRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	if len(req.Prompt) > core.MaxQueryBytes*4 {
		return core.Invalid("prompt", "longer than %d bytes", core.MaxQueryBytes*4)
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	g, err := s.store.TaskGrade(ctx, req)
	if err != nil {
		return s.storeErr("grade", err)
	}
	return writeJSON(c, http.StatusOK, g)
}

// summary is the small before/after view of a record in the audit log:
// never question or answer text.
func summary(r core.Record) map[string]any {
	return map[string]any{"status": string(r.Status), "level": r.Level, "trust": r.TrustScore}
}

// audit appends e to the audit log. A failure is logged and counted, not
// returned: the write it describes has already happened.
//
// The append is detached from ctx's cancellation (a client that hangs up
// still gets its write audited) but not from its deadline: a store that
// stalls after the write must not hold the answer past the request timeout
// (TestFaultStalledRedis/stall_before_audit). It gets at least
// min(100ms, RequestTimeout), so a write that used up the budget is still
// audited when the store answers at once.
func (s *Server) audit(ctx context.Context, e core.AuditEntry) {
	if e.Time.IsZero() {
		e.Time = s.now().UTC()
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(s.cfg.RequestTimeout)
	} else if floor := time.Now().Add(min(100*time.Millisecond, s.cfg.RequestTimeout)); dl.Before(floor) {
		dl = floor
	}
	actx, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl)
	defer cancel()
	if err := s.auditor.AppendAudit(actx, e); err != nil {
		s.metrics.storeErrors.WithLabelValues("audit").Inc()
		s.log.Warn("audit append failed", "op", "audit", "project", e.ProjectID, "error", err)
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func jsonBytes(v any) ([]byte, error) { return json.Marshal(v) }
