package ui

import (
	"cmp"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// page is what the layout renders.
type page struct {
	Title   string
	NoNav   bool
	Local   bool
	CSRF    string
	Project string // the project in view, for the navigation
	Notice  string
	Data    any
}

func (h *Handler) page(s session, title, project string, data any) page {
	return page{Title: title, Local: h.cfg.Local, CSRF: s.csrf, Project: project, Data: data}
}

// fail renders an error page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, s session, code int, msg string) {
	p := h.page(s, http.StatusText(code), "", errorView{Code: code, Message: msg})
	p.NoNav = s.csrf == ""
	h.render(w, r, code, "error", p)
}

type errorView struct {
	Code    int
	Message string
}

// apiFail turns an API error into the right page: 401 → sign in again.
func (h *Handler) apiFail(w http.ResponseWriter, r *http.Request, s session, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusUnauthorized:
			h.toLogin(w, r)
			return
		case http.StatusForbidden, http.StatusNotFound, http.StatusBadRequest, http.StatusConflict, http.StatusTooManyRequests, http.StatusNotImplemented:
			h.fail(w, r, s, ae.Status, ae.Error())
			return
		}
		h.fail(w, r, s, http.StatusBadGateway, ae.Error())
		return
	}
	h.log.Warn("dashboard API call failed", "op", "ui", "error", err)
	h.fail(w, r, s, http.StatusBadGateway, "The memex API failed: "+err.Error())
}

// statuses and levels in display order.
var (
	statusOrder = []core.Status{core.StatusCandidate, core.StatusActive, core.StatusVerified, core.StatusStale, core.StatusFrozen, core.StatusDeprecated}
	levelOrder  = []string{"L0", "L1", "L2", "L3"}
)

type count struct {
	Label string
	N     int
}

func statusCounts(m map[core.Status]int) []count {
	out := make([]count, len(statusOrder))
	for i, s := range statusOrder {
		out[i] = count{string(s), m[s]}
	}
	return out
}

func levelCounts(m map[string]int) []count {
	out := make([]count, len(levelOrder))
	for i, l := range levelOrder {
		out[i] = count{l, m[l]}
	}
	return out
}

func countsChart(id, label string, cs []count) template.HTML {
	ls := make([]string, len(cs))
	ns := make([]int, len(cs))
	for i, c := range cs {
		ls[i], ns[i] = c.Label, c.N
	}
	return countsSVG(id, label, ls, ns)
}

// projectIDs lists the projects the key may see: the API's, else the
// configured ones (a store that cannot list projects).
func (h *Handler) projects(r *http.Request, s session) ([]core.ProjectSummary, error) {
	var out wire.ProjectsResponse
	err := h.api(r, s, http.MethodGet, "/admin/v1/projects", nil, &out)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotImplemented && len(h.cfg.Projects) > 0 {
		ps := make([]core.ProjectSummary, len(h.cfg.Projects))
		for i, p := range h.cfg.Projects {
			ps[i] = core.ProjectSummary{ProjectID: p}
		}
		return ps, nil
	}
	return out.Projects, err
}

func (h *Handler) stats(r *http.Request, s session, project string) (core.ProjectStats, error) {
	var st core.ProjectStats
	err := h.api(r, s, http.MethodGet, "/admin/v1/projects/"+url.PathEscape(project)+"/stats?max_age="+strconv.Itoa(statsMaxAge), nil, &st)
	return st, err
}

// statsMaxAge is how old (seconds) the project statistics a page shows may
// be: the API computes them with a scan of every QA, and keeps the latest
// for callers that accept a recent figure (a verdict made here drops it).
const statsMaxAge = 10

// maxProjectsShown bounds the projects page (one stats call per project).
const maxProjectsShown = 50

type projectRow struct {
	ID       string
	Total    int
	Statuses []count
	Levels   []count
	UseRate  float64
	Shown    int64
	Used     int64
	Passes   int64
	Fails    int64
	Chart    template.HTML
}

type projectsView struct {
	Rows    []projectRow
	More    int
	Days    int
	Message string
}

const projectsDays = 14

func (h *Handler) projectsPage(w http.ResponseWriter, r *http.Request, s session) {
	ps, err := h.projects(r, s)
	if err != nil {
		h.apiFail(w, r, s, err)
		return
	}
	v := projectsView{Days: projectsDays}
	if len(ps) > maxProjectsShown {
		v.More = len(ps) - maxProjectsShown
		ps = ps[:maxProjectsShown]
	}
	now := h.cfg.Now()
	for _, p := range ps {
		st, err := h.stats(r, s, p.ProjectID)
		if err != nil {
			h.apiFail(w, r, s, err)
			return
		}
		v.Rows = append(v.Rows, projectRow{
			ID: p.ProjectID, Total: st.Total, Statuses: statusCounts(st.ByStatus), Levels: levelCounts(st.ByLevel),
			UseRate: st.UseRate, Shown: st.Shown, Used: st.Used, Passes: st.Passes, Fails: st.Fails,
			Chart: daysSVG("days-"+p.ProjectID, lastDays(st.ValidationsByDay, now, projectsDays)),
		})
	}
	if len(v.Rows) == 0 {
		v.Message = "No projects yet: memex run (or a client of memex serve) creates one with its first QA."
	}
	h.render(w, r, http.StatusOK, "projects", h.page(s, "Projects", "", v))
}

type projectView struct {
	ID         string
	Stats      core.ProjectStats
	Statuses   []count
	Levels     []count
	Histogram  template.HTML
	DaysChart  template.HTML
	LevelChart template.HTML
	StatusChrt template.HTML
	Days       int
	Waiting    []core.Record
}

const projectDays = 30

func (h *Handler) projectPage(w http.ResponseWriter, r *http.Request, s session) {
	p := r.PathValue("project")
	if err := core.ValidateProjectID(p); err != nil {
		h.fail(w, r, s, http.StatusBadRequest, err.Error())
		return
	}
	st, err := h.stats(r, s, p)
	if err != nil {
		h.apiFail(w, r, s, err)
		return
	}
	v := projectView{ID: p, Stats: st, Statuses: statusCounts(st.ByStatus), Levels: levelCounts(st.ByLevel), Days: projectDays,
		Waiting: st.AwaitingReview}
	v.Histogram = histogramSVG("trust-histogram", st.TrustHistogram)
	v.DaysChart = daysSVG("validations-per-day", lastDays(st.ValidationsByDay, h.cfg.Now(), projectDays))
	v.LevelChart = countsChart("levels", "QAs per validation level", v.Levels)
	v.StatusChrt = countsChart("statuses", "QAs per status", v.Statuses)
	h.render(w, r, http.StatusOK, "project", h.page(s, p, p, v))
}

type qasView struct {
	Project string
	Status  string
	Q       string
	Items   []core.Record
	Next    string
}

func (h *Handler) qasPage(w http.ResponseWriter, r *http.Request, s session) {
	p := r.PathValue("project")
	q := r.URL.Query()
	v := qasView{Project: p, Status: q.Get("status"), Q: q.Get("q")}
	qs := url.Values{"project_id": {p}, "limit": {"50"}}
	for _, k := range []string{"status", "q", "cursor"} {
		if x := q.Get(k); x != "" {
			qs.Set(k, x)
		}
	}
	var out core.ListPage
	if err := h.api(r, s, http.MethodGet, "/v1/qa?"+qs.Encode(), nil, &out); err != nil {
		h.apiFail(w, r, s, err)
		return
	}
	v.Items = out.Items
	if out.NextCursor != "" {
		nq := url.Values{"cursor": {out.NextCursor}}
		if v.Status != "" {
			nq.Set("status", v.Status)
		}
		if v.Q != "" {
			nq.Set("q", v.Q)
		}
		v.Next = nq.Encode()
	}
	h.render(w, r, http.StatusOK, "qas", h.page(s, "QAs of "+p, p, v))
}

// source is one evidence source of a QA, from its audit trail.
type source struct {
	Key       string
	Passes    int
	Fails     int
	Strengths []string
	Last      time.Time
	Runs      []string
	Receipts  []string
}

// injection is one time a QA was shown.
type injection struct {
	T       time.Time
	Key     string
	Run     string
	Receipt string
	Shown   bool
	Used    bool
	Applied bool
	Reason  string
}

type qaView struct {
	Project    string
	Rec        core.Record
	Tags       string
	TrustChart template.HTML
	Sources    []source
	Injections []injection
	Audit      []core.AuditEntry
	Truncated  bool
}

// qaAuditLimit is the most audit entries a QA page reads.
const qaAuditLimit = 1000

func (h *Handler) qaAudit(r *http.Request, s session, project, id string, since time.Time) ([]core.AuditEntry, error) {
	qs := url.Values{"project_id": {project}, "qa_id": {id}, "limit": {strconv.Itoa(qaAuditLimit)}}
	if !since.IsZero() {
		qs.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	var out wire.AuditResponse
	err := h.api(r, s, http.MethodGet, "/admin/v1/audit?"+qs.Encode(), nil, &out)
	return out.Entries, err
}

var notices = map[string]string{
	"verify": "Marked verified.", "freeze": "Frozen: no automatic change until a human changes it.",
	"deprecate": "Deprecated: search no longer returns it.", "reactivate": "Reactivated.", "edit": "Saved.",
}

func (h *Handler) qaPage(w http.ResponseWriter, r *http.Request, s session) {
	p, id := r.PathValue("project"), r.PathValue("id")
	var out wire.RecordResponse
	if err := h.api(r, s, http.MethodGet, "/v1/qa/"+url.PathEscape(id)+"?"+url.Values{"project_id": {p}}.Encode(), nil, &out); err != nil {
		h.apiFail(w, r, s, err)
		return
	}
	rec := out.Record
	// Entries about a QA cannot be older than the QA (minus a second for
	// clocks of different writers).
	entries, err := h.qaAudit(r, s, p, id, rec.CreatedAt.Add(-time.Second))
	if err != nil {
		h.apiFail(w, r, s, err)
		return
	}
	v := qaView{Project: p, Rec: rec, Tags: strings.Join(rec.Tags, ", "), Truncated: len(entries) >= qaAuditLimit}
	var pts []trustPoint
	srcs := map[string]*source{}
	for _, e := range entries {
		if t, ok := e.After["trust"].(float64); ok {
			pts = append(pts, trustPoint{T: e.Time, Trust: t, What: e.Action})
		}
		switch e.Action {
		case "validate":
			if ap, ok := e.After["applied"].(bool); ok && !ap {
				continue
			}
			src := srcs[e.KeyID]
			if src == nil {
				src = &source{Key: e.KeyID}
				srcs[e.KeyID] = src
			}
			if res, _ := e.After["result"].(string); res == string(core.ResultFail) {
				src.Fails++
			} else {
				src.Passes++
			}
			if st, _ := e.After["strength"].(string); st != "" && !slices.Contains(src.Strengths, st) {
				src.Strengths = append(src.Strengths, st)
			}
			src.Last = e.Time
			if e.RunID != "" && !slices.Contains(src.Runs, e.RunID) {
				src.Runs = append(src.Runs, e.RunID)
			}
			if e.ReceiptID != "" && !slices.Contains(src.Receipts, e.ReceiptID) {
				src.Receipts = append(src.Receipts, e.ReceiptID)
			}
		case "hit":
			in := injection{T: e.Time, Key: e.KeyID, Run: e.RunID, Receipt: e.ReceiptID, Applied: true}
			in.Shown, _ = e.After["shown"].(bool)
			in.Used, _ = e.After["used"].(bool)
			if ap, ok := e.After["applied"].(bool); ok && !ap {
				in.Applied = false
				in.Reason, _ = e.After["reason"].(string)
			}
			v.Injections = append(v.Injections, in)
		}
	}
	// The record's current trust closes the line.
	if len(pts) == 0 || pts[len(pts)-1].Trust != rec.TrustScore {
		at := rec.UpdatedAt
		if l := lastTime(pts); l.After(at) {
			at = l
		}
		pts = append(pts, trustPoint{T: at, Trust: rec.TrustScore, What: "now"})
	}
	v.TrustChart = trustSVG("trust-over-time", pts)
	for _, src := range srcs {
		v.Sources = append(v.Sources, *src)
	}
	slices.SortFunc(v.Sources, func(a, b source) int { return cmp.Or(b.Last.Compare(a.Last), cmp.Compare(a.Key, b.Key)) })
	slices.Reverse(v.Injections)
	v.Audit = slices.Clone(entries)
	slices.Reverse(v.Audit)
	pg := h.page(s, "QA "+id, p, v)
	pg.Notice = notices[r.URL.Query().Get("done")]
	h.render(w, r, http.StatusOK, "qa", pg)
}

func lastTime(pts []trustPoint) time.Time {
	if len(pts) == 0 {
		return time.Time{}
	}
	return pts[len(pts)-1].T
}

// verdict applies a human verdict through its admin route, POST
// /admin/v1/qa/{id}/{verdict} (audited under the verdict's name).
func (h *Handler) verdict(w http.ResponseWriter, r *http.Request, s session) {
	p, id := r.PathValue("project"), r.PathValue("id")
	action := core.Verdict(r.PostFormValue("action"))
	if _, ok := action.Status(); !ok {
		h.fail(w, r, s, http.StatusBadRequest, "Unknown action: want verify, freeze, deprecate or reactivate.")
		return
	}
	if err := h.api(r, s, http.MethodPost, wire.VerdictPath(id, action), wire.VerdictRequest{ProjectID: p}, nil); err != nil {
		h.apiFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, qaURL(p, id)+"?done="+string(action), http.StatusSeeOther)
}

// edit changes the answer and tags through PATCH /admin/v1/qa/{id}.
func (h *Handler) edit(w http.ResponseWriter, r *http.Request, s session) {
	p, id := r.PathValue("project"), r.PathValue("id")
	body := core.PatchRequest{ProjectID: p, QAID: id}
	if a := r.PostFormValue("answer"); strings.TrimSpace(a) != "" {
		a = strings.ReplaceAll(a, "\r\n", "\n")
		body.Answer = &a
	}
	if _, ok := r.PostForm["tags"]; ok {
		tags := []string{}
		for _, t := range strings.Split(r.PostFormValue("tags"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				tags = append(tags, t)
			}
		}
		body.Tags = &tags
	}
	if err := h.api(r, s, http.MethodPatch, "/admin/v1/qa/"+url.PathEscape(id), body, nil); err != nil {
		h.apiFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, qaURL(p, id)+"?done=edit", http.StatusSeeOther)
}

func qaURL(p, id string) string {
	return Prefix + "p/" + url.PathEscape(p) + "/qa/" + url.PathEscape(id)
}

type auditView struct {
	Projects []string
	Project  string
	Key      string
	Since    string
	Until    string
	Entries  []core.AuditEntry
	Limit    int
}

// auditLimit is the most entries the audit page shows.
const auditLimit = 500

// parseWhen reads a time filter: RFC 3339, "2006-01-02T15:04" (a
// datetime-local field, UTC) or a date.
func parseWhen(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	for _, f := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(f, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func (h *Handler) auditFilter(w http.ResponseWriter, r *http.Request, s session) (auditView, []core.AuditEntry, bool) {
	q := r.URL.Query()
	v := auditView{Project: q.Get("project"), Key: strings.TrimSpace(q.Get("key")), Since: q.Get("since"), Until: q.Get("until"), Limit: auditLimit}
	// Listing the projects reads every QA on some stores: only when the
	// request names none.
	if v.Project != "" {
		if err := core.ValidateProjectID(v.Project); err != nil {
			h.fail(w, r, s, http.StatusBadRequest, err.Error())
			return v, nil, false
		}
		v.Projects = []string{v.Project}
	} else {
		ps, err := h.projects(r, s)
		if err != nil {
			h.apiFail(w, r, s, err)
			return v, nil, false
		}
		for _, p := range ps {
			v.Projects = append(v.Projects, p.ProjectID)
		}
	}
	if v.Project == "" {
		if len(v.Projects) == 0 {
			return v, nil, true
		}
		v.Project = v.Projects[0]
	}
	since, ok1 := parseWhen(v.Since)
	until, ok2 := parseWhen(v.Until)
	if !ok1 || !ok2 {
		h.fail(w, r, s, http.StatusBadRequest, "Times are YYYY-MM-DD, YYYY-MM-DDTHH:MM (UTC) or RFC 3339.")
		return v, nil, false
	}
	if v.Since == "" {
		since = h.cfg.Now().Add(-7 * 24 * time.Hour)
		v.Since = since.UTC().Format("2006-01-02T15:04")
	}
	qs := url.Values{"project_id": {v.Project}, "since": {since.Format(time.RFC3339Nano)}, "limit": {strconv.Itoa(auditLimit)}}
	if v.Key != "" {
		qs.Set("key_id", v.Key)
	}
	if !until.IsZero() {
		if len(v.Until) == len("2006-01-02") {
			until = until.Add(24*time.Hour - time.Nanosecond) // the whole day
		}
		qs.Set("until", until.Format(time.RFC3339Nano))
	}
	var out wire.AuditResponse
	if err := h.api(r, s, http.MethodGet, "/admin/v1/audit?"+qs.Encode(), nil, &out); err != nil {
		h.apiFail(w, r, s, err)
		return v, nil, false
	}
	return v, out.Entries, true
}

func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request, s session) {
	v, entries, ok := h.auditFilter(w, r, s)
	if !ok {
		return
	}
	v.Entries = slices.Clone(entries)
	slices.Reverse(v.Entries) // newest first
	h.render(w, r, http.StatusOK, "audit", h.page(s, "Audit log", v.Project, v))
}

// run is what the audit log says one run did.
type run struct {
	ID        string
	Key       string
	Start     time.Time
	Injected  []string
	Cited     []string
	Passes    int
	Fails     int
	Learned   []string
	Refused   int
	Receipt   string
	Strengths []string
}

type runsView struct {
	Filter auditView
	Runs   []run
}

func (h *Handler) runsPage(w http.ResponseWriter, r *http.Request, s session) {
	av, entries, ok := h.auditFilter(w, r, s)
	if !ok {
		return
	}
	v := runsView{Filter: av}
	by := map[string]*run{}
	var order []string
	for _, e := range entries {
		if e.RunID == "" {
			continue
		}
		ru := by[e.RunID]
		if ru == nil {
			ru = &run{ID: e.RunID, Key: e.KeyID, Start: e.Time}
			by[e.RunID] = ru
			order = append(order, e.RunID)
		}
		if ap, ok := e.After["applied"].(bool); ok && !ap {
			ru.Refused++
			continue
		}
		switch e.Action {
		case "hit":
			if sh, _ := e.After["shown"].(bool); sh && !slices.Contains(ru.Injected, e.QAID) {
				ru.Injected = append(ru.Injected, e.QAID)
			}
			if u, _ := e.After["used"].(bool); u && !slices.Contains(ru.Cited, e.QAID) {
				ru.Cited = append(ru.Cited, e.QAID)
			}
		case "validate":
			if res, _ := e.After["result"].(string); res == string(core.ResultFail) {
				ru.Fails++
			} else {
				ru.Passes++
			}
		case "candidate":
			if !slices.Contains(ru.Learned, e.QAID) {
				ru.Learned = append(ru.Learned, e.QAID)
			}
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		v.Runs = append(v.Runs, *by[order[i]])
	}
	h.render(w, r, http.StatusOK, "runs", h.page(s, "Runs", av.Project, v))
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
