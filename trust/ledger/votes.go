package ledger

import (
	"context"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// ValidationVote is a validation request as the vote of the principal in
// ctx (or of its run) at at: its result and signal strength
// (core.ValidateRequest.Outcome). req has passed Validate, which checks the
// outcome.
func (l *Ledger) ValidationVote(ctx context.Context, req core.ValidateRequest, at time.Time) trust.Vote {
	res, strength, _ := req.Outcome()
	return l.Vote(ctx, req.RunID, res, strength, at)
}

// CandidateVote is a candidate's evidence — the result of the run that
// wrote it — as a vote at at, for CandidateEvidence; false when the
// candidate carries no evidence.
func (l *Ledger) CandidateVote(ctx context.Context, req core.CandidateRequest, at time.Time) (trust.Vote, bool) {
	if req.Evidence == nil {
		return trust.Vote{}, false
	}
	strength := core.NormalizeStrength(string(req.Evidence.Strength))
	return l.Vote(ctx, req.RunID, req.Evidence.Result, strength, at), true
}
