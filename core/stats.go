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

// StatsBuilder aggregates a project's records into a ProjectStats, the
// same way in every store: call Add for each record (its computed fields
// current at now), then Stats.
type StatsBuilder struct {
	out     ProjectStats
	now     time.Time
	live    []Record
	waiting []Record
}

// NewStatsBuilder starts the stats of project at now.
func NewStatsBuilder(projectID string, now time.Time) *StatsBuilder {
	return &StatsBuilder{now: now, out: ProjectStats{
		ProjectID:        projectID,
		ByStatus:         map[Status]int{},
		ByLevel:          map[string]int{},
		TrustHistogram:   make([]int, 10),
		ValidationsByDay: []DayCount{},
		Top:              []Record{},
		Worst:            []Record{},
		AwaitingReview:   []Record{},
	}}
}

// Add counts one record.
func (b *StatsBuilder) Add(r Record) {
	AddCounts(&b.out, r, 1)
	if ExpiresSoon(r, b.now) {
		b.out.ExpiringSoon++
	}
	if StatsLive(r) {
		b.live = append(b.live, r)
		if r.Quarantined {
			b.waiting = append(b.waiting, r)
		}
	}
}

// StatsLive reports whether r counts among the top, worst and quarantined
// QAs of ProjectStats: it is not deprecated.
func StatsLive(r Record) bool { return r.Status != StatusDeprecated }

// ExpiresSoon reports whether r counts in ProjectStats.ExpiringSoon at now.
func ExpiresSoon(r Record, now time.Time) bool {
	return !r.TTLExpireAt.IsZero() && r.TTLExpireAt.Sub(now) <= ExpiringSoon
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
	if StatsLive(r) && r.Quarantined {
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
// use rate, and the lists and figures the caller found (top and worst in
// their orders, awaiting review, expiring soon, validations per day).
func FinishStats(projectID string, counts ProjectStats, top, worst, awaiting []Record, expiringSoon int, days []DayCount) ProjectStats {
	o := counts
	o.ProjectID = projectID
	o.initCounts()
	o.UseRate = 0
	if o.Shown > 0 {
		o.UseRate = float64(o.Used) / float64(o.Shown)
	}
	o.ExpiringSoon = expiringSoon
	o.Top = append([]Record{}, top[:min(StatsTop, len(top))]...)
	o.Worst = append([]Record{}, worst[:min(StatsTop, len(worst))]...)
	o.AwaitingReview = append([]Record{}, awaiting[:min(StatsAwaiting, len(awaiting))]...)
	o.ValidationsByDay = days
	if o.ValidationsByDay == nil {
		o.ValidationsByDay = []DayCount{}
	}
	return o
}

// TrustBucket is the trust histogram's bucket of t: 10 buckets of 0.1.
func TrustBucket(t float64) int { return min(max(int(t*10), 0), 9) }

// StatsTopOrder orders ProjectStats.Top: trust descending, then qa_id.
func StatsTopOrder(a, b Record) int {
	return cmp.Or(cmp.Compare(b.TrustScore, a.TrustScore), cmp.Compare(a.QAID, b.QAID))
}

// StatsWorstOrder orders ProjectStats.Worst: Top's order reversed.
func StatsWorstOrder(a, b Record) int { return StatsTopOrder(b, a) }

// StatsAwaitingOrder orders ProjectStats.AwaitingReview: newest first,
// then qa_id.
func StatsAwaitingOrder(a, b Record) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.QAID, b.QAID))
}

// Stats returns the aggregate with the use rate, the best and worst
// non-deprecated QAs by trust, the newest quarantined QAs waiting for a
// human, and days (validations per day, oldest first).
func (b *StatsBuilder) Stats(days []DayCount) ProjectStats {
	live := slices.Clone(b.live)
	slices.SortFunc(live, StatsTopOrder)
	top := slices.Clone(live[:min(StatsTop, len(live))])
	slices.SortFunc(live, StatsWorstOrder)
	waiting := slices.Clone(b.waiting)
	slices.SortFunc(waiting, StatsAwaitingOrder)
	return FinishStats(b.out.ProjectID, b.out, top, live, waiting, b.out.ExpiringSoon, days)
}
