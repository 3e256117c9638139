package service

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// issueReceipts records the receipts of a search (SPEC §5.4): one for the
// whole result (the X-Memex-Receipt header; a hit report quotes it) and
// one per QA (receipt_id on each match; a validation of that QA quotes
// it). Stores accept each receipt once, so one search backs one hit report
// and one validation per QA it served. It returns "" ids when receipts are
// off or the store could not record them: the search still answers (memory
// is advisory); reports quoting nothing then count for nothing. A search
// with no matches gets no receipt: it would vouch for nothing.
func (s *Server) issueReceipts(ctx context.Context, c echo.Context, project string, qaIDs []string) (string, []string) {
	if s.receipts == nil || len(qaIDs) == 0 {
		return "", nil
	}
	now := s.now().UTC()
	source := callerOf(c).id
	base := "rcpt_" + randomID(12)
	mk := func(id string, ids []string) core.Receipt {
		return core.Receipt{ID: id, ProjectID: project, Source: source, QAIDs: ids, IssuedAt: now, ExpiresAt: now.Add(s.cfg.ReceiptTTL)}
	}
	rs := make([]core.Receipt, 0, len(qaIDs)+1)
	rs = append(rs, mk(base, append([]string{}, qaIDs...)))
	for i, id := range qaIDs {
		rs = append(rs, mk(core.ItemReceiptID(base, i+1), []string{id}))
	}
	ok := make([]bool, len(rs))
	if b, isBatch := s.receipts.(receiptBatcher); isBatch {
		for i, err := range b.IssueReceipts(ctx, rs) {
			if i >= len(ok) {
				break
			}
			if err != nil {
				s.receiptFailed(project, err)
				continue
			}
			ok[i] = true
		}
	} else {
		var wg sync.WaitGroup
		for i := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.receipts.IssueReceipt(ctx, rs[i]); err != nil {
					s.receiptFailed(project, err)
					return
				}
				ok[i] = true
			}()
		}
		wg.Wait()
	}
	per := make([]string, len(qaIDs))
	issued := 0
	for i := range qaIDs {
		if ok[i+1] {
			per[i] = rs[i+1].ID
			issued++
		}
	}
	if ok[0] {
		issued++
		c.Response().Header().Set(wire.HeaderReceipt, base)
	}
	s.metrics.receipts.WithLabelValues("issued").Add(float64(issued))
	if !ok[0] {
		return "", per
	}
	return base, per
}

// receiptBatcher is a store that issues a search's receipts in one round
// trip (plugins/redis); other stores get one call per receipt, in parallel.
type receiptBatcher interface {
	IssueReceipts(ctx context.Context, rs []core.Receipt) []error
}

func (s *Server) receiptFailed(project string, err error) {
	s.metrics.storeErrors.WithLabelValues("receipt_issue").Inc()
	s.log.Warn("receipt not issued", "op", "receipt_issue", "project", project, "error", err)
}

// searchReceipt maps a per-QA receipt id ("<search receipt>.<n>") to its
// search receipt, so a hit report may quote any match's receipt_id.
func searchReceipt(id string) string {
	search, _ := core.SplitReceiptID(id)
	return search
}

// receiptVerdict says whether a report counts. enforced is false when
// receipts are off (no store support, require_receipts false, or an admin:
// human verdicts need no receipt); then every report counts.
type receiptVerdict struct {
	enforced bool
	ok       bool
	reason   string
	receipt  core.Receipt
	redeemed string // the receipt id redeemed (restoreReceipt)
}

// restoreReceipt gives back the receipt v redeemed when the write it
// guarded did not commit (SPEC §5.4), on a store that can
// (core.ReceiptRestorer). The write failed, maybe because the request ran
// out of time: the restore gets a moment of its own.
func (s *Server) restoreReceipt(ctx context.Context, c echo.Context, project string, v receiptVerdict) {
	rr, ok := s.receipts.(core.ReceiptRestorer)
	if !ok || !v.enforced || !v.ok {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(s.cfg.RequestTimeout, 2*time.Second))
	defer cancel()
	if err := rr.RestoreReceipt(rctx, project, v.redeemed, callerOf(c).id); err != nil {
		s.metrics.storeErrors.WithLabelValues("receipt_restore").Inc()
		s.log.Warn("receipt not restored", "op", "receipt_restore", "project", project, "error", err)
		return
	}
	s.metrics.receipts.WithLabelValues("restored").Inc()
}

// checkReceipt redeems the receipt a report quotes for the caller.
func (s *Server) checkReceipt(ctx context.Context, c echo.Context, project, receiptID string) (receiptVerdict, error) {
	who := callerOf(c)
	if s.receipts == nil || !s.cfg.RequireReceipts || who.admin {
		return receiptVerdict{}, nil
	}
	v := receiptVerdict{enforced: true}
	if receiptID == "" {
		v.reason = wire.ReasonReceiptMissing
		s.metrics.receipts.WithLabelValues("missing").Inc()
		return v, nil
	}
	if err := core.ValidateQAID(receiptID); err != nil {
		return v, core.Invalid("receipt_id", "must be 1-128 characters of [A-Za-z0-9_.:-]")
	}
	r, err := s.receipts.RedeemReceipt(ctx, project, receiptID, who.id, s.now().UTC())
	switch {
	case errors.Is(err, core.ErrReceiptExpired):
		v.reason = wire.ReasonReceiptExpired
	case errors.Is(err, core.ErrNotFound):
		v.reason = wire.ReasonReceiptUnknown
	case errors.Is(err, core.ErrReceiptOtherSource):
		v.reason = wire.ReasonReceiptOtherKey
	case errors.Is(err, core.ErrConflict): // core.ErrReceiptUsed, or a store that does not say
		v.reason = wire.ReasonReceiptUsed
	case err != nil:
		return v, s.storeErr("receipt_redeem", err)
	case r.ProjectID != project:
		v.reason = wire.ReasonReceiptOtherProject
	case r.Source != who.id:
		v.reason = wire.ReasonReceiptOtherKey
	case !r.ExpiresAt.IsZero() && s.now().After(r.ExpiresAt):
		v.reason = wire.ReasonReceiptExpired
	default:
		v.ok, v.receipt, v.redeemed = true, r, receiptID
		s.metrics.receipts.WithLabelValues("accepted").Inc()
		return v, nil
	}
	s.metrics.receipts.WithLabelValues("rejected").Inc()
	return v, nil
}
