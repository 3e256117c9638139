package ledger

import "github.com/memex-dev/memex/core"

// minSearchCandidates is the fewest scored hits a search ranks on trust.
const minSearchCandidates = 50

// SearchCandidates is how many hits, best relevance first, a search for a
// page of limit matches ranks on trust: four per match and never fewer
// than 50, so a trusted QA a little lower in relevance still makes the
// page.
func SearchCandidates(limit int) int { return max(4*limit, minSearchCandidates) }

// Rankable is a search hit of relevance on rec (its derived fields
// refreshed) as project's search hands it to core.Rank, and whether it may
// rank at all: it must be visible to project (core.Rank then drops
// deprecated QAs and those below min_score).
func Rankable(rec core.Record, project string, relevance float64) (core.Match, bool) {
	if !Visible(rec.ProjectID, rec.SharedProjects, project) {
		return core.Match{}, false
	}
	return core.Match{QAID: rec.QAID, ProjectID: rec.ProjectID, Relevance: relevance, Trust: rec.TrustScore,
		Freshness: rec.Freshness, ValidationLevel: rec.ValidationLevel, Status: rec.Status, UpdatedAt: rec.UpdatedAt}, true
}
