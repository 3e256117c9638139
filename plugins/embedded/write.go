package embedded

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

func newQAID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "qa_" + hex.EncodeToString(b[:])
}

// write is one write request: req is validated, then body, its
// transaction body, runs in one read-write transaction (update) at the
// store's clock, which also deletes a bounded chunk of expired events
// (pruneEvents). It returns body's result once committed.
func write[R interface{ Validate() error }, T any](ctx context.Context, s *Store, op string, req R,
	body func(context.Context, *bolt.Tx, R, time.Time) (T, error)) (T, error) {
	var out, zero T
	if err := req.Validate(); err != nil {
		return zero, fmt.Errorf("embedded: %s: %w", op, err)
	}
	now := s.cfg.clock().UTC()
	if err := s.update(ctx, op, func(tx *bolt.Tx) (err error) {
		if out, err = body(ctx, tx, req, now); err != nil {
			return err
		}
		return pruneEvents(tx, now)
	}); err != nil {
		return zero, err
	}
	return out, nil
}

// RecordCandidate stores a new QA or folds it into an existing duplicate.
func (s *Store) RecordCandidate(ctx context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	return write(ctx, s, "record candidate", req, s.candidateTx)
}

// RecordCandidates records many candidates in one transaction (one commit,
// one fsync), each exactly as RecordCandidate would — dedup included, so a
// later request may be deduplicated into an earlier one of the same batch.
// All or nothing: on an error nothing of the batch is stored. Bulk import
// uses it (core.CandidateBatcher).
func (s *Store) RecordCandidates(ctx context.Context, reqs []core.CandidateRequest) ([]core.CandidateResult, error) {
	return write(ctx, s, "record candidates", candidateBatch(reqs), s.candidatesTx)
}

// candidateBatch is RecordCandidates' request: valid when each of its
// requests is.
type candidateBatch []core.CandidateRequest

func (b candidateBatch) Validate() error {
	for i, req := range b {
		if err := req.Validate(); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	return nil
}

// candidatesTx is RecordCandidates' transaction body.
func (s *Store) candidatesTx(ctx context.Context, tx *bolt.Tx, reqs candidateBatch, now time.Time) ([]core.CandidateResult, error) {
	out := make([]core.CandidateResult, len(reqs))
	for i, req := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := s.candidateTx(ctx, tx, req, now)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		out[i] = res
	}
	return out, nil
}

// candidateTx is RecordCandidate's transaction body.
func (s *Store) candidateTx(ctx context.Context, tx *bolt.Tx, req core.CandidateRequest, now time.Time) (core.CandidateResult, error) {
	return once(tx, now, "c", req.ProjectID, req.EventID, func() (core.CandidateResult, error) {
		hash := core.ContentHash(req.Question, req.Answer)
		dup, err := s.findDuplicate(ctx, tx, req, hash)
		if err != nil {
			return core.CandidateResult{}, err
		}
		if dup != nil {
			if v, ok := s.ledger.CandidateVote(ctx, req, now); ok {
				ch := s.ledger.CandidateEvidence(&dup.Entry, v, reputation{tx}, true)
				if err := s.persistChange(tx, dup, ch); err != nil {
					return core.CandidateResult{}, err
				}
			}
			return core.CandidateResult{QAID: dup.Rec.QAID, Status: dup.Rec.Status, DeduplicatedInto: dup.Rec.QAID}, nil
		}
		// The project's own scope counts its QAs (index stats); read in
		// the write's transaction, the quota holds for every writer.
		held := readUvarints(tx.Bucket(bStats).Get([]byte(ownScope(req.ProjectID))), 1)[0]
		if err := ledger.QAQuota(int(held), req.MaxQAs); err != nil {
			return core.CandidateResult{}, err
		}
		st, err := s.insertCandidate(ctx, tx, req, now)
		if err != nil {
			return core.CandidateResult{}, err
		}
		return core.CandidateResult{QAID: st.Rec.QAID, Status: st.Rec.Status}, nil
	})
}

// insertCandidate stores req as a new QA. A qa_id it names is free:
// findDuplicate, in the same transaction, found no QA of that id
// (ledger.ExistingID decides one that exists: the same QA, or a conflict).
func (s *Store) insertCandidate(ctx context.Context, tx *bolt.Tx, req core.CandidateRequest, now time.Time) (*stored, error) {
	id := req.QAID
	if id == "" {
		id = newQAID()
	}
	_, creator := ledger.Source(ctx, req.RunID)
	st := &stored{Entry: s.ledger.NewCandidate(req, id, creator, now)}
	s.ledger.Refresh(&st.Entry, reputation{tx}, now)
	if v, ok := s.ledger.CandidateVote(ctx, req, now); ok {
		if err := persist(tx, st.Rec.ProjectID, st.State.Creator, s.ledger.CandidateEvidence(&st.Entry, v, reputation{tx}, false)); err != nil {
			return nil, err
		}
	}
	b := newIndexBatch()
	if err := s.insert(tx, b, st); err != nil {
		return nil, err
	}
	return st, b.flush(tx)
}

// findDuplicate returns the QA that req duplicates (ledger.Duplicate): the
// one its content hash indexes, else one of the lexical matches of the
// question. A candidate that names its qa_id duplicates only the QA of
// that id (ledger.ExistingID), so no search is needed.
func (s *Store) findDuplicate(ctx context.Context, tx *bolt.Tx, req core.CandidateRequest, hash string) (*stored, error) {
	return ledger.FindDuplicate(req, hash, func(st *stored) core.Record { return st.Rec },
		func(id string) (*stored, error) { return getStored(tx, id) },
		func() (*stored, error) {
			if id := tx.Bucket(bHash).Get(hashKey(req.ProjectID, hash)); id != nil {
				return getStored(tx, string(id))
			}
			return nil, nil
		},
		func() ([]*stored, error) {
			hits, err := s.scorer.Search(ctx, newSource(tx, []string{ownScope(req.ProjectID)}), req.Question, ledger.DupCandidates)
			if err != nil {
				return nil, err
			}
			out := make([]*stored, 0, len(hits))
			for _, h := range hits {
				st, err := getByDoc(tx, h.Doc, false)
				if err != nil {
					return nil, err
				}
				out = append(out, st)
			}
			return out, nil
		})
}

// persistChange stores st and what ch asks besides.
func (s *Store) persistChange(tx *bolt.Tx, st *stored, ch ledger.Change) error {
	if err := persist(tx, st.Rec.ProjectID, st.State.Creator, ch); err != nil {
		return err
	}
	return putStored(tx, st)
}

// RecordValidation records a pass or fail of a QA visible to the project.
func (s *Store) RecordValidation(ctx context.Context, req core.ValidateRequest) (core.Record, error) {
	return write(ctx, s, "record validation", req, s.validationTx)
}

// validationTx is RecordValidation's transaction body.
func (s *Store) validationTx(ctx context.Context, tx *bolt.Tx, req core.ValidateRequest, now time.Time) (core.Record, error) {
	return once(tx, now, "v", req.ProjectID, req.EventID, func() (core.Record, error) {
		st, err := getStored(tx, req.QAID)
		if err != nil {
			return core.Record{}, err
		}
		if st == nil || !ledger.Visible(st.Rec.ProjectID, st.Rec.SharedProjects, req.ProjectID) {
			return core.Record{}, ledger.NotFound(req.QAID)
		}
		if err := ledger.MayVote(ctx, st.Rec.ProjectID); err != nil {
			return core.Record{}, err
		}
		ch := s.ledger.Validation(&st.Entry, s.ledger.ValidationVote(ctx, req, now), reputation{tx})
		if err := s.persistChange(tx, st, ch); err != nil {
			return core.Record{}, err
		}
		return st.Rec, nil
	})
}

// RecordHit counts shown/used references; trust never changes.
func (s *Store) RecordHit(ctx context.Context, req core.HitRequest) (core.HitResult, error) {
	return write(ctx, s, "record hit", req, s.hitTx)
}

// hitTx is RecordHit's transaction body. A reference to a QA whose owner
// the principal does not cover is not counted (ledger.MayHit).
func (s *Store) hitTx(ctx context.Context, tx *bolt.Tx, req core.HitRequest, now time.Time) (core.HitResult, error) {
	return once(tx, now, "h", req.ProjectID, req.EventID, func() (core.HitResult, error) {
		var out core.HitResult
		for _, ref := range req.References {
			if !ref.Shown && !ref.Used {
				continue
			}
			st, err := getStored(tx, ref.QAID)
			if err != nil {
				return out, err
			}
			if st == nil || !ledger.Visible(st.Rec.ProjectID, st.Rec.SharedProjects, req.ProjectID) {
				continue
			}
			if !ledger.MayHit(ctx, &out, ref.QAID, st.Rec.ProjectID) || !s.ledger.Hit(&st.Rec, ref, now) {
				continue
			}
			if err := putStored(tx, st); err != nil {
				return out, err
			}
			out.Updated++
		}
		return out, nil
	})
}

// RecordRun records one run's hit, validations and candidate in one
// transaction: one commit and one fsync instead of one per write, each part
// exactly as its single method would (idempotent per event id). All or
// nothing (core.RunRecorder).
func (s *Store) RecordRun(ctx context.Context, r core.RunReport) (core.RunRecords, error) {
	return write(ctx, s, "record run", r, s.runTx)
}

// runTx is RecordRun's transaction body.
func (s *Store) runTx(ctx context.Context, tx *bolt.Tx, r core.RunReport, now time.Time) (core.RunRecords, error) {
	var out core.RunRecords
	if r.Hit != nil {
		h, err := s.hitTx(ctx, tx, *r.Hit, now)
		if err != nil {
			return out, fmt.Errorf("hit: %w", err)
		}
		out.Hit = &h
	}
	for _, v := range r.Validations {
		rec, err := s.validationTx(ctx, tx, v, now)
		if err != nil {
			return out, fmt.Errorf("validation %s: %w", v.QAID, err)
		}
		out.Records = append(out.Records, rec)
	}
	if r.Candidate != nil {
		c, err := s.candidateTx(ctx, tx, *r.Candidate, now)
		if err != nil {
			return out, fmt.Errorf("candidate: %w", err)
		}
		out.Candidate = &c
	}
	_, err := s.expireSome(tx, now, runExpireBudget)
	return out, err
}

// Patch applies a human verdict or edit to a QA of the project.
func (s *Store) Patch(ctx context.Context, req core.PatchRequest) (core.Record, error) {
	return write(ctx, s, "patch", req, s.patchTx)
}

// patchTx is Patch's transaction body.
func (s *Store) patchTx(_ context.Context, tx *bolt.Tx, req core.PatchRequest, now time.Time) (core.Record, error) {
	return once(tx, now, "p", req.ProjectID, req.EventID, func() (core.Record, error) {
		st, err := getStored(tx, req.QAID)
		if err != nil {
			return core.Record{}, err
		}
		if st == nil || st.Rec.ProjectID != req.ProjectID {
			return core.Record{}, ledger.NotFound(req.QAID)
		}
		var b *indexBatch
		if ledger.TextChanged(st.Rec, req) {
			b = newIndexBatch()
			if err := s.unindex(tx, b, st); err != nil {
				return core.Record{}, err
			}
		}
		ch := s.ledger.Verdict(&st.Entry, req, reputation{tx}, now)
		if b != nil {
			if err := s.index(tx, b, st); err != nil {
				return core.Record{}, err
			}
			if err := b.flush(tx); err != nil {
				return core.Record{}, err
			}
		}
		if err := s.persistChange(tx, st, ch); err != nil {
			return core.Record{}, err
		}
		return st.Rec, nil
	})
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
			return ledger.NotFound(qaID)
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
		if err := ledger.ValidateImport(i, r); err != nil {
			return fmt.Errorf("embedded: import: %w", err)
		}
	}
	now := s.cfg.clock().UTC()
	return s.update(ctx, "import", func(tx *bolt.Tx) error {
		// Imported records may be older than the expiry sweep's mark: the
		// next sweep starts over.
		if err := tx.Bucket(bMeta).Delete(expireSweep); err != nil {
			return err
		}
		b, rep := newIndexBatch(), reputation{tx}
		for i, r := range recs {
			if i&255 == 255 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			// Written as Get reads it: its statistics' share is the
			// record its evidence makes (as on every store).
			st := &stored{Entry: s.ledger.Import(r, now)}
			s.ledger.Refresh(&st.Entry, rep, now)
			old, err := getStored(tx, r.QAID)
			if err != nil {
				return err
			}
			if old != nil {
				if err := ledger.ImportOver(old.Rec, r); err != nil {
					return fmt.Errorf("record %d: %w", i, err)
				}
				if err := s.unindex(tx, b, old); err != nil {
					return err
				}
				st.Doc = old.Doc
			}
			if err := s.insert(tx, b, st); err != nil {
				return err
			}
		}
		return b.flush(tx)
	})
}
