package core

import (
	"cmp"
	"slices"
	"time"
)

// StatsTop is how many best and worst QAs ProjectStats lists.
const StatsTop = 5

// StatsAwaiting is how many quarantined QAs waiting for a human
// ProjectStats lists (newest first).
const StatsAwaiting = 20

// ExpiringSoon is the window in which a QA's expiry counts as soon.
const ExpiringSoon = 7 * 24 * time.Hour

// StatsShare is a QA's share of its project's statistics beyond its
// counts (AddCounts), as one write leaves it: the indexes a store that
// keeps the statistics write by write files the QA in, each store in its
// own layout, and takes it out of again when the QA is next written or
// deleted. The lists of ProjectStats and ExpiringSoon are read from them
// (FinishStats, ExpiryBound).
type StatsShare struct {
	// Ranked: Top and Worst pick from the QA, by Trust.
	Ranked bool
	Trust  float64
	// Expires: ExpiringSoon counts the QA once ExpireAt is near enough.
	Expires  bool
	ExpireAt time.Time
	// Awaiting: the QA waits for a human (it counts in Quarantined), and
	// AwaitingReview picks from it, newest CreatedAt first.
	Awaiting  bool
	CreatedAt time.Time
}

// ShareOf is r's share: a QA is live unless deprecated; a live one is
// ranked by its trust and awaits review when quarantined; one with an
// expiry is counted by it.
func ShareOf(r Record) StatsShare {
	live := r.Status != StatusDeprecated
	return StatsShare{
		Ranked: live, Trust: r.TrustScore,
		Expires: !r.TTLExpireAt.IsZero(), ExpireAt: r.TTLExpireAt,
		Awaiting: live && r.Quarantined, CreatedAt: r.CreatedAt,
	}
}

// ExpiryBound is the latest expiry ExpiringSoon counts at now: those
// within ExpiringSoon ahead, and the past ones the expiry job has not
// applied yet.
func ExpiryBound(now time.Time) time.Time { return now.Add(ExpiringSoon) }

// StatsBuilder aggregates a project's records into a ProjectStats, the
// same way in every store: call Add for each record (its computed fields
// current at now, or as its last write left them), then Stats. It is what
// the statistics a store keeps write by write equal, and the store's
// answer while it cannot read them.
type StatsBuilder struct {
	out     ProjectStats
	bound   time.Time
	ranked  []Record
	waiting []Record
}

// NewStatsBuilder starts the stats of project at now.
func NewStatsBuilder(projectID string, now time.Time) *StatsBuilder {
	b := &StatsBuilder{bound: ExpiryBound(now)}
	b.out.ProjectID = projectID
	return b
}

// Add counts one record.
func (b *StatsBuilder) Add(r Record) {
	AddCounts(&b.out, r, 1)
	sh := ShareOf(r)
	if sh.Expires && !sh.ExpireAt.After(b.bound) {
		b.out.ExpiringSoon++
	}
	if sh.Ranked {
		b.ranked = append(b.ranked, r)
	}
	if sh.Awaiting {
		b.waiting = append(b.waiting, r)
	}
}

// Stats returns the aggregate with the use rate, the best and worst
// ranked QAs, the newest of those awaiting review, and days (validations
// per day, oldest first).
func (b *StatsBuilder) Stats(days []DayCount) ProjectStats {
	return FinishStats(b.out.ProjectID, b.out, b.ranked, b.ranked, b.waiting, b.out.ExpiringSoon, days)
}

// AddCounts adds sign (1 or -1) times r's share of the counts of
// ProjectStats (everything but ExpiringSoon, which depends on the time,
// and the lists), the way Add counts it: a store that keeps the counts
// write by write subtracts what a write replaced and adds what it wrote.
func AddCounts(o *ProjectStats, r Record, sign int) {
	o.initCounts()
	o.Total += sign
	o.ByStatus[r.Status] += sign
	if o.ByStatus[r.Status] == 0 {
		delete(o.ByStatus, r.Status)
	}
	o.ByLevel[r.Level] += sign
	if o.ByLevel[r.Level] == 0 {
		delete(o.ByLevel, r.Level)
	}
	o.TrustHistogram[TrustBucket(r.TrustScore)] += sign
	s64 := int64(sign)
	o.Shown += s64 * r.UsageCount
	o.Used += s64 * r.UseCount
	o.Passes += s64 * r.SuccessCount
	o.Fails += s64 * r.FailureCount
	if r.Status == StatusStale {
		o.Stale += sign
	}
	if ShareOf(r).Awaiting {
		o.Quarantined += sign
	}
}

// initCounts makes the maps and the histogram of o.
func (o *ProjectStats) initCounts() {
	if o.ByStatus == nil {
		o.ByStatus = map[Status]int{}
	}
	if o.ByLevel == nil {
		o.ByLevel = map[string]int{}
	}
	if len(o.TrustHistogram) != 10 {
		o.TrustHistogram = make([]int, 10)
	}
}

// FinishStats completes counts kept by AddCounts into a ProjectStats: the
// use rate, and the lists and figures the caller found, and the
// validations per day, oldest first. The lists hold at least the first
// records of their orders, in any order (FinishStats sorts them in place;
// top and worst may be one slice): top the StatsTop first ranked shares
// by trust descending, then qa_id ascending; worst the StatsTop last of
// that order; awaiting the StatsAwaiting first awaiting shares by
// CreatedAt descending, then qa_id ascending. A store keeping the shares
// in those orders reads the lists from the ends of its indexes.
// expiringSoon counts the expiries up to ExpiryBound.
func FinishStats(projectID string, counts ProjectStats, top, worst, awaiting []Record, expiringSoon int, days []DayCount) ProjectStats {
	o := counts
	o.ProjectID = projectID
	o.initCounts()
	o.UseRate = 0
	if o.Shown > 0 {
		o.UseRate = float64(o.Used) / float64(o.Shown)
	}
	o.ExpiringSoon = expiringSoon
	o.Top = firstOf(top, StatsTop, topOrder)
	o.Worst = firstOf(worst, StatsTop, func(a, b Record) int { return topOrder(b, a) })
	o.AwaitingReview = firstOf(awaiting, StatsAwaiting, awaitingOrder)
	o.ValidationsByDay = days
	if o.ValidationsByDay == nil {
		o.ValidationsByDay = []DayCount{}
	}
	return o
}

// firstOf sorts rs by order and returns a copy of its first n.
func firstOf(rs []Record, n int, order func(a, b Record) int) []Record {
	slices.SortFunc(rs, order)
	return append([]Record{}, rs[:min(n, len(rs))]...)
}

// TrustBucket is the trust histogram's bucket of t: 10 buckets of 0.1.
func TrustBucket(t float64) int { return min(max(int(t*10), 0), 9) }

// topOrder orders ProjectStats.Top: trust descending, then qa_id; Worst
// is in the reverse order.
func topOrder(a, b Record) int {
	return cmp.Or(cmp.Compare(b.TrustScore, a.TrustScore), cmp.Compare(a.QAID, b.QAID))
}

// awaitingOrder orders ProjectStats.AwaitingReview: newest first, then
// qa_id.
func awaitingOrder(a, b Record) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.QAID, b.QAID))
}
