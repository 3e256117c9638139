package redisstore

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/trust"
)

// TestStatsKeptEqualScan: after random writes of every kind (candidates,
// quarantined ones, duplicates with evidence, validations, hits, verdicts,
// edits, deletes, imports, expiry, time passing), the statistics Stats
// keeps equal a scan of every record as written, in every project; and
// every record a write changed has the share of that write (its derived
// fields as read back at the write's time). Three seeds of 150 writes (a
// share missing a field, or refreshed without the write's effects, fails
// within them); the integration tier's TestStatsKeptEqualScanLong writes
// 400.
func TestStatsKeptEqualScan(t *testing.T) {
	testStatsKept(t, 150, func(t *testing.T, opts ...Option) *Store { return newShared(t, opts...) })
}

// testStatsKept writes steps random writes per seed to the stores open
// makes, checking after each write the shares it changed and every 30
// writes the statistics.
func testStatsKept(t *testing.T, steps int, open func(t *testing.T, opts ...Option) *Store) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			// Odd seeds run the single-user flavour: a duplicate's evidence
			// counts there.
			params := trust.DefaultParams()
			params.CountCreator = seed%2 == 1
			s := open(t, WithClock(func() time.Time { return now }), WithTrustParams(params))
			w := coretest.NewRandomWriter(seed, &now, "p1", "p2", core.GlobalProject)
			vers := map[string]int64{}
			for step := range steps {
				w.Write(t, s, step)
				checkShares(t, s, w.Projects, vers, step)
				if step%30 == 29 {
					checkStats(t, s, w.Projects)
				}
			}
			checkStats(t, s, w.Projects)
		})
	}
}

// checkShares compares the record each write since the last check changed
// (its version moved) as its share keeps it with the record read now:
// the write and this read ran at the same time with the same reputation.
func checkShares(t *testing.T, s *Store, projects []string, vers map[string]int64, step int) {
	t.Helper()
	ctx := t.Context()
	now := s.cfg.clock().UTC()
	for _, p := range projects {
		rep, err := s.fullRep(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		err = s.walk(ctx, p, nil, func(_ listEntry, st *stored) bool {
			key := p + "\x00" + st.ID
			seen[key] = true
			if vers[key] == st.ver {
				return true
			}
			vers[key] = st.ver
			written, err := s.asWrittenAll(ctx, p, []*stored{st})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := written[st.ID]
			if !ok {
				t.Fatalf("step %d: %s/%s (version %d) has no share", step, p, st.ID, st.ver)
			}
			want := s.refresh(rep, st, now)
			approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-9 })
			if d := cmp.Diff(want, got, approx); d != "" {
				t.Fatalf("step %d: %s/%s: the share differs from the record at its write (-read now +share):\n%s", step, p, st.ID, d)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		for key := range vers {
			if key[:len(p)+1] == p+"\x00" && !seen[key] {
				delete(vers, key)
			}
		}
	}
}

// writtenScan is the statistics from a read of every QA of p as its last
// write left it (its share's derived fields): what the kept ones must be.
func writtenScan(t *testing.T, s *Store, p string) core.ProjectStats {
	t.Helper()
	ctx := t.Context()
	sb := core.NewStatsBuilder(p, s.cfg.clock().UTC())
	var sts []*stored
	err := s.walk(ctx, p, nil, func(_ listEntry, st *stored) bool {
		sts = append(sts, st)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	written, err := s.asWrittenAll(ctx, p, sts)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		r, ok := written[st.ID]
		if !ok {
			t.Fatalf("%s has no share", st.ID)
		}
		sb.Add(r)
	}
	days, err := s.rdb.HGetAll(ctx, s.k.days(p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return sb.Stats(dayCounts(days))
}

// checkStats compares each project's Stats with a scan.
func checkStats(t *testing.T, s *Store, projects []string) {
	t.Helper()
	for _, p := range append(projects, "none") {
		kept, err := s.Stats(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(writtenScan(t, s, p), kept); d != "" {
			t.Fatalf("project %s: kept statistics differ from a scan (-scan +kept):\n%s", p, d)
		}
	}
}

// TestStatsBuilt: a project whose QAs were written without statistics
// (an older store: no agg, shares or sets) gets them built by two
// servers asking at the same time while writes go on, and they then
// equal a scan.
func TestStatsBuilt(t *testing.T) {
	a := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "c"})
	const p = "old"
	var ids []string
	for i := range 250 {
		res, err := a.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: fmt.Sprintf("question %d about %s", i, "widgets"),
			Answer: "answer", Metadata: map[string]any{"quarantined": i%7 == 0}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.QAID)
	}
	forgetStats(t, a, p)
	b := openPrefix(t, redistest.URL(t), a.k.prefix)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			if _, err := s.Stats(t.Context(), p); err != nil {
				errs <- err
			}
		})
	}
	wg.Go(func() {
		for i, id := range ids[:60] {
			vctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("src-%d", i%3)})
			if _, err := a.RecordValidation(vctx, core.ValidateRequest{ProjectID: p, QAID: id, Result: "pass", SignalStrength: "strong"}); err != nil {
				errs <- err
			}
			if i%10 == 0 {
				if err := b.Delete(t.Context(), p, ids[len(ids)-1-i]); err != nil {
					errs <- err
				}
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, _ := a.rdb.HGet(ctx, a.k.agg(p), aggBuilt).Result(); v == "" {
		t.Fatal("statistics not marked built")
	}
	checkStats(t, a, []string{p})
	if st, _ := a.Stats(t.Context(), p); st.Total != 250-6 || st.Quarantined == 0 {
		t.Errorf("total %d quarantined %d, want 244 and some", st.Total, st.Quarantined)
	}
}

// forgetStats deletes the statistics of p, as a store written before they
// were kept.
func forgetStats(t *testing.T, s *Store, p string) {
	t.Helper()
	keys, err := s.rdb.Keys(t.Context(), s.k.tag(p)+"k4:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no statistics to forget")
	}
	if err := s.rdb.Del(t.Context(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestStatsUpgradeFromLayout1: a project whose statistics are in layout 1
// (keys.oldStatsKeys: an agg hash, qa_id-keyed shares, qa_id sets) and in
// no later one gets the current layout built from its records, through a
// build stopped halfway and writes after it, and reads the statistics of
// a scan; layout 1 is deleted and never read (its counts here are wrong
// on purpose).
func TestStatsUpgradeFromLayout1(t *testing.T) {
	s := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "c"})
	const p = "up"
	var ids []string
	for i := range 300 {
		res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: fmt.Sprintf("question %d about %s", i, "otters"),
			Answer: "answer", Metadata: map[string]any{"quarantined": i%5 == 0}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.QAID)
	}
	for _, id := range ids[:40] {
		if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: p, QAID: id, Result: "pass", SignalStrength: "strong"}); err != nil {
			t.Fatal(err)
		}
	}
	forgetStats(t, s, p)
	// Layout 1 as its writes left it: the agg hash marked built, shares
	// of named counters keyed by qa_id, qa_id members in every set.
	seq, err := s.rdb.HGet(ctx, s.k.stats(p), "seq").Uint64()
	if err != nil {
		t.Fatal(err)
	}
	old := s.k.oldStatsKeys(p, seq)
	tag := s.k.tag(p)
	pipe := s.rdb.Pipeline()
	pipe.HSet(ctx, tag+"agg", "v", "1", "t", "7", "s:candidate", "7", "l:L0", "7", "h:5", "7")
	for i, id := range ids {
		pipe.ZAdd(ctx, tag+[]string{"z:trust", "z:ttl", "z:quar"}[i%3], redis.Z{Score: float64(i), Member: id})
		pipe.HSet(ctx, tag+"sh:"+fmt.Sprint(i/docBucket), id, "h:5\x1e1\x1el:L0\x1e1\x1es:candidate\x1e1\x1et\x1e1\x1f0.5\x1f\x1f\x1f0.5\x1f1\x1f1\x1f1\x1f0\x1fcandidate\x1f0\x1f0")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// A build stopped after its first chunk (its process gone).
	all, err := s.entries(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.buildChunk(ctx, p, all[:listChunk], s.now()); err != nil {
		t.Fatal(err)
	}
	// Writes meanwhile, to QAs the stopped build reached and to others.
	for _, e := range []listEntry{all[0], all[len(all)-1]} {
		if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: p, QAID: e.id, Result: "fail", SignalStrength: "strong"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []listEntry{all[1], all[len(all)-2]} {
		if err := s.Delete(ctx, p, e.id); err != nil {
			t.Fatal(err)
		}
	}
	checkStats(t, s, []string{p})
	if st, _ := s.Stats(ctx, p); st.Total != 298 || st.Quarantined != 60-countQuarantined(all[1], all[len(all)-2], ids) {
		t.Errorf("total %d quarantined %d, want 298 and the quarantined ones left", st.Total, st.Quarantined)
	}
	if n, err := s.rdb.Exists(ctx, old...).Result(); err != nil || n != 0 {
		t.Errorf("%d keys of layout 1 left after the build (%v)", n, err)
	}
}

// TestStatsUpgradeFromLayout2: a project (spreadProject) whose
// statistics are in layout 2 (the shares and agg hash of layout 3, one
// by-trust and one by-expiry set for the whole project) gets layout 4
// built from its records, the same statistics as before, and layout 2
// deleted.
func TestStatsUpgradeFromLayout2(t *testing.T) {
	s, p := spreadProject(t)
	ctx := t.Context()
	before, err := s.Stats(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if before.ExpiringSoon == 0 || before.ExpiringSoon == before.Total || before.Quarantined == 0 {
		t.Fatalf("expiring soon %d of %d, quarantined %d: want some of each", before.ExpiringSoon, before.Total, before.Quarantined)
	}
	// Layout 2 as its writes left it: the buckets of each set in one set.
	tag := s.k.tag(p)
	seq, err := s.rdb.HGet(ctx, s.k.stats(p), "seq").Uint64()
	if err != nil {
		t.Fatal(err)
	}
	pipe := s.rdb.Pipeline()
	pipe.Rename(ctx, s.k.agg(p), tag+"k2:agg")
	pipe.Rename(ctx, s.k.awaiting(p), tag+"k2:quar")
	for b := uint64(0); b <= seq/docBucket; b++ {
		doc := b * docBucket
		pipe.Rename(ctx, s.k.shares(p, doc), tag+"k2:sh:"+fmt.Sprint(b))
		pipe.ZUnionStore(ctx, tag+"k2:trust", &redis.ZStore{Keys: []string{tag + "k2:trust", s.k.byTrust(p, doc)}})
		pipe.ZUnionStore(ctx, tag+"k2:ttl", &redis.ZStore{Keys: []string{tag + "k2:ttl", s.k.byExpiry(p, doc)}})
		pipe.Del(ctx, s.k.byTrust(p, doc), s.k.byExpiry(p, doc))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	checkUpgraded(t, s, p, before)
}

// TestStatsUpgradeFromLayout3: the project of TestStatsUpgradeFromLayout2
// with layout 3 of the statistics (layout 4's keys under "k3:", no
// by-trust ends) gets layout 4 built: the same statistics as before,
// equal to a scan, layout 3 deleted.
func TestStatsUpgradeFromLayout3(t *testing.T) {
	s, p := spreadProject(t)
	ctx := t.Context()
	before, err := s.Stats(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := s.rdb.Keys(ctx, s.k.tag(p)+"k4:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	pipe := s.rdb.Pipeline()
	for _, k := range keys {
		pipe.Rename(ctx, k, strings.Replace(k, ":k4:", ":k3:", 1))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.rdb.Exists(ctx, s.k.tag(p)+"k3:agg", s.k.tag(p)+"k3:t:2", s.k.tag(p)+"k3:e:1").Result(); err != nil || n != 3 {
		t.Fatalf("%d of 3 keys of layout 3 (%v): the case tests nothing", n, err)
	}
	checkUpgraded(t, s, p, before)
}

// checkUpgraded checks that p, its statistics moved to an older layout,
// reads before's statistics, equal to a scan, with the older layouts
// deleted and the buckets listpacks.
func checkUpgraded(t *testing.T, s *Store, p string, before core.ProjectStats) {
	t.Helper()
	ctx := t.Context()
	seq, err := s.rdb.HGet(ctx, s.k.stats(p), "seq").Uint64()
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Stats(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after); d != "" {
		t.Fatalf("statistics differ after the upgrade (-before +after):\n%s", d)
	}
	checkStats(t, s, []string{p})
	if n, err := s.rdb.Exists(ctx, s.k.oldStatsKeys(p, seq)...).Result(); err != nil || n != 0 {
		t.Errorf("%d keys of older layouts left after the build (%v)", n, err)
	}
	for _, k := range []string{s.k.byTrust(p, 0), s.k.byExpiry(p, 299)} {
		if enc, err := s.rdb.ObjectEncoding(ctx, k).Result(); err != nil || enc != "listpack" {
			t.Errorf("%s is encoded %q (%v), want a listpack", k, enc, err)
		}
	}
}

// TestStatsUpgradeFromLayout4: the project of TestStatsUpgradeFromLayout2
// with layout 4 of the statistics (these keys, marked built as layout
// 4, with the by-trust buckets' first and last members in "k4:tf" and
// "k4:tl") gets layout 5 built: the same statistics as before, equal to
// a scan, the ends deleted.
func TestStatsUpgradeFromLayout4(t *testing.T) {
	s, p := spreadProject(t)
	ctx := t.Context()
	before, err := s.Stats(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	tag := s.k.tag(p)
	pipe := s.rdb.Pipeline()
	pipe.HSet(ctx, s.k.agg(p), aggBuilt, "1")
	for b := range uint64(3) {
		for j, end := range []string{"k4:tf", "k4:tl"} {
			zs, err := s.rdb.ZRangeWithScores(ctx, s.k.byTrust(p, b*docBucket), int64(-j), int64(-j)).Result()
			if err != nil || len(zs) != 1 {
				t.Fatalf("bucket %d: ends %v (%v), want one", b, zs, err)
			}
			pipe.ZAdd(ctx, tag+end, redis.Z{Score: zs[0].Score, Member: fmt.Sprint(zs[0].Member, " ", b)})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	checkUpgraded(t, s, p, before)
	if v, err := s.rdb.HGet(ctx, s.k.agg(p), aggBuilt).Result(); err != nil || v != statsLayout {
		t.Errorf("statistics marked %q (%v), want layout %s", v, err, statsLayout)
	}
}

// spreadProject is a project of 300 QAs filling three document buckets:
// most share one trust (ties across buckets), 60 are written
// quarantined, 40 validated, the others expire, a third of them soon, in
// every bucket.
func spreadProject(t *testing.T) (*Store, string) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	s := newShared(t, WithClock(func() time.Time { return now }))
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "c"})
	const p = "up2"
	var ids []string
	for i := range 300 {
		// Creation times out of document order, so the QAs expiring soon
		// (candidates expire 30 days after their creation) are in every
		// bucket.
		now = start.Add(time.Duration(i*7%300) * 3 * time.Hour)
		res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: fmt.Sprintf("question %d about %s", i, "otters"),
			Answer: "answer", Metadata: map[string]any{"quarantined": i%5 == 0}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.QAID)
	}
	now = start.Add(900 * time.Hour)
	for i := range 40 {
		id := ids[i*7]
		vctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("src-%d", i%3)})
		if _, err := s.RecordValidation(vctx, core.ValidateRequest{ProjectID: p, QAID: id, Result: []string{"pass", "fail"}[i%2], SignalStrength: "strong"}); err != nil {
			t.Fatal(err)
		}
	}
	return s, p
}

// countQuarantined counts the entries among a and b whose qa_id is at an
// index of ids that TestStatsUpgradeFromLayout1 wrote quarantined.
func countQuarantined(a, b listEntry, ids []string) int {
	n := 0
	for i, id := range ids {
		if i%5 == 0 && (id == a.id || id == b.id) {
			n++
		}
	}
	return n
}

// TestZeroTrustScore: a ranked QA of trust 0 is scored "0" (a listpack
// integer, not the string "-0"), and its score reads back as a trust of
// 0, not -0 (it would show as such).
func TestZeroTrustScore(t *testing.T) {
	_, score := shareOf(core.Record{QAID: "q", Status: core.StatusActive})
	if score != "0" {
		t.Fatalf("by-trust score %q, want 0", score)
	}
	st := &stored{ID: "q", State: trust.NewState("c", time.Now())}
	ranked := 0.0
	r, err := asWritten(st, "active\x1fL0\x1f0\x1fr\x1f\x1f1\x1f1\x1f0", &ranked)
	if err != nil || r.TrustScore != 0 || math.Signbit(r.TrustScore) {
		t.Fatalf("trust %v (%v), want 0", r.TrustScore, err)
	}
}
