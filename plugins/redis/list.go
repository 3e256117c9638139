package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// fullRep reads a project's whole reputation book (admin paths).
func (s *Store) fullRep(ctx context.Context, p string) (reputation, error) {
	rep := reputation{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}
	m, err := s.rdb.HGetAll(ctx, s.k.rep(p)).Result()
	if err != nil {
		return rep, err
	}
	fields := make([]string, 0, len(m))
	vals := make([]any, 0, len(m))
	for f, v := range m {
		fields = append(fields, f)
		vals = append(vals, v)
	}
	fillRep(&rep, fields, vals)
	return rep, nil
}

// listChunk is how many list entries one round trip reads.
const listChunk = 200

type listEntry struct {
	score int64
	id    string
}

// entries reads the (created_at, qa_id) of every record of project p from
// its doc-id buckets (one pipeline of HGETALLs per 512 buckets), in list
// order: created_at descending, then qa_id descending.
func (s *Store) entries(ctx context.Context, p string) ([]listEntry, error) {
	seq, err := s.rdb.HGet(ctx, s.k.stats(p), "seq").Int64()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []listEntry
	const perPipe = 512
	for first := uint64(0); first <= uint64(seq)/docBucket; first += perPipe {
		pipe := s.rdb.Pipeline()
		var cmds []*redis.MapStringStringCmd
		for b := first; b < first+perPipe && b <= uint64(seq)/docBucket; b++ {
			cmds = append(cmds, pipe.HGetAll(ctx, s.k.docs(p, b*docBucket)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for _, c := range cmds {
			for _, v := range c.Val() {
				id, created := docEntry(v)
				out = append(out, listEntry{score: created, id: id})
			}
		}
	}
	slices.SortFunc(out, func(a, b listEntry) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.id, a.id))
	})
	return out, nil
}

// walk calls fn for the project's records in list order (newest first:
// created_at descending, then qa_id descending), starting after the cursor
// entry when after is set, until fn returns false.
func (s *Store) walk(ctx context.Context, p string, after *listEntry, fn func(e listEntry, st *stored) bool) error {
	all, err := s.entries(ctx, p)
	if err != nil {
		return err
	}
	if after != nil {
		i, _ := slices.BinarySearchFunc(all, *after, func(e, t listEntry) int {
			return cmp.Or(cmp.Compare(t.score, e.score), cmp.Compare(t.id, e.id))
		})
		for i < len(all) && all[i] == *after {
			i++
		}
		all = all[i:]
	}
	for len(all) > 0 {
		entries := all[:min(listChunk, len(all))]
		all = all[len(entries):]
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.id
		}
		sts, err := s.readRecords(ctx, p, ids)
		if err != nil {
			return err
		}
		for i, st := range sts {
			if st != nil && !fn(entries[i], st) {
				return nil
			}
		}
	}
	return nil
}

// readRecords reads the records ids of project p in one round trip
// (their keys share p's slot); an absent one is nil.
func (s *Store) readRecords(ctx context.Context, p string, ids []string) ([]*stored, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.k.qa(p, id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]*stored, len(ids))
	for i, v := range vals {
		if str, ok := v.(string); ok {
			if out[i], err = decodeStored(p, ids[i], str); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// List pages through a project's own records, newest first
// (ledger.ListQuery): the walk is the project's doc-id entries, read with
// its reputation book.
func (s *Store) List(ctx context.Context, req core.ListRequest) (core.ListPage, error) {
	const op = "list"
	q, err := ledger.NewListQuery(req, ledger.CursorText)
	if err != nil {
		return core.ListPage{}, s.wrap(ctx, op, err)
	}
	rep, err := s.fullRep(ctx, req.ProjectID)
	if err != nil {
		return core.ListPage{}, s.wrap(ctx, op, err)
	}
	now := s.cfg.clock().UTC()
	page, err := q.Page(ctx, func(after *ledger.ListPos, yield func(ledger.ListPos, ledger.Entry) bool) error {
		var from *listEntry
		if after != nil {
			from = &listEntry{score: after.Created, id: after.ID}
		}
		return s.walk(ctx, req.ProjectID, from, func(e listEntry, st *stored) bool {
			return yield(ledger.ListPos{Created: e.score, ID: e.id}, ledger.Entry{Rec: s.refresh(rep, st, now), State: st.State})
		})
	})
	if err != nil {
		return core.ListPage{}, s.wrap(ctx, op, err)
	}
	return page, nil
}

// Stats summarises a project's own records from the statistics kept write
// by write (agg.go): the records as of their last write, not refreshed at
// now (a QA's trust, level and status are as of its last write). A
// project written before the store kept them gets them built first, once.
func (s *Store) Stats(ctx context.Context, projectID string) (core.ProjectStats, error) {
	const op = "stats"
	if err := core.ValidateProjectID(projectID); err != nil {
		return core.ProjectStats{}, fmt.Errorf("redis: %s: %w", op, err)
	}
	out, err := s.stats(ctx, projectID)
	if err != nil {
		return core.ProjectStats{}, s.wrap(ctx, op, err)
	}
	return out, nil
}

// stats is Stats of a valid project id p, its errors unwrapped.
func (s *Store) stats(ctx context.Context, p string) (core.ProjectStats, error) {
	out, built, err := s.keptStats(ctx, p)
	if err != nil || built {
		return out, err
	}
	if err := s.buildStats(ctx, p); err != nil {
		return core.ProjectStats{}, err
	}
	if out, built, err = s.keptStats(ctx, p); err == nil && !built {
		err = errors.New("the statistics were built but are not marked so")
	}
	return out, err
}

// asWrittenAll is the records sts (nil ones skipped) of project p as
// their last writes left them, those with a share: one pipeline of their
// shares and by-trust scores.
func (s *Store) asWrittenAll(ctx context.Context, p string, sts []*stored) (map[string]core.Record, error) {
	out := map[string]core.Record{}
	pipe := s.rdb.Pipeline()
	type read struct {
		share *redis.StringCmd
		trust *redis.FloatCmd
	}
	reads := map[*stored]read{}
	for _, st := range sts {
		if st != nil {
			reads[st] = read{pipe.HGet(ctx, s.k.shares(p, st.Doc), docField(st.Doc)), pipe.ZScore(ctx, s.k.byTrust(p, st.Doc), st.ID)}
		}
	}
	if len(reads) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for st, c := range reads {
		if c.share.Val() == "" {
			continue
		}
		var ranked *float64
		if trust, err := c.trust.Result(); err == nil {
			ranked = &trust
		}
		r, err := asWritten(st, c.share.Val(), ranked)
		if err != nil {
			return nil, err
		}
		out[st.ID] = r
	}
	return out, nil
}

// dayCounts is the validations per day of a days hash (keys.days),
// oldest first.
func dayCounts(days map[string]string) []core.DayCount {
	byDay := map[string]*core.DayCount{}
	for f, v := range days {
		day, kind, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		d := byDay[day]
		if d == nil {
			d = &core.DayCount{Day: day}
			byDay[day] = d
		}
		if kind == "p" {
			d.Passes += n
		} else {
			d.Fails += n
		}
	}
	list := []core.DayCount{}
	for _, day := range slices.Sorted(maps.Keys(byDay)) {
		list = append(list, *byDay[day])
	}
	return list
}

// Projects lists the projects the store holds with their totals: the
// counts of their kept statistics, read for every project in one round
// trip; a project whose statistics are not built yet is summarised the
// way Stats reads it.
func (s *Store) Projects(ctx context.Context) ([]core.ProjectSummary, error) {
	const op = "projects"
	ps, err := s.rdb.SMembers(ctx, s.k.projects()).Result()
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	slices.Sort(ps)
	pipe := s.rdb.Pipeline()
	aggs := make([]*redis.MapStringStringCmd, len(ps))
	for i, p := range ps {
		aggs[i] = pipe.HGetAll(ctx, s.k.agg(p))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	out := make([]core.ProjectSummary, 0, len(ps))
	for i, p := range ps {
		counts := readCounts(aggs[i].Val())
		if aggs[i].Val()[aggBuilt] != statsLayout {
			if counts, err = s.stats(ctx, p); err != nil {
				return nil, s.wrap(ctx, op, err)
			}
		}
		out = append(out, core.SummaryOf(p, counts))
	}
	return out, nil
}
