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
	o := &b.out
	o.Total++
	o.ByStatus[r.Status]++
	o.ByLevel[r.Level]++
	o.TrustHistogram[min(max(int(r.TrustScore*10), 0), 9)]++
	o.Shown += r.UsageCount
	o.Used += r.UseCount
	o.Passes += r.SuccessCount
	o.Fails += r.FailureCount
	if r.Status == StatusStale {
		o.Stale++
	}
	if !r.TTLExpireAt.IsZero() && r.TTLExpireAt.Sub(b.now) <= ExpiringSoon {
		o.ExpiringSoon++
	}
	if r.Status != StatusDeprecated {
		b.live = append(b.live, r)
		if r.Quarantined {
			o.Quarantined++
			b.waiting = append(b.waiting, r)
		}
	}
}

// Stats returns the aggregate with the use rate, the best and worst
// non-deprecated QAs by trust, the newest quarantined QAs waiting for a
// human, and days (validations per day, oldest first).
func (b *StatsBuilder) Stats(days []DayCount) ProjectStats {
	o := b.out
	if o.Shown > 0 {
		o.UseRate = float64(o.Used) / float64(o.Shown)
	}
	live := slices.Clone(b.live)
	slices.SortFunc(live, func(a, b Record) int {
		return cmp.Or(cmp.Compare(b.TrustScore, a.TrustScore), cmp.Compare(a.QAID, b.QAID))
	})
	o.Top = append(o.Top, live[:min(StatsTop, len(live))]...)
	slices.Reverse(live)
	o.Worst = append(o.Worst, live[:min(StatsTop, len(live))]...)
	waiting := slices.Clone(b.waiting)
	slices.SortFunc(waiting, func(a, b Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.QAID, b.QAID))
	})
	o.AwaitingReview = append(o.AwaitingReview, waiting[:min(StatsAwaiting, len(waiting))]...)
	if days != nil {
		o.ValidationsByDay = days
	}
	return o
}
