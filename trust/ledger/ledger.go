// Package ledger is the one home of memex's domain rules about a QA's
// record and evidence: who vouches for a report, what a candidate, a hit, a
// validation, a human verdict, an import and the expiry job do to a QA,
// which QAs a project sees, when a candidate duplicates one, when
// quarantine starts and when it lifts, and which reports count. It is pure
// (no I/O, no clock: `now` comes in) and imports only core and trust.
//
// Every store (plugins/embedded on bbolt, plugins/redis on go-redis) reads
// an Entry — its record and its trust.State — hands it and the event to
// the Ledger, and persists what comes back atomically: the entry, and the
// Change (reputation increments for the book, the day counter). A store
// never decides a rule itself, so two stores cannot disagree and the next
// backend only reads and writes (docs/ARCHITECTURE.md, docs/TRUST.md).
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// Ledger applies the rules with a trust model. It is safe for concurrent
// use.
type Ledger struct {
	m *trust.Model
}

// New returns a ledger over m. m's Params.CountCreator chooses the flavour:
// true is the single-user embedded store, where every run vouches for
// itself (the creating run's --verify pass is evidence, SPEC §5.1); false
// is the service's store, where the creator's own reports count for
// nothing and a report on someone else's QA needs a receipt (SPEC §5.4).
func New(m *trust.Model) *Ledger { return &Ledger{m: m} }

// Model returns the trust model.
func (l *Ledger) Model() *trust.Model { return l.m }

// local reports whether the ledger runs the single-user flavour.
func (l *Ledger) local() bool { return l.m.Params().CountCreator }

// Entry is one QA as a store holds it: the record (derived fields — trust,
// level, freshness, expiry — are filled by Refresh) and its evidence.
type Entry struct {
	Rec   core.Record
	State *trust.State
}

// Change is what an event asks the store to persist besides the entry, in
// the same atomic write.
type Change struct {
	// Applied: the event changed the QA's evidence (a counted vote, a
	// verdict). A report that was not applied changes nothing; Reason says
	// why (one of the Reason* constants).
	Applied bool
	Reason  string
	// Effects are the reputation increments for the store's book (source
	// agreement, the creator's proven/rejected record).
	Effects trust.Effects
	// Day, when set, is a validation to count in the per-day statistics.
	Day *Day
}

// Day is one counted validation for the per-UTC-day statistics.
type Day struct {
	Date string // YYYY-MM-DD, UTC
	Pass bool
}

// Reasons a report changed nothing.
const (
	// ReasonOwnReport: the creator's own report on its QA, which counts only
	// in the single-user store (SPEC §5.1).
	ReasonOwnReport = "own_report"
	// ReasonFrozen: a frozen QA ignores every report.
	ReasonFrozen = "frozen"
	// ReasonReceiptRequired: a candidate's evidence on an existing QA (a
	// duplicate) is a report on someone else's QA, which needs a receipt
	// (SPEC §5.4); only a validation carries one.
	ReasonReceiptRequired = "receipt_missing"
)

// ErrOtherOwner is wrapped (with core.ErrForbidden) when a principal votes
// on a global or shared QA whose owner project its patterns do not cover.
var ErrOtherOwner = fmt.Errorf("the QA belongs to a project the key does not cover: %w", core.ErrForbidden)

// Source returns who vouches for a report: the principal in ctx (the
// service's authenticated key, a human), else the run (the embedded store:
// each run is its own source, SPEC §5.1), else "local".
func Source(ctx context.Context, runID string) (core.Principal, string) {
	p, ok := core.PrincipalFrom(ctx)
	switch {
	case ok && p.ID != "":
		return p, p.ID
	case runID != "":
		return p, runID
	}
	return p, "local"
}

// Vote is the report of the principal in ctx (or of the run) as a trust
// vote: a human's verdict is strong.
func (l *Ledger) Vote(ctx context.Context, runID string, res core.Result, strength core.Strength, at time.Time) trust.Vote {
	p, src := Source(ctx, runID)
	if p.Human {
		strength = core.StrengthStrong
	}
	return trust.Vote{Source: src, Result: res, Strength: strength, At: at, Human: p.Human, Trusted: p.Trusted}
}

// MayVote returns nil when the principal in ctx may report on a QA owned by
// owner — a validation or a hit: its project patterns cover the QA's own
// project (a key that reads a global or shared QA from its project does
// not thereby vote on, or count uses of, another tenant's QA), else an
// error wrapping ErrOtherOwner.
func MayVote(ctx context.Context, owner string) error {
	p, _ := core.PrincipalFrom(ctx)
	if p.Covers(owner) {
		return nil
	}
	return fmt.Errorf("key %s, project %s: %w", p.ID, owner, ErrOtherOwner)
}

// MayHit reports whether a hit of the principal in ctx on the QA qaID,
// owned by owner, may be counted: MayVote's rule. When not, it notes the
// reference in res.NotCovered for the caller to refuse and audit.
func MayHit(ctx context.Context, res *core.HitResult, qaID, owner string) bool {
	if MayVote(ctx, owner) == nil {
		return true
	}
	if res.NotCovered == nil {
		res.NotCovered = map[string]string{}
	}
	res.NotCovered[qaID] = owner
	return false
}

// QAQuota returns a *core.QuotaError when a project holding held QAs may
// not take a new one under its max_qas quota max (0: no quota). Each store
// calls it in the atomic step that adds a QA (CandidateRequest.MaxQAs).
func QAQuota(held, max int) error {
	if max <= 0 || held < max {
		return nil
	}
	return &core.QuotaError{Limit: "QAs per project (max_qas)", Max: max}
}

// Visible reports whether a QA owned by owner and shared with shared may be
// read from project: its own, global, or shared with it (SPEC §4).
func Visible(owner string, shared []string, project string) bool {
	return owner == project || owner == core.GlobalProject || slices.Contains(shared, project)
}

// Showable reports whether a QA with this answer may be shown to an agent
// or written to an instruction file. A question-only QA (imported with
// `memex qa import --questions-only`, for retrieval evaluation and dedup)
// is found by search but never shown: it has nothing to tell.
func Showable(answer string) bool { return strings.TrimSpace(answer) != "" }

// SharedInto are the projects whose searches see a QA owned by owner and
// shared with shared, besides the owner's own and global: each once, in
// order. A global QA is visible everywhere already and a QA shared with its
// own project would be counted twice, so neither gets one (SPEC §4). A
// store indexes the QA under its owner's scope and one shared scope per
// project here.
func SharedInto(owner string, shared []string) []string {
	var out []string
	if owner == core.GlobalProject {
		return out
	}
	for _, p := range shared {
		if p != owner && p != core.GlobalProject && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// ListFilter is the filter of a list request over a project's records: the
// status, the minimum validation level, and the text query, a
// case-insensitive substring of the question or the answer.
func ListFilter(req core.ListRequest) func(core.Record) bool {
	q := strings.ToLower(req.Q)
	return func(r core.Record) bool {
		return (req.Status == "" || r.Status == req.Status) &&
			r.ValidationLevel >= req.MinLevel &&
			(q == "" || strings.Contains(strings.ToLower(r.Question), q) || strings.Contains(strings.ToLower(r.Answer), q))
	}
}

// DefaultAuditLimit is how many audit entries a read returns when it names
// no limit.
const DefaultAuditLimit = 100

// AuditLimit is how many audit entries a read asking for limit returns:
// limit, or DefaultAuditLimit when limit ≤ 0.
func AuditLimit(limit int) int {
	if limit <= 0 {
		return DefaultAuditLimit
	}
	return limit
}

// NotFound is the error of a QA that does not exist or is not visible.
func NotFound(id string) error { return fmt.Errorf("qa %s: %w", id, core.ErrNotFound) }

// Refresh recomputes the record's derived fields (trust, posterior,
// freshness, level, status, consecutive_fail, expiry) from its evidence
// at now.
func (l *Ledger) Refresh(e *Entry, rep trust.Reputation, now time.Time) {
	l.m.Fill(&e.Rec, l.m.Score(e.State, rep, now))
}

// NewCandidate returns the entry of a new QA from req, created by creator
// at now, with id: tags and shared projects normalised (never nil, shared
// projects once each), the content hash, and quarantine decided here —
// the client's metadata.quarantined, or text that reads like instructions
// to an agent (core.InstructionLike), whatever the client's extractor said.
// The candidate's evidence is applied separately (CandidateEvidence).
func (l *Ledger) NewCandidate(req core.CandidateRequest, id, creator string, now time.Time) Entry {
	tags := slices.Clone(req.Tags)
	if tags == nil {
		tags = []string{}
	}
	rec := core.Record{
		QAID:           id,
		ProjectID:      req.ProjectID,
		Question:       req.Question,
		Answer:         req.Answer,
		Summary:        req.Summary,
		Tags:           tags,
		Metadata:       req.Metadata,
		Source:         req.Source,
		Author:         req.Author,
		Status:         core.StatusCandidate,
		CreatedAt:      now,
		UpdatedAt:      now,
		ContentHash:    core.ContentHash(req.Question, req.Answer),
		SharedProjects: SharedProjects(req.SharedProjects),
	}
	if req.Confidence != nil {
		rec.Confidence = *req.Confidence
	}
	if q, ok := req.Metadata["quarantined"].(bool); ok && q {
		rec.Quarantined = true
	}
	if why := core.InstructionLike(req.Question + "\n" + req.Answer + "\n" + req.Summary); why != "" {
		rec.Quarantined = true
		md := make(map[string]any, len(req.Metadata)+1)
		for k, v := range req.Metadata {
			md[k] = v
		}
		if _, ok := md["quarantine_reason"]; !ok {
			md["quarantine_reason"] = why
		}
		rec.Metadata = md
	}
	return Entry{Rec: rec, State: trust.NewState(creator, now)}
}

// SharedProjects is a candidate's shared projects as stored: each once, in
// order, never nil.
func SharedProjects(in []string) []string {
	out := []string{}
	for _, p := range in {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// CandidateEvidence applies a candidate's evidence — the result of the run
// that wrote it — to e: the new QA it created (duplicate false) or the
// existing QA it duplicates (duplicate true). It is the creator's own
// report: in the single-user store it counts as a vote (for a duplicate,
// the run vouches for the QA it reproduced); in the service's store it
// counts for nothing — on its own QA the creator's reports never count, and
// on a duplicate it would be a report on someone else's QA without a
// receipt (SPEC §5.4: a vote needs a validation quoting one).
func (l *Ledger) CandidateEvidence(e *Entry, v trust.Vote, rep trust.Reputation, duplicate bool) Change {
	if duplicate && !l.local() {
		return Change{Reason: ReasonReceiptRequired}
	}
	return l.Validation(e, v, rep)
}

// Validation applies one validation report v to e. A report that does not
// count (the creator's own outside the single-user store, any report on a
// frozen QA) changes nothing: no counter, no last_validated_at, the
// candidate's expiry stands. A counted report updates the evidence, the
// counters by result and strength, last_validated_at and updated_at; a
// pass lifts quarantine only when it is a human's or an independent strong
// verdict — never the creator's own (its --verify pass included).
func (l *Ledger) Validation(e *Entry, v trust.Vote, rep trust.Reputation) Change {
	st := e.State
	if st.Status == core.StatusFrozen {
		return Change{Reason: ReasonFrozen}
	}
	eff := l.m.Apply(st, v, rep)
	if !eff.Counted {
		return Change{Reason: ReasonOwnReport}
	}
	r := &e.Rec
	r.Stats.Add(v.Result, v.Strength)
	pass := v.Result == core.ResultPass
	if pass {
		r.SuccessCount++
	} else {
		r.FailureCount++
	}
	if v.Strength == core.StrengthStrong {
		r.StrongSignalCount++
	}
	if pass && (v.Human || v.Strength == core.StrengthStrong && v.Source != st.Creator) {
		r.Quarantined = false
	}
	r.LastValidatedAt = v.At
	r.UpdatedAt = v.At
	l.Refresh(e, WithEffects(rep, st.Creator, eff), v.At)
	return Change{Applied: true, Effects: eff, Day: &Day{Date: v.At.UTC().Format(time.DateOnly), Pass: pass}}
}

// Hit counts one reference of a hit report on rec: shown raises
// usage_count, used raises use_count and last_used_at. Trust never
// changes. It reports whether rec changed.
func (l *Ledger) Hit(rec *core.Record, ref core.HitRef, now time.Time) bool {
	if !ref.Shown && !ref.Used {
		return false
	}
	if ref.Shown {
		rec.UsageCount++
	}
	if ref.Used {
		rec.UseCount++
		rec.LastUsedAt = now
	}
	return true
}

// TextChanged reports whether req changes the indexed text of rec (the
// store re-indexes the entry around Verdict).
func TextChanged(rec core.Record, req core.PatchRequest) bool {
	return req.Answer != nil && *req.Answer != rec.Answer
}

// Verdict applies a human verdict or edit to e: a new answer (and content
// hash), summary, tags; a status, which is sticky (SPEC §5.1) and clears
// quarantine (a human looked at it), with its effect on the creator's
// record. The record is refreshed at now.
func (l *Ledger) Verdict(e *Entry, req core.PatchRequest, rep trust.Reputation, now time.Time) Change {
	r := &e.Rec
	if TextChanged(*r, req) {
		r.Answer = *req.Answer
		r.ContentHash = core.ContentHash(r.Question, r.Answer)
	}
	if req.Summary != nil {
		r.Summary = *req.Summary
	}
	if req.Tags != nil {
		r.Tags = slices.Clone(*req.Tags)
		if r.Tags == nil {
			r.Tags = []string{}
		}
	}
	var ch Change
	if req.Status != nil {
		ch.Effects = l.m.SetStatusEffects(e.State, *req.Status, now)
		ch.Applied = true
		r.Quarantined = false
	}
	r.UpdatedAt = now
	l.Refresh(e, WithEffects(rep, e.State.Creator, ch.Effects), now)
	return ch
}

// Evidence is st as a full export carries it (core.Record.Evidence).
func Evidence(st *trust.State) (json.RawMessage, error) {
	return json.Marshal(st)
}

// importedEvidence decodes an exported record's evidence; nil when r
// carries none.
func importedEvidence(r core.Record) (*trust.State, error) {
	if len(r.Evidence) == 0 {
		return nil, nil
	}
	var st trust.State
	if err := json.Unmarshal(r.Evidence, &st); err != nil {
		return nil, core.Invalid("evidence", "malformed evidence")
	}
	if st.Status != "" && !st.Status.Valid() {
		return nil, core.Invalid("evidence", "unknown status")
	}
	if len(st.Sources) > trust.MaxSources {
		return nil, core.Invalid("evidence", "more than %d sources", trust.MaxSources)
	}
	for _, e := range st.Sources {
		if e == nil || e.S < 0 || e.F < 0 || e.S+e.F > 1+1e-9 {
			return nil, core.Invalid("evidence", "a source's evidence is out of range")
		}
	}
	return &st, nil
}

// Import returns the entry of an imported full record: status candidate
// when none, created_at now when none, updated_at created_at when none,
// the content hash when none, tags and shared projects never nil, the level
// name from the validation level. Its evidence is the one the record
// carries (a full export: votes, change detector, creator, lifecycle, so
// trust, level, status and block come back exactly), else rebuilt from the
// counters (trust.ImportedState). The store passes now at its own
// precision; ValidateImport has checked r.
func (l *Ledger) Import(r core.Record, now time.Time) Entry {
	if r.Status == "" {
		r.Status = core.StatusCandidate
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	if r.ContentHash == "" {
		r.ContentHash = core.ContentHash(r.Question, r.Answer)
	}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	if r.SharedProjects == nil {
		r.SharedProjects = []string{}
	}
	r.Level = core.LevelName(r.ValidationLevel)
	st, _ := importedEvidence(r)
	r.Evidence = nil
	if st == nil {
		return Entry{Rec: r, State: trust.ImportedState(r)}
	}
	if st.Sources == nil {
		st.Sources = map[string]*trust.SourceEvidence{}
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = r.CreatedAt.UTC()
	}
	if st.Status == "" {
		st.Status = r.Status
	}
	r.Status = st.Status
	return Entry{Rec: r, State: st}
}

// ValidateImport checks record i of an import.
func ValidateImport(i int, r core.Record) error {
	if err := core.ValidateProjectID(r.ProjectID); err != nil {
		return fmt.Errorf("record %d: %w", i, err)
	}
	if err := core.ValidateQAID(r.QAID); err != nil {
		return fmt.Errorf("record %d: %w", i, err)
	}
	if r.Status != "" && !r.Status.Valid() {
		return fmt.Errorf("record %d: %w", i, core.Invalid("status", "unknown status"))
	}
	if _, err := importedEvidence(r); err != nil {
		return fmt.Errorf("record %d: %w", i, err)
	}
	return nil
}

// BlockedFails is the consecutive fails at which the gatekeeper blocks a
// QA by default (SPEC §3.1 block_if_consecutive_fail_ge).
const BlockedFails = 3

// Expire deprecates e when the expiry job at now should: a candidate never
// validated within the candidate TTL (trust.Model.Expire), or a QA blocked
// by consecutive fails (BlockedFails) that no counted report changed for
// the candidate TTL — nothing shows a blocked QA, so no run can clear it,
// and it would stay neither usable nor retired. A human's status and a
// frozen QA never expire. It reports whether e changed.
func (l *Ledger) Expire(e *Entry, rep trust.Reputation, now time.Time) bool {
	switch {
	case e.State.Status == core.StatusCandidate && l.m.Expire(e.State, now):
	case l.blockedTooLong(e, now):
		l.m.Retire(e.State)
	default:
		return false
	}
	e.Rec.UpdatedAt = now
	l.Refresh(e, rep, now)
	return true
}

// ExpiryCutoff is the latest created_at of a QA that Expire may deprecate
// at now: a younger QA is neither a candidate past the candidate TTL nor
// blocked for that long, so an expiry job reads only QAs created at or
// before it.
func (l *Ledger) ExpiryCutoff(now time.Time) time.Time {
	return now.Add(-l.m.Params().CandidateTTL)
}

// blockedTooLong reports whether e is blocked by consecutive fails and its
// last counted report is older than the candidate TTL.
func (l *Ledger) blockedTooLong(e *Entry, now time.Time) bool {
	last := e.Rec.LastValidatedAt
	if last.IsZero() {
		last = e.Rec.CreatedAt
	}
	return e.State.ConsecutiveFail >= BlockedFails && now.Sub(last) >= l.m.Params().CandidateTTL && l.m.Retirable(e.State)
}

// DupCandidates is how many lexical matches of a new question a store
// compares for near duplicates.
const DupCandidates = 5

// Duplicate reports whether a candidate (req, with content hash hash)
// duplicates the existing QA rec: only a QA of the candidate's own project,
// with the same content hash, or a near duplicate — question and answer
// both at least core.DuplicateThreshold similar and naming exactly the same
// specifics (core.SameSpecifics: numbers, versions, identifiers and paths),
// since "timeout 5" and "timeout 50" are different knowledge however alike
// they read. A store looks rec up by the hash first, then among the
// DupCandidates best lexical matches of the question.
//
// A candidate that names its own qa_id (an import line) is never folded
// into a QA of another id: it is a record of its own, kept under its id
// (ExistingID decides when that id is taken).
func Duplicate(req core.CandidateRequest, hash string, rec core.Record) bool {
	if rec.ProjectID != req.ProjectID || req.QAID != "" && req.QAID != rec.QAID {
		return false
	}
	if rec.ContentHash == "" {
		rec.ContentHash = core.ContentHash(rec.Question, rec.Answer)
	}
	if rec.ContentHash == hash {
		return true
	}
	return core.Similarity(req.Question, rec.Question) >= core.DuplicateThreshold &&
		core.Similarity(req.Answer, rec.Answer) >= core.DuplicateThreshold &&
		core.SameSpecifics(req.Question+"\n"+req.Answer, rec.Question+"\n"+rec.Answer)
}

// FindDuplicate finds the QA a candidate (req, with content hash hash)
// folds into, in the one order every store follows: a candidate naming its
// own qa_id looks only at the QA of that id (ExistingID decides: the same QA
// again, or a conflict); any other looks at the QA with its content hash,
// then at the DupCandidates best lexical matches of its question, and takes
// the first that Duplicate accepts. A store supplies the look-ups — byID,
// byHash (nil, nil when none) and similar — and rec, a stored QA's record;
// FindDuplicate returns nil when the candidate is new.
func FindDuplicate[S any](req core.CandidateRequest, hash string, rec func(*S) core.Record,
	byID func(id string) (*S, error), byHash func() (*S, error), similar func() ([]*S, error)) (*S, error) {
	if req.QAID != "" {
		old, err := byID(req.QAID)
		if err != nil || old == nil {
			return nil, err
		}
		if err := ExistingID(req, hash, rec(old)); err != nil {
			return nil, err
		}
		return old, nil
	}
	st, err := byHash()
	if err != nil {
		return nil, err
	}
	if st != nil && Duplicate(req, hash, rec(st)) {
		return st, nil
	}
	near, err := similar()
	if err != nil {
		return nil, err
	}
	for _, st := range near {
		if st != nil && Duplicate(req, hash, rec(st)) {
			return st, nil
		}
	}
	return nil, nil
}

// ExistingID decides a candidate that names its own qa_id when a QA old
// already has that id: nil when old is the same QA again (same project,
// same content hash: the candidate folds into it, as a repeated import
// line does), else an error wrapping core.ErrConflict that says why — the
// id belongs to a QA of another project (which it does not name), or to
// another QA of this project.
func ExistingID(req core.CandidateRequest, hash string, old core.Record) error {
	if old.ProjectID != req.ProjectID {
		return IDOfAnotherProject(old.QAID)
	}
	if old.ContentHash == "" {
		old.ContentHash = core.ContentHash(old.Question, old.Answer)
	}
	if old.ContentHash != hash {
		return fmt.Errorf("qa_id %s exists in this project with another question or answer: %w", old.QAID, core.ErrConflict)
	}
	return nil
}

// ImportOver returns nil when an imported record r may replace the stored
// QA old with its id: only a QA of r's own project; a qa_id of another
// project is an error wrapping core.ErrConflict that says so (an import
// never overwrites another tenant's QA).
func ImportOver(old, r core.Record) error {
	if old.ProjectID != r.ProjectID {
		return IDOfAnotherProject(r.QAID)
	}
	return nil
}

// IDOfAnotherProject is the error for a new QA of a project under a
// qa_id a QA of another project holds: qa_ids are unique across
// projects, and the error does not name the other project.
func IDOfAnotherProject(id string) error {
	return fmt.Errorf("qa_id %s exists in another project: %w", id, core.ErrConflict)
}

// WithEffects is rep with eff's increments added (the book as it will be
// once the store persisted eff), for refreshing a record in the same
// update.
func WithEffects(rep trust.Reputation, creator string, eff trust.Effects) trust.Reputation {
	if rep == nil {
		rep = trust.NoReputation
	}
	if len(eff.Sources) == 0 && eff.Creator == (trust.CreatorRep{}) {
		return rep
	}
	return overlay{rep, creator, eff}
}

type overlay struct {
	trust.Reputation
	creator string
	eff     trust.Effects
}

func (o overlay) Source(id string) trust.SourceRep {
	r := o.Reputation.Source(id)
	if x, ok := o.eff.Sources[id]; ok {
		r.Agree += x.Agree
		r.Disagree += x.Disagree
	}
	return r
}

func (o overlay) Creator(id string) trust.CreatorRep {
	r := o.Reputation.Creator(id)
	if id == o.creator && id != "" { // a QA without a creator credits no one (the stores persist nothing)
		r.Proven += o.eff.Creator.Proven
		r.Rejected += o.eff.Creator.Rejected
	}
	return r
}
