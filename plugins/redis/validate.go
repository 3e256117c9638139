package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// refresh recomputes the record's derived fields from its evidence at now.
func (s *Store) refresh(rep trust.Reputation, st *stored, now time.Time) core.Record {
	return s.refreshRecord(rep, st, now, true)
}

// refreshRecord is refresh; withHash false leaves ContentHash unset when
// it is not stored (search matches do not carry it).
func (s *Store) refreshRecord(rep trust.Reputation, st *stored, now time.Time, withHash bool) core.Record {
	e := st.entry(withHash)
	s.ledger.Refresh(&e, rep, now)
	return e.Rec
}

// now is the store's clock in the precision records keep (milliseconds).
func (s *Store) now() time.Time { return s.cfg.clock().UTC().Truncate(time.Millisecond) }

// RecordValidation records a pass or fail of a QA visible to the project.
func (s *Store) RecordValidation(ctx context.Context, req core.ValidateRequest) (core.Record, error) {
	_, after, err := s.RecordValidationBefore(ctx, req)
	return after, err
}

// RecordValidationBefore is RecordValidation that also returns the record
// as it was just before (what Get would have answered), read in the same
// round trip: memex serve audits before → after without a Get of its own.
func (s *Store) RecordValidationBefore(ctx context.Context, req core.ValidateRequest) (before, after core.Record, err error) {
	before, after, _, err = s.recordValidation(ctx, req, nil)
	return before, after, err
}

// RecordValidationAudited is RecordValidationBefore that also appends the
// validation's audit entry, entry(before, after), to the audit stream of
// the entry's project in the write itself (the commit script's XADD):
// memex serve appends no entry of its own, and the entry is there exactly
// when the write is. audited is false when no entry was appended: the
// validation wrote nothing (an error, or a repeat whose QA was deleted
// since), or the entry names another project than the QA's owner (its
// stream is under another hash tag); the caller appends it then. A
// repeated event answers the result its first write stored, with the
// entry that write appended (audited).
func (s *Store) RecordValidationAudited(ctx context.Context, req core.ValidateRequest,
	entry func(before, after core.Record) core.AuditEntry) (before, after core.Record, audited bool, err error) {
	return s.recordValidation(ctx, req, entry)
}

// recordValidation is RecordValidationAudited, or RecordValidationBefore
// when entry is nil.
func (s *Store) recordValidation(ctx context.Context, req core.ValidateRequest,
	entry func(before, after core.Record) core.AuditEntry) (before, after core.Record, audited bool, err error) {
	const op = "record validation"
	if err := req.Validate(); err != nil {
		return core.Record{}, core.Record{}, false, fmt.Errorf("redis: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.Record{}, core.Record{}, false, s.wrap(ctx, op, err)
	}
	now := s.now()
	v := s.ledger.ValidationVote(ctx, req, now)
	eid := eventID(req.EventID)
	var out core.Record
	var st *stored // the QA as the write that answered read it
	err = updateWith(s, ctx, op, []string{req.QAID}, &out, func() (*write, error) {
		extra := []string{v.Source}
		found, guess, err := s.locateWithRep(ctx, req.ProjectID, extra, req.QAID)
		if err != nil {
			return nil, err
		}
		owner := req.ProjectID
		if found[0] != nil {
			owner = found[0].project
		}
		w := &write{s: s, ctx: ctx, p: owner, b: newBatch(s.k.event(owner, "v", req.ProjectID, eid)),
			recs: found, extra: extra}
		guess.take(w)
		return w, nil
	}, func(w *write) (*core.Record, error) {
		audited = false
		if st = w.recs[0]; st == nil {
			return nil, s.repeated(ctx, "v", req.ProjectID, eid, &out, ledger.NotFound(req.QAID))
		}
		if err := ledger.MayVote(ctx, st.project); err != nil {
			return nil, err
		}
		rep, err := w.reputation()
		if err != nil {
			return nil, err
		}
		e := st.entry(true)
		s.ledger.Refresh(&e, rep, now)
		before = e.Rec
		ch := s.ledger.Validation(&e, v, rep)
		st.set(e)
		res := withoutText(e.Rec)
		if err := w.put(st, ch, now); err != nil {
			return nil, err
		}
		if entry != nil {
			if audited, err = s.auditOp(w, entry(before, e.Rec)); err != nil {
				return nil, err
			}
		}
		return &res, nil
	})
	if err != nil {
		return core.Record{}, core.Record{}, false, err
	}
	if st != nil {
		out.Question, out.Answer, out.Summary = st.Q, st.A, st.Summary
	}
	return before, out, audited, nil
}

// withoutText is a validation's result as its event key keeps it for 24 h:
// the record without its question, answer and summary, which a repeat
// takes from the current record (the bulk of the bytes of every event key
// at thousands of validations per second). A repeat after the QA was
// deleted returns the record without its text.
func withoutText(r core.Record) core.Record {
	r.Question, r.Answer, r.Summary = "", "", ""
	return r
}

// repeated answers a write whose target vanished: if the event was already
// applied (the QA was deleted since), the stored result is returned, else
// errNF.
func (s *Store) repeated(ctx context.Context, kind, from, eid string, out any, errNF error) error {
	for _, p := range []string{from, core.GlobalProject} {
		v, err := s.rdb.Get(ctx, s.k.event(p, kind, from, eid)).Result()
		if err == nil {
			return json.Unmarshal([]byte(v), out)
		}
		if !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return errNF
}
