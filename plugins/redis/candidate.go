package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// RecordCandidate stores a new QA or folds it into an existing duplicate.
func (s *Store) RecordCandidate(ctx context.Context, req core.CandidateRequest) (core.CandidateResult, error) {
	const op = "record candidate"
	if err := req.Validate(); err != nil {
		return core.CandidateResult{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.CandidateResult{}, s.wrap(ctx, op, err)
	}
	now := s.now()
	p := req.ProjectID
	_, creator := ledger.Source(ctx, req.RunID)
	eid := eventID(req.EventID)
	evKey := s.k.event(p, "c", p, eid)
	var out core.CandidateResult
	if req.EventID != "" {
		if v, err := s.rdb.Get(ctx, evKey).Result(); err == nil {
			if err := json.Unmarshal([]byte(v), &out); err != nil {
				return core.CandidateResult{}, fmt.Errorf("redis: %s: stored event result is corrupt", op)
			}
			return out, nil
		}
	}
	if err := s.ensureProject(ctx, p); err != nil {
		return core.CandidateResult{}, err
	}
	hash := core.ContentHash(req.Question, req.Answer)
	id := req.QAID
	if id == "" {
		id = newID("qa_")
	}
	shared := ledger.SharedProjects(req.SharedProjects)
	var doc uint64
	registered, claimed, fresh := false, false, false
	err := s.retry(ctx, op, func() (bool, error) {
		dup, err := s.findDuplicate(ctx, req, hash)
		if err != nil {
			return false, err
		}
		if dup != nil {
			unlock, err := s.lockMany(ctx, p, []string{dup.ID})
			if err != nil {
				return false, err
			}
			defer unlock()
			// Re-read under the lock so the version is current.
			if dup, err = s.readStored(ctx, p, dup.ID); err != nil || dup == nil {
				return false, err
			}
			b := newBatch(evKey)
			if req.Evidence != nil {
				v := s.ledger.Vote(ctx, req.RunID, req.Evidence.Result, core.NormalizeStrength(string(req.Evidence.Strength)), now)
				rep, err := s.readRep(ctx, p, []*trust.State{dup.State}, v.Source)
				if err != nil {
					return false, err
				}
				e := dup.entry(false)
				if ch := s.ledger.CandidateEvidence(&e, v, rep, true); ch.Applied {
					dup.set(e)
					key := s.k.qa(p, dup.ID)
					b.version(key, dup.ver)
					s.changeOps(b, p, dup.State.Creator, ch)
					if err := s.keepRefreshed(b, dup, rep, ch.Effects, now); err != nil {
						return false, err
					}
					val, err := dup.encode(dup.ver + 1)
					if err != nil {
						return false, err
					}
					b.op("set", key, val)
				}
			}
			res := core.CandidateResult{QAID: dup.ID, Status: dup.State.Status, DeduplicatedInto: dup.ID}
			return s.commitResult(ctx, b, res, &out)
		}
		if doc == 0 {
			if doc, err = s.nextDocs(ctx, p, 1); err != nil {
				return false, err
			}
		}
		if !claimed {
			f, _, err := s.claimIDs(ctx, p, []string{id}, now)
			if err != nil {
				return false, err
			}
			claimed, fresh = true, f[0]
		}
		if !registered {
			if err := s.registerShared(ctx, p, id, shared); err != nil {
				return false, err
			}
			registered = true
		}
		e := s.ledger.NewCandidate(req, id, creator, now)
		key := s.k.qa(p, id)
		b := newBatch(evKey)
		b.version(key, 0)
		if req.QAID == "" {
			// A concurrent candidate with this text: retry, and fold into it.
			// One that names its qa_id is a record of its own.
			b.absentField(s.k.hashes(p, hashField(hash)), hashField(hash))
		}
		if req.MaxQAs > 0 {
			// The project's own-scope document count, checked in the
			// commit: the quota holds across processes and replicas.
			b.below(s.k.stats(p), "n:"+ownScope, req.MaxQAs)
		}
		var extra []string
		var v trust.Vote
		if req.Evidence != nil {
			v = s.ledger.Vote(ctx, req.RunID, req.Evidence.Result, core.NormalizeStrength(string(req.Evidence.Strength)), now)
			extra = append(extra, v.Source)
		}
		rep, err := s.readRep(ctx, p, []*trust.State{e.State}, extra...)
		if err != nil {
			return false, err
		}
		var eff trust.Effects
		if req.Evidence != nil {
			ch := s.ledger.CandidateEvidence(&e, v, rep, false)
			s.changeOps(b, p, e.State.Creator, ch)
			eff = ch.Effects
		}
		st := toStored(e.Rec, e.State, doc)
		if err := s.keepRefreshed(b, st, rep, eff, now); err != nil {
			return false, err
		}
		val, err := st.encode(1)
		if err != nil {
			return false, err
		}
		b.op("set", key, val)
		s.indexOps(b, st, true)
		done, err := s.commitResult(ctx, b, core.CandidateResult{QAID: id, Status: st.State.Status}, &out)
		if errors.Is(err, errAtMax) {
			return false, ledger.QAQuota(req.MaxQAs, req.MaxQAs) // the commit saw the project full
		}
		return done, err
	})
	if fresh && req.QAID == "" && (err != nil || out.QAID != id) {
		s.releaseID(ctx, id, claimValue(p, now)) // a generated id no QA holds
	}
	if err != nil {
		return core.CandidateResult{}, err
	}
	return out, nil
}

// commitResult commits b with res as the event result; out gets res, or
// the stored result of a repeated event.
func (s *Store) commitResult(ctx context.Context, b *batch, res any, out any) (bool, error) {
	body, err := json.Marshal(res)
	if err != nil {
		return false, err
	}
	code, prev, err := s.commit(ctx, b, string(body))
	switch {
	case err != nil:
		return false, err
	case code == commitAtMax:
		return false, errAtMax
	case code == commitRepeated:
		return true, json.Unmarshal([]byte(prev), out)
	case code == commitApplied:
		return true, json.Unmarshal(body, out)
	}
	return false, nil
}

// findDuplicate returns the QA that req duplicates (ledger.Duplicate): the
// one its content hash indexes, else one of the lexical matches of the
// question. A candidate that names its qa_id duplicates only the QA of
// that id (ledger.ExistingID), so no search is needed.
func (s *Store) findDuplicate(ctx context.Context, req core.CandidateRequest, hash string) (*stored, error) {
	p := req.ProjectID
	return ledger.FindDuplicate(req, hash, func(st *stored) core.Record { return st.record(true) },
		func(id string) (*stored, error) { return s.readStored(ctx, p, id) },
		func() (*stored, error) {
			id, err := s.rdb.HGet(ctx, s.k.hashes(p, hashField(hash)), hashField(hash)).Result()
			if err != nil {
				return nil, nil // no QA with this hash (or the look-up failed: the search below decides)
			}
			return s.readStored(ctx, p, id)
		},
		func() ([]*stored, error) {
			src, err := s.newSource(ctx, p, req.Question, true)
			if err != nil {
				return nil, err
			}
			hits, err := s.scorer.SearchTerms(ctx, src, src.terms, ledger.DupCandidates, 0)
			if err != nil {
				return nil, err
			}
			return s.loadHits(ctx, src, hits, false)
		})
}
