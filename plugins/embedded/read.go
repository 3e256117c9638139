package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust/ledger"
)

// Search returns the visible QAs matching req.Query in Rank order. It reads
// the postings of the query's terms, then only the records of the best
// lexical candidates.
func (s *Store) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded: search: %w", err)
	}
	if err := req.Normalize(); err != nil {
		return nil, fmt.Errorf("embedded: search: %w", err)
	}
	if strings.TrimSpace(req.Query) == "" {
		return []core.Match{}, nil
	}
	now := s.cfg.clock().UTC()
	var ms []core.Match
	err := s.view(ctx, "search", func(tx *bolt.Tx) error {
		// Rank drops matches below min_score: the scorer skips them (and
		// the postings only they would need).
		hits, err := s.scorer.SearchMin(ctx, newSource(tx, visibleScopes(req.ProjectID)), req.Query,
			ledger.SearchCandidates(req.Limit), req.MinScore)
		if err != nil {
			return err
		}
		// Rank the candidates from their small rank entries, then load
		// the full records of the survivors only, keeping their rank.
		rep := reputation{tx}
		light := make([]core.Match, 0, len(hits))
		scores := make([]float64, 0, len(hits)) // light's hit scores
		for _, h := range hits {
			e, err := getByDoc(tx, h.Doc, true)
			if err != nil {
				return err
			}
			if e == nil {
				continue
			}
			s.ledger.Refresh(&e.Entry, rep, now)
			if m, ok := ledger.Rankable(e.Rec, req.ProjectID, h.Relevance); ok {
				light = append(light, m)
				scores = append(scores, h.Score)
			}
		}
		ms = core.Rank(light, req.MinScore, req.Limit, req.Explain)
		for i, m := range ms {
			st, err := getStored(tx, m.QAID) // present: its rank entry was just read
			if err != nil {
				return err
			}
			if st == nil {
				// Only a damaged file has a rank entry whose qa_id leads
				// to no record: say so instead of answering without it.
				return fmt.Errorf("index entry of %s names no record: the store file is damaged", m.QAID)
			}
			s.ledger.Refresh(&st.Entry, rep, now)
			ms[i] = core.MatchFromRecord(st.Rec, m.Relevance)
			ms[i].Score, ms[i].Explain = m.Score, m.Explain
		}
		// The function words of the query re-rank the answer (see
		// retrieval.Scorer.Rerank).
		s.scorer.RerankMatches(req.Query, ms, func(i int) float64 { return hitScore(light, scores, ms[i]) })
		ms = core.Rank(ms, req.MinScore, req.Limit, req.Explain)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// Get reads one record visible to projectID.
func (s *Store) Get(ctx context.Context, projectID, qaID string) (core.Record, error) {
	if err := core.ValidateProjectID(projectID); err != nil {
		return core.Record{}, fmt.Errorf("embedded: get: %w", err)
	}
	if err := core.ValidateQAID(qaID); err != nil {
		return core.Record{}, fmt.Errorf("embedded: get: %w", err)
	}
	now := s.cfg.clock().UTC()
	var out core.Record
	err := s.view(ctx, "get", func(tx *bolt.Tx) error {
		st, err := getStored(tx, qaID)
		if err != nil {
			return err
		}
		if st == nil || !ledger.Visible(st.Rec.ProjectID, st.Rec.SharedProjects, projectID) {
			return ledger.NotFound(qaID)
		}
		s.ledger.Refresh(&st.Entry, reputation{tx}, now)
		out = st.Rec
		return nil
	})
	return out, err
}

// List pages through a project's own records, newest first
// (ledger.ListQuery): the walk is the project's list keys, read backwards.
func (s *Store) List(ctx context.Context, req core.ListRequest) (core.ListPage, error) {
	q, err := ledger.NewListQuery(req, ledger.CursorBinary)
	if err != nil {
		return core.ListPage{}, fmt.Errorf("embedded: list: %w", err)
	}
	now := s.cfg.clock().UTC()
	var page core.ListPage
	err = s.view(ctx, "list", func(tx *bolt.Tx) (err error) {
		page, err = q.Page(ctx, func(after *ledger.ListPos, yield func(ledger.ListPos, ledger.Entry) bool) error {
			return s.walkList(tx, req.ProjectID, after, now, yield)
		})
		return err
	})
	if err != nil {
		return core.ListPage{}, err
	}
	return page, nil
}

// walkList yields the project's records (refreshed at now) from its list
// keys — project 0 created_at ns qa_id, ascending — backwards, starting
// below the key of after (nil: from the project's last key).
func (s *Store) walkList(tx *bolt.Tx, project string, after *ledger.ListPos, now time.Time,
	yield func(ledger.ListPos, ledger.Entry) bool) error {
	prefix := []byte(project + "\x00")
	from := []byte(project + "\x01")
	if after != nil {
		from = projectKey(project, uint64(after.Created), after.ID)
	}
	c := tx.Bucket(bList).Cursor()
	rep := reputation{tx}
	for k := seekBelow(c, from); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		pos := ledger.ListPos{Created: int64(binary.BigEndian.Uint64(k[len(prefix):])), ID: string(k[len(prefix)+8:])}
		st, err := getStored(tx, pos.ID)
		if err != nil {
			return err
		}
		if st == nil {
			continue
		}
		s.ledger.Refresh(&st.Entry, rep, now)
		if !yield(pos, st.Entry) {
			return nil
		}
	}
	return nil
}

// Stats summarises a project's own records from the statistics kept
// write by write (agg.go): the records as written, not refreshed at now
// (a QA's trust, level and status are as of its last write).
func (s *Store) Stats(ctx context.Context, projectID string) (core.ProjectStats, error) {
	if err := core.ValidateProjectID(projectID); err != nil {
		return core.ProjectStats{}, fmt.Errorf("embedded: stats: %w", err)
	}
	now := s.cfg.clock().UTC()
	var out core.ProjectStats
	building := false
	read := func(tx *bolt.Tx) (err error) {
		if _, building = statsBuilding(tx); building {
			return nil
		}
		out, err = readStats(tx, projectID, now, days(tx, projectID))
		return err
	}
	if err := s.view(ctx, "stats", read); err != nil || !building {
		return out, err
	}
	// The statistics of an older file are still being built: complete
	// the build, a chunk per transaction, then read them; if it cannot
	// proceed (a read-only file), scan the records.
	for building {
		err := s.update(ctx, "build the project statistics", func(tx *bolt.Tx) error {
			if err := s.statsBuildStep(tx, s.cfg.buildChunk, 0); err != nil {
				return err
			}
			return read(tx)
		})
		if err != nil {
			if ctx.Err() != nil {
				return core.ProjectStats{}, err
			}
			s.log.Warn("statistics build", "error", err)
			err = s.view(ctx, "stats", func(tx *bolt.Tx) (err error) {
				out, err = scanStats(ctx, tx, projectID, now)
				return err
			})
			return out, err
		}
	}
	return out, nil
}

// days is the project's validations per day, oldest first.
func days(tx *bolt.Tx, projectID string) []core.DayCount {
	prefix := []byte(projectID + "\x00")
	byDay := []core.DayCount{}
	dc := tx.Bucket(bDays).Cursor()
	for k, v := dc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = dc.Next() {
		n := readUvarints(v, 2)
		byDay = append(byDay, core.DayCount{Day: string(k[len(prefix):]), Passes: int64(n[0]), Fails: int64(n[1])})
	}
	return byDay
}

// hitScore is the search's raw score of m: scores[i] is that of light[i].
func hitScore(light []core.Match, scores []float64, m core.Match) float64 {
	for i, l := range light {
		if l.QAID == m.QAID && l.ProjectID == m.ProjectID {
			return scores[i]
		}
	}
	return 0
}
