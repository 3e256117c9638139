package bench

import "github.com/memex-dev/memex/evalset"

// The metrics and the synthetic corpus are memex's own (package evalset),
// so every engine is scored and loaded exactly as memex-bench does.
type (
	Metrics     = evalset.Metrics
	Accumulator = evalset.Accumulator
	Synthetic   = evalset.Synthetic
)

var (
	RR           = evalset.RR
	Recall       = evalset.Recall
	NDCG         = evalset.NDCG
	NewSynthetic = evalset.NewSynthetic
)
