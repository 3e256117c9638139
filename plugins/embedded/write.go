package embedded

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// dupCandidates is how many lexical matches of a new question are compared
// for near-duplicates.
const dupCandidates = 5

// evidenceSource is who vouches for a report: the principal in ctx, else
// the run, else "local" (SPEC §5.1: in the embedded store each run is its
// own source).
func evidenceSource(ctx context.Context, runID string) (core.Principal, string) {
	p, ok := core.PrincipalFrom(ctx)
	switch {
	case ok && p.ID != "":
		return p, p.ID
	case runID != "":
		return p, runID
	}
	return p, "local"
}

func newQAID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "qa_" + hex.EncodeToString(b[:])
}

// refresh recomputes the record's derived fields (trust, level, freshness,
// status, expiry) from its evidence at now.
func (s *Store) refresh(rep trust.Reputation, st *stored, now time.Time) {
	s.model.Fill(&st.Rec, s.model.Score(st.State, rep, now))
}

// applyVote records one validation of st: the trust evidence, the
// reputation effects, the counters and the derived fields.
func (s *Store) applyVote(tx *bolt.Tx, st *stored, v trust.Vote) error {
	rep := reputation{tx}
	eff := s.model.Apply(st.State, v, rep)
	if err := addEffects(tx, st.State.Creator, eff); err != nil {
		return err
	}
	r := &st.Rec
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
	if pass && (v.Human || v.Strength == core.StrengthStrong) {
		r.Quarantined = false
	}
	r.LastValidatedAt = v.At
	r.UpdatedAt = v.At
	s.refresh(rep, st, v.At)
	return countDay(tx, r.ProjectID, v.At, pass)
}

func countDay(tx *bolt.Tx, project string, at time.Time, pass bool) error {
	k := []byte(project + "\x00" + at.UTC().Format(time.DateOnly))
	b := tx.Bucket(bDays)
	v := readUvarints(b.Get(k), 2)
	if pass {
		v[0]++
	} else {
		v[1]++
	}
	return b.Put(k, uvarints(v[0], v[1]))
}

func (s *Store) vote(ctx context.Context, runID string, res core.Result, strength core.Strength, now time.Time) trust.Vote {
	p, src := evidenceSource(ctx, runID)
	if p.Human {
		strength = core.StrengthStrong
	}
	return trust.Vote{Source: src, Result: res, Strength: strength, At: now, Human: p.Human, Trusted: p.Trusted}
}

// RecordCandidate stores a new QA or folds it into an existing duplicate.
func (s *Store) RecordCandidate(ctx context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	if err := req.Validate(); err != nil {
		return core.CandidateResult{}, fmt.Errorf("embedded: record candidate: %w", err)
	}
	now := s.cfg.clock().UTC()
	_, creator := evidenceSource(ctx, req.RunID)
	var out core.CandidateResult
	err := s.update(ctx, "record candidate", func(tx *bolt.Tx) (err error) {
		out, err = s.candidateTx(ctx, tx, req, creator, now)
		return err
	})
	if err != nil {
		return core.CandidateResult{}, err
	}
	return out, nil
}

// RecordCandidates records many candidates in one transaction (one commit,
// one fsync), each exactly as RecordCandidate would — dedup included, so a
// later request may be deduplicated into an earlier one of the same batch.
// All or nothing: on an error nothing of the batch is stored. Bulk import
// uses it (core.CandidateBatcher).
func (s *Store) RecordCandidates(ctx context.Context, reqs []core.CandidateRequest) ([]core.CandidateResult, error) {
	for i, req := range reqs {
		if err := req.Validate(); err != nil {
			return nil, fmt.Errorf("embedded: record candidates: request %d: %w", i, err)
		}
	}
	now := s.cfg.clock().UTC()
	out := make([]core.CandidateResult, len(reqs))
	err := s.update(ctx, "record candidates", func(tx *bolt.Tx) error {
		for i, req := range reqs {
			if err := ctx.Err(); err != nil {
				return err
			}
			_, creator := evidenceSource(ctx, req.RunID)
			res, err := s.candidateTx(ctx, tx, req, creator, now)
			if err != nil {
				return fmt.Errorf("request %d: %w", i, err)
			}
			out[i] = res
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// candidateTx is RecordCandidate's transaction body.
func (s *Store) candidateTx(ctx context.Context, tx *bolt.Tx, req core.CandidateRequest, creator string, now time.Time) (core.CandidateResult, error) {
	var out core.CandidateResult
	err := func() error {
		var ek []byte
		if req.EventID != "" {
			ek = eventKey("c", req.ProjectID, req.EventID)
			if ok, err := loadEvent(tx, ek, &out); ok || err != nil {
				return err
			}
		}
		hash := core.ContentHash(req.Question, req.Answer)
		dup, err := s.findDuplicate(ctx, tx, req, hash)
		if err != nil {
			return err
		}
		if dup != nil {
			if req.Evidence != nil {
				v := s.vote(ctx, req.RunID, req.Evidence.Result, core.NormalizeStrength(string(req.Evidence.Strength)), now)
				if err := s.applyVote(tx, dup, v); err != nil {
					return err
				}
				if err := putStored(tx, dup); err != nil {
					return err
				}
			}
			out = core.CandidateResult{QAID: dup.Rec.QAID, Status: dup.Rec.Status, DeduplicatedInto: dup.Rec.QAID}
		} else {
			st, err := s.insertCandidate(ctx, tx, req, hash, creator, now)
			if err != nil {
				return err
			}
			out = core.CandidateResult{QAID: st.Rec.QAID, Status: st.Rec.Status}
		}
		if ek != nil {
			return saveEvent(tx, ek, out)
		}
		return nil
	}()
	return out, err
}

func (s *Store) insertCandidate(ctx context.Context, tx *bolt.Tx, req core.CandidateRequest, hash, creator string, now time.Time) (*stored, error) {
	id := req.QAID
	if id == "" {
		id = newQAID()
	}
	if old, err := getStored(tx, id); err != nil {
		return nil, err
	} else if old != nil {
		return nil, fmt.Errorf("qa %s already exists with other content: %w", id, core.ErrConflict)
	}
	tags := slices.Clone(req.Tags)
	if tags == nil {
		tags = []string{}
	}
	shared := []string{}
	for _, p := range req.SharedProjects {
		if !slices.Contains(shared, p) {
			shared = append(shared, p)
		}
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
		ContentHash:    hash,
		SharedProjects: shared,
	}
	if q, ok := req.Metadata["quarantined"].(bool); ok && q {
		rec.Quarantined = true
	}
	if req.Confidence != nil {
		rec.Confidence = *req.Confidence
	}
	doc, err := tx.Bucket(bDocs).NextSequence()
	if err != nil {
		return nil, err
	}
	st := &stored{Rec: rec, State: trust.NewState(creator, now), Doc: doc}
	s.refresh(reputation{tx}, st, now)
	if req.Evidence != nil {
		v := s.vote(ctx, req.RunID, req.Evidence.Result, core.NormalizeStrength(string(req.Evidence.Strength)), now)
		if err := s.applyVote(tx, st, v); err != nil {
			return nil, err
		}
	}
	if err := putStored(tx, st); err != nil {
		return nil, err
	}
	b := newIndexBatch()
	if err := s.index(tx, b, st); err != nil {
		return nil, err
	}
	return st, b.flush(tx)
}

// findDuplicate returns the QA of req's project that req duplicates: same
// content hash, else a near duplicate among the lexical matches of the
// question (question and answer both ≥ core.DuplicateThreshold similar).
func (s *Store) findDuplicate(ctx context.Context, tx *bolt.Tx, req core.CandidateRequest, hash string) (*stored, error) {
	if id := tx.Bucket(bHash).Get(hashKey(req.ProjectID, hash)); id != nil {
		st, err := getStored(tx, string(id))
		if err != nil || st != nil {
			return st, err
		}
	}
	hits, err := s.scorer.Search(ctx, newSource(tx, []string{ownScope(req.ProjectID)}), req.Question, dupCandidates)
	if err != nil {
		return nil, err
	}
	for _, h := range hits {
		st, err := getByDoc(tx, h.Doc)
		if err != nil {
			return nil, err
		}
		if st == nil || st.Rec.ProjectID != req.ProjectID {
			continue
		}
		if core.Similarity(req.Question, st.Rec.Question) >= core.DuplicateThreshold &&
			core.Similarity(req.Answer, st.Rec.Answer) >= core.DuplicateThreshold {
			return st, nil
		}
	}
	return nil, nil
}

func notFound(id string) error { return fmt.Errorf("qa %s: %w", id, core.ErrNotFound) }

// RecordValidation records a pass or fail of a QA visible to the project.
func (s *Store) RecordValidation(ctx context.Context, req core.ValidateRequest) (core.Record, error) {
	if err := req.Validate(); err != nil {
		return core.Record{}, fmt.Errorf("embedded: record validation: %w", err)
	}
	res, strength, err := req.Outcome()
	if err != nil {
		return core.Record{}, fmt.Errorf("embedded: record validation: %w", err)
	}
	now := s.cfg.clock().UTC()
	v := s.vote(ctx, req.RunID, res, strength, now)
	var out core.Record
	err = s.update(ctx, "record validation", func(tx *bolt.Tx) (err error) {
		out, err = s.validationTx(tx, req, v)
		return err
	})
	if err != nil {
		return core.Record{}, err
	}
	return out, nil
}

// validationTx is RecordValidation's transaction body.
func (s *Store) validationTx(tx *bolt.Tx, req core.ValidateRequest, v trust.Vote) (core.Record, error) {
	var out core.Record
	err := func() error {
		var ek []byte
		if req.EventID != "" {
			ek = eventKey("v", req.ProjectID, req.EventID)
			if ok, err := loadEvent(tx, ek, &out); ok || err != nil {
				return err
			}
		}
		st, err := getStored(tx, req.QAID)
		if err != nil {
			return err
		}
		if st == nil || !visible(st.Rec, req.ProjectID) {
			return notFound(req.QAID)
		}
		if err := s.applyVote(tx, st, v); err != nil {
			return err
		}
		if err := putStored(tx, st); err != nil {
			return err
		}
		out = st.Rec
		if ek != nil {
			return saveEvent(tx, ek, out)
		}
		return nil
	}()
	return out, err
}

// RecordHit counts shown/used references; trust never changes.
func (s *Store) RecordHit(ctx context.Context, req core.HitRequest) (core.HitResult, error) {
	if err := req.Validate(); err != nil {
		return core.HitResult{}, fmt.Errorf("embedded: record hit: %w", err)
	}
	now := s.cfg.clock().UTC()
	var out core.HitResult
	err := s.update(ctx, "record hit", func(tx *bolt.Tx) (err error) {
		out, err = hitTx(tx, req, now)
		return err
	})
	if err != nil {
		return core.HitResult{}, err
	}
	return out, nil
}

// hitTx is RecordHit's transaction body.
func hitTx(tx *bolt.Tx, req core.HitRequest, now time.Time) (core.HitResult, error) {
	var out core.HitResult
	err := func() error {
		var ek []byte
		if req.EventID != "" {
			ek = eventKey("h", req.ProjectID, req.EventID)
			if ok, err := loadEvent(tx, ek, &out); ok || err != nil {
				return err
			}
		}
		for _, ref := range req.References {
			if !ref.Shown && !ref.Used {
				continue
			}
			st, err := getStored(tx, ref.QAID)
			if err != nil {
				return err
			}
			if st == nil || !visible(st.Rec, req.ProjectID) {
				continue
			}
			if ref.Shown {
				st.Rec.UsageCount++
			}
			if ref.Used {
				st.Rec.UseCount++
				st.Rec.LastUsedAt = now
			}
			if err := putStored(tx, st); err != nil {
				return err
			}
			out.Updated++
		}
		if ek != nil {
			return saveEvent(tx, ek, out)
		}
		return nil
	}()
	return out, err
}

// RecordRun records one run's hit, validations and candidate in one
// transaction: one commit and one fsync instead of one per write, each part
// exactly as its single method would (idempotent per event id). All or
// nothing (core.RunRecorder).
func (s *Store) RecordRun(ctx context.Context, r core.RunReport) (core.RunRecords, error) {
	if err := r.Validate(); err != nil {
		return core.RunRecords{}, fmt.Errorf("embedded: record run: %w", err)
	}
	now := s.cfg.clock().UTC()
	votes := make([]trust.Vote, len(r.Validations))
	for i, v := range r.Validations {
		res, strength, _ := v.Outcome() // checked by Validate
		votes[i] = s.vote(ctx, v.RunID, res, strength, now)
	}
	var creator string
	if r.Candidate != nil {
		_, creator = evidenceSource(ctx, r.Candidate.RunID)
	}
	var out core.RunRecords
	err := s.update(ctx, "record run", func(tx *bolt.Tx) error {
		out = core.RunRecords{}
		if r.Hit != nil {
			h, err := hitTx(tx, *r.Hit, now)
			if err != nil {
				return fmt.Errorf("hit: %w", err)
			}
			out.Hit = &h
		}
		for i, v := range r.Validations {
			rec, err := s.validationTx(tx, v, votes[i])
			if err != nil {
				return fmt.Errorf("validation %s: %w", v.QAID, err)
			}
			out.Records = append(out.Records, rec)
		}
		if r.Candidate != nil {
			c, err := s.candidateTx(ctx, tx, *r.Candidate, creator, now)
			if err != nil {
				return fmt.Errorf("candidate: %w", err)
			}
			out.Candidate = &c
		}
		return nil
	})
	if err != nil {
		return core.RunRecords{}, err
	}
	return out, nil
}

// Patch applies a human verdict or edit to a QA of the project.
func (s *Store) Patch(ctx context.Context, req core.PatchRequest) (core.Record, error) {
	if err := req.Validate(); err != nil {
		return core.Record{}, fmt.Errorf("embedded: patch: %w", err)
	}
	now := s.cfg.clock().UTC()
	var out core.Record
	err := s.update(ctx, "patch", func(tx *bolt.Tx) error {
		out = core.Record{}
		var ek []byte
		if req.EventID != "" {
			ek = eventKey("p", req.ProjectID, req.EventID)
			if ok, err := loadEvent(tx, ek, &out); ok || err != nil {
				return err
			}
		}
		st, err := getStored(tx, req.QAID)
		if err != nil {
			return err
		}
		if st == nil || st.Rec.ProjectID != req.ProjectID {
			return notFound(req.QAID)
		}
		if req.Answer != nil && *req.Answer != st.Rec.Answer {
			b := newIndexBatch()
			if err := s.unindex(tx, b, st); err != nil {
				return err
			}
			st.Rec.Answer = *req.Answer
			st.Rec.ContentHash = core.ContentHash(st.Rec.Question, st.Rec.Answer)
			if err := s.index(tx, b, st); err != nil {
				return err
			}
			if err := b.flush(tx); err != nil {
				return err
			}
		}
		if req.Summary != nil {
			st.Rec.Summary = *req.Summary
		}
		if req.Tags != nil {
			st.Rec.Tags = slices.Clone(*req.Tags)
			if st.Rec.Tags == nil {
				st.Rec.Tags = []string{}
			}
		}
		if req.Status != nil {
			s.model.SetStatus(st.State, *req.Status, now)
			st.Rec.Quarantined = false
		}
		st.Rec.UpdatedAt = now
		s.refresh(reputation{tx}, st, now)
		if err := putStored(tx, st); err != nil {
			return err
		}
		out = st.Rec
		if ek != nil {
			return saveEvent(tx, ek, out)
		}
		return nil
	})
	if err != nil {
		return core.Record{}, err
	}
	return out, nil
}

// Delete removes a QA of the project from every index.
func (s *Store) Delete(ctx context.Context, projectID, qaID string) error {
	if err := core.ValidateProjectID(projectID); err != nil {
		return fmt.Errorf("embedded: delete: %w", err)
	}
	if err := core.ValidateQAID(qaID); err != nil {
		return fmt.Errorf("embedded: delete: %w", err)
	}
	return s.update(ctx, "delete", func(tx *bolt.Tx) error {
		st, err := getStored(tx, qaID)
		if err != nil {
			return err
		}
		if st == nil || st.Rec.ProjectID != projectID {
			return notFound(qaID)
		}
		b := newIndexBatch()
		if err := s.unindex(tx, b, st); err != nil {
			return err
		}
		if err := b.flush(tx); err != nil {
			return err
		}
		return tx.Bucket(bIDs).Delete([]byte(qaID))
	})
}

// Import stores full records as they are, in one transaction per call.
func (s *Store) Import(ctx context.Context, recs []core.Record) error {
	for i, r := range recs {
		if err := core.ValidateProjectID(r.ProjectID); err != nil {
			return fmt.Errorf("embedded: import: record %d: %w", i, err)
		}
		if err := core.ValidateQAID(r.QAID); err != nil {
			return fmt.Errorf("embedded: import: record %d: %w", i, err)
		}
		if r.Status != "" && !r.Status.Valid() {
			return fmt.Errorf("embedded: import: record %d: %w", i, core.Invalid("status", "unknown status"))
		}
	}
	now := s.cfg.clock().UTC()
	return s.update(ctx, "import", func(tx *bolt.Tx) error {
		b := newIndexBatch()
		for i, r := range recs {
			if i&255 == 255 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			st := &stored{Rec: r}
			old, err := getStored(tx, r.QAID)
			if err != nil {
				return err
			}
			if old != nil {
				if err := s.unindex(tx, b, old); err != nil {
					return err
				}
				st.Doc = old.Doc
			} else if st.Doc, err = tx.Bucket(bDocs).NextSequence(); err != nil {
				return err
			}
			normalizeImported(&st.Rec, now)
			st.State = trust.ImportedState(st.Rec)
			if err := putStored(tx, st); err != nil {
				return err
			}
			if err := s.index(tx, b, st); err != nil {
				return err
			}
		}
		return b.flush(tx)
	})
}

func normalizeImported(r *core.Record, now time.Time) {
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
}

// Expire deprecates candidates never validated within the candidate TTL,
// at most batch of them (batch ≤ 0: all).
func (s *Store) Expire(ctx context.Context, now time.Time, batch int) (int, error) {
	n := 0
	err := s.update(ctx, "expire", func(tx *bolt.Tx) error {
		n = 0
		var ids []string
		c := tx.Bucket(bIDs).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			ids = append(ids, string(k))
		}
		rep := reputation{tx}
		for _, id := range ids {
			if batch > 0 && n >= batch {
				break
			}
			st, err := getStored(tx, id)
			if err != nil {
				return err
			}
			if st.Rec.Status != core.StatusCandidate || !s.model.Expire(st.State, now) {
				continue
			}
			st.Rec.UpdatedAt = now
			s.refresh(rep, st, now)
			if err := putStored(tx, st); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
