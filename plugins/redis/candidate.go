package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
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
	evKey := s.k.event(p, "c", p, eventID(req.EventID))
	if err := s.ensureProject(ctx, p); err != nil {
		return core.CandidateResult{}, err
	}
	hash := core.ContentHash(req.Question, req.Answer)
	id := req.QAID
	if id == "" {
		id = newID("qa_")
	}
	shared := ledger.SharedProjects(req.SharedProjects)
	v, voted := s.ledger.CandidateVote(ctx, req, now)
	var extra []string
	if voted {
		extra = []string{v.Source}
	}
	var out core.CandidateResult
	// A candidate with its event id reads the event key with its first
	// look-up: a repeated event answers its stored result at once.
	lookupEvent := ""
	if req.EventID != "" {
		lookupEvent = evKey
	}
	n := &newQA{p: p, id: id, named: req.QAID != "", shared: shared}
	err := s.retry(ctx, op, func() (bool, error) {
		dups := &dupWrite{s: s, ctx: ctx, p: p, extra: extra, evKey: evKey}
		defer dups.release()
		dup, err := s.findDuplicate(ctx, req, hash, lookupEvent, &out, dups)
		if errors.Is(err, errRepeated) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if dup != nil {
			w, err := dups.of(dup)
			if err != nil || w.recs[0] == nil {
				return false, err // gone since it was found: find again
			}
			dup = w.recs[0]
			if voted {
				rep, err := w.reputation()
				if err != nil {
					return false, err
				}
				e := dup.entry(false)
				if ch := s.ledger.CandidateEvidence(&e, v, rep, true); ch.Applied {
					dup.set(e)
					if err := w.put(dup, ch, now); err != nil {
						return false, err
					}
				}
			}
			res := core.CandidateResult{QAID: dup.ID, Status: dup.State.Status, DeduplicatedInto: dup.ID}
			return commitResult(s, ctx, w.b, res, &out)
		}
		e := s.ledger.NewCandidate(req, id, creator, now)
		w := &write{s: s, ctx: ctx, p: p, b: newBatch(evKey), extra: extra}
		if err := n.reserve(ctx, s, now); err != nil {
			return false, err
		}
		st := toStored(e.Rec, e.State, n.doc)
		w.recs = []*stored{st}
		rep, err := w.reputation()
		if err != nil {
			return false, err
		}
		var ch ledger.Change
		if voted {
			ch = s.ledger.CandidateEvidence(&e, v, rep, false)
			st.set(e)
		}
		if err := w.put(st, ch, now); err != nil {
			return false, err
		}
		if req.QAID == "" {
			// A concurrent candidate with this text: retry, and fold into it.
			// One that names its qa_id is a record of its own.
			w.b.absentField(s.k.hashes(p, hashField(hash)), hashField(hash))
		}
		if req.MaxQAs > 0 {
			// The project's own-scope document count, checked in the
			// commit: the quota holds across processes and replicas.
			w.b.below(s.k.stats(p), "n:"+ownScope, req.MaxQAs)
		}
		s.indexOps(w.b, st, true)
		done, err := commitResult(s, ctx, w.b, core.CandidateResult{QAID: id, Status: st.State.Status}, &out)
		if errors.Is(err, errAtMax) {
			return false, ledger.QAQuota(req.MaxQAs, req.MaxQAs) // the commit saw the project full
		}
		return done, err
	})
	if n.fresh && req.QAID == "" && (err != nil || out.QAID != id) {
		s.release(ctx, releaseIDScript, s.k.ids(id), id, claimValue(p, now)) // a generated id no QA holds
	}
	if err != nil {
		return core.CandidateResult{}, err
	}
	return out, nil
}

// newQA is what a new candidate reserves before its commit, once across
// the commit's attempts: its document id (doc, nextDocs), the claim on its
// qa_id (claimIDs; fresh: the claim is new) and its registration in the
// projects it is shared into (registerShared).
type newQA struct {
	p, id  string
	named  bool // the candidate names its qa_id
	shared []string
	doc    uint64

	claimed, fresh, registered bool
}

// reserve makes, in one round trip, the reservations n still lacks. A
// named qa_id is registered in the projects it is
// shared into only once its claim holds (one more round trip): until then
// that qa_id may be another project's, registered there by it.
func (n *newQA) reserve(ctx context.Context, s *Store, now time.Time) error {
	if !n.claimed {
		if err := s.buildIDIndex(ctx); err != nil {
			return err
		}
	}
	pipe := s.rdb.Pipeline()
	var seq *redis.IntCmd
	if n.doc == 0 {
		seq = pipe.HIncrBy(ctx, s.k.stats(n.p), "seq", 1)
	}
	mine := claimValue(n.p, now)
	var claim *redis.Cmd
	if !n.claimed {
		claim = s.queueClaim(ctx, pipe, n.id, mine)
	}
	registering := !n.registered && !n.named
	if registering {
		s.queueShared(ctx, pipe, n.p, n.id, n.shared)
	}
	if len(pipe.Cmds()) == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	if claim != nil && claim.Err() == nil {
		// Settled even when another command failed: a fresh claim of a
		// generated id is released when the candidate is not stored.
		if held, _ := claim.Text(); held == "" {
			n.claimed, n.fresh = true, true
		} else if err == nil {
			if err := s.claimHeld(ctx, n.p, n.id, held, mine, now); err != nil {
				return err
			}
			n.claimed = true
		}
	}
	if err != nil {
		return err
	}
	if seq != nil {
		if n.doc, err = s.docsUpTo(ctx, n.p, 1, seq.Val()); err != nil {
			return err
		}
	}
	if !n.registered {
		if !registering {
			if err := s.registerShared(ctx, n.p, n.id, n.shared); err != nil {
				return err
			}
		}
		n.registered = true
	}
	return nil
}

// dupWrite is the write that folds a candidate into the QA it duplicates:
// that QA read under its lock, so at its current version.
type dupWrite struct {
	s      *Store
	ctx    context.Context
	p      string
	extra  []string
	evKey  string
	w      *write
	unlock func()
}

// read locks the QA id and reads it as the write; nil when absent. With
// event, the read of the event key it queues goes in the same round trip
// and repeated, given its command, may answer errRepeated instead.
func (d *dupWrite) read(id string, event func(redis.Pipeliner) *redis.StringCmd, repeated func(*redis.StringCmd) error) (*stored, error) {
	d.release()
	unlock, err := d.s.lockMany(d.ctx, []string{id})
	if err != nil {
		return nil, err
	}
	var ev *redis.StringCmd
	w, err := d.s.load(d.ctx, d.p, []string{id}, d.extra, d.evKey, func(pipe redis.Pipeliner) {
		if event != nil {
			ev = event(pipe)
		}
	})
	if repeated != nil {
		if rerr := repeated(ev); rerr != nil {
			err = rerr
		}
	}
	if err != nil {
		unlock()
		return nil, err
	}
	d.w, d.unlock = w, unlock
	return w.recs[0], nil
}

// of returns the write of dup: the one read already when dup is its QA.
func (d *dupWrite) of(dup *stored) (*write, error) {
	if d.w == nil || d.w.recs[0] != dup {
		if _, err := d.read(dup.ID, nil, nil); err != nil {
			return nil, err
		}
	}
	return d.w, nil
}

// release unlocks the QA read, if any.
func (d *dupWrite) release() {
	if d.unlock != nil {
		d.unlock()
		d.w, d.unlock = nil, nil
	}
}

// errRepeated: the candidate's event was applied before; its stored
// result answers it.
var errRepeated = errors.New("repeated event")

// findDuplicate returns the QA that req duplicates (ledger.Duplicate): the
// one its content hash indexes, else one of the lexical matches of the
// question. A candidate that names its qa_id duplicates only the QA of
// that id (ledger.ExistingID), so no search is needed. With evKey, the
// first look-up reads that event key in the same round trip: when it
// holds a result, out gets it and the answer is errRepeated. The QA the
// content hash indexes is read by dups, under its lock, as the write that
// folds into it; the search unlocks it first.
func (s *Store) findDuplicate(ctx context.Context, req core.CandidateRequest, hash, evKey string, out *core.CandidateResult, dups *dupWrite) (*stored, error) {
	p := req.ProjectID
	// event queues the read of the event key on pipe; repeated answers
	// errRepeated, with out set, when it holds a result.
	event := func(pipe redis.Pipeliner) *redis.StringCmd {
		if evKey == "" {
			return nil
		}
		return pipe.Get(ctx, evKey)
	}
	repeated := func(ev *redis.StringCmd) error {
		if ev == nil {
			return nil
		}
		v, err := ev.Result()
		if err != nil {
			return nil
		}
		if err := json.Unmarshal([]byte(v), out); err != nil {
			return fmt.Errorf("stored event result is corrupt: %w", err)
		}
		return errRepeated
	}
	return ledger.FindDuplicate(req, hash, func(st *stored) core.Record { return st.record(true) },
		func(id string) (*stored, error) {
			// The QA of the candidate's own qa_id is read under its lock
			// as the write that folds into it.
			return dups.read(id, event, repeated)
		},
		func() (*stored, error) {
			pipe := s.rdb.Pipeline()
			cmd := pipe.HGet(ctx, s.k.hashes(p, hashField(hash)), hashField(hash))
			ev := event(pipe)
			if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
				return nil, nil // the look-up failed: the search below decides
			}
			if err := repeated(ev); err != nil {
				return nil, err
			}
			id, err := cmd.Result()
			if err != nil {
				return nil, nil // no QA with this hash
			}
			return dups.read(id, nil, nil)
		},
		func() ([]*stored, error) {
			dups.release()
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
