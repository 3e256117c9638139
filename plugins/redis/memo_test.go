package redisstore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

// TestHeadMemoFollowsChanges: after each kind of write by another process,
// a searcher whose memo holds the project's heads answers exactly what a
// store with no memo answers, and reads from Redis only the records the
// write changed; when the change feed cannot be followed (a server
// restarted from an older snapshot, a feed that lost entries) it reads
// them all again, as a store with no memo does.
func TestHeadMemoFollowsChanges(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	open := func() *Store { return openPrefix(t, url, prefix, WithClock(func() time.Time { return now })) }
	reader, writer := open(), open()
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "agent"})
	const p = "memo"
	var qas []string
	for i := range 12 {
		res, err := writer.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p,
			Question: fmt.Sprintf("how does the otter %d crack a shell", i), Answer: "otters crack shells with a stone " + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		qas = append(qas, res.QAID)
	}
	q := core.SearchRequest{ProjectID: p, Query: "otter crack shell stone", Limit: 20, MinScore: 0.01}
	const anyReads, allReads = -1, -2
	var repReads int64 // reputation fields the last check's search read
	check := func(step string, wantReads int64) {
		t.Helper()
		before, repBefore := reader.headReads.Load(), reader.repReads.Load()
		got, err := reader.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		reads := reader.headReads.Load() - before
		repReads = reader.repReads.Load() - repBefore
		fresh := open()
		want, err := fresh.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: the searcher with a memo answers otherwise (-fresh +memo):\n%s", step, diff)
		}
		switch {
		case wantReads == allReads && reads != fresh.headReads.Load():
			t.Errorf("%s: %d records read, want all %d", step, reads, fresh.headReads.Load())
		case wantReads >= 0 && reads != wantReads:
			t.Errorf("%s: %d records read, want %d", step, reads, wantReads)
		}
	}
	validate := func(id, who string) {
		t.Helper()
		if _, err := writer.RecordValidation(core.WithPrincipal(ctx, core.Principal{ID: who}), core.ValidateRequest{ProjectID: p, QAID: id, Result: "pass", SignalStrength: "strong"}); err != nil {
			t.Fatal(err)
		}
	}
	check("first search", allReads)
	if repReads == 0 {
		t.Fatal("the first search read no reputation fields: the memo's keeping of them is not tested")
	}
	check("nothing changed", 0)
	if repReads != 0 {
		t.Errorf("nothing changed: %d reputation fields read again, want 0 (the memo holds them)", repReads)
	}
	// Passes from several sources: one record changes each time, and at
	// some point the creator's book too (it proves a QA), which moves the
	// trust of every QA it created although only one record was read.
	var repChanged bool
	for i := range 8 {
		before := writer.rdb.HGetAll(ctx, writer.k.rep(p)).Val()
		validate(qas[1], "reviewer"+strconv.Itoa(i))
		changed := !maps.Equal(before, writer.rdb.HGetAll(ctx, writer.k.rep(p)).Val())
		repChanged = repChanged || changed
		check("validated "+strconv.Itoa(i+1)+" times", 1)
		if changed && repReads == 0 {
			t.Errorf("validated %d times: the reputation book changed, and the search read none of it", i+1)
		}
		check("validated "+strconv.Itoa(i+1)+" times, searched again", 0)
		if repReads != 0 {
			t.Errorf("validated %d times, searched again: %d reputation fields read again, want 0", i+1, repReads)
		}
	}
	if !repChanged {
		t.Fatal("no validation changed the reputation book: that case is not tested")
	}
	if _, err := writer.RecordHit(ctx, core.HitRequest{ProjectID: p, References: []core.HitRef{{QAID: qas[5], Shown: true, Used: true}}}); err != nil {
		t.Fatal(err)
	}
	check("hit", 1)
	deprecated := core.StatusDeprecated
	if _, err := writer.Patch(ctx, core.PatchRequest{ProjectID: p, QAID: qas[6], Status: &deprecated}); err != nil {
		t.Fatal(err)
	}
	check("deprecated by a human", 1)
	if err := writer.Delete(ctx, p, qas[7]); err != nil {
		t.Fatal(err)
	}
	check("deleted", anyReads)
	check("nothing changed again", 0)
	if repReads != 0 {
		t.Errorf("nothing changed again: %d reputation fields read, want 0", repReads)
	}

	// A restore from an older snapshot brings back another version.
	if err := writer.rdb.HSet(ctx, writer.k.stats(p), "hv", "1.restored").Err(); err != nil {
		t.Fatal(err)
	}
	check("version from another history", allReads)
	check("settled", 0)
	// Another history that has caught up with the memo's version: the
	// next entry does not continue from the version the memo is at.
	hv := writer.rdb.HGet(ctx, writer.k.stats(p), "hv").Val()
	seq, _, _ := strings.Cut(hv, ".")
	n, _ := strconv.Atoi(seq)
	if err := writer.rdb.HSet(ctx, writer.k.stats(p), "hv", strconv.Itoa(n-1)+".other").Err(); err != nil {
		t.Fatal(err)
	}
	validate(qas[4], "reviewer")
	validate(qas[4], "reviewer2")
	check("another history caught up", allReads)
	check("settled once more", 0)
	// A feed that lost an entry the memo needs (older ones do not matter).
	validate(qas[2], "reviewer")
	if err := writer.rdb.Del(ctx, writer.k.changes(p)).Err(); err != nil {
		t.Fatal(err)
	}
	validate(qas[2], "reviewer2")
	check("feed lost", allReads)
	check("settled again", 0)
}

// TestChangeFeed: each write lists the records and reputation it changed
// under the project's next record version; a write of many records lists
// "*"; the feed stays capped.
func TestChangeFeed(t *testing.T) {
	s := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "agent"})
	const p = "feed"
	res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: "how do beavers build dams", Answer: "with sticks"})
	if err != nil {
		t.Fatal(err)
	}
	// Validations by several sources: an entry lists the reputation book
	// exactly when the write changed it.
	var sawRep bool
	votes := []struct{ who, result string }{{"critic", "fail"}}
	for i := range 8 {
		votes = append(votes, struct{ who, result string }{"reviewer" + strconv.Itoa(i), "pass"})
	}
	for i, v := range votes {
		repBefore, err := s.rdb.HGetAll(ctx, s.k.rep(p)).Result()
		if err != nil {
			t.Fatal(err)
		}
		hvBefore := s.rdb.HGet(ctx, s.k.stats(p), "hv").Val()
		if _, err := s.RecordValidation(core.WithPrincipal(ctx, core.Principal{ID: v.who}), core.ValidateRequest{ProjectID: p, QAID: res.QAID, Result: v.result, SignalStrength: "strong"}); err != nil {
			t.Fatal(err)
		}
		repAfter, err := s.rdb.HGetAll(ctx, s.k.rep(p)).Result()
		if err != nil {
			t.Fatal(err)
		}
		hv := s.rdb.HGet(ctx, s.k.stats(p), "hv").Val()
		entry, err := s.rdb.LIndex(ctx, s.k.changes(p), 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.Itoa(i+2) + "."; !strings.HasPrefix(hv, want) {
			t.Errorf("validation %d: record version %q, want %s…", i, hv, want)
		}
		prev, list, _ := strings.Cut(entry, " ")
		ids := strings.Fields(list)
		if prev != hvBefore || !slices.Contains(ids, res.QAID) {
			t.Errorf("validation %d: entry %q, want the version before (%s) and the QA", i, entry, hvBefore)
		}
		changed := !maps.Equal(repBefore, repAfter)
		sawRep = sawRep || changed
		if slices.Contains(ids, "~") != changed {
			t.Errorf("validation %d: entry %q; the reputation book changed: %v", i, entry, changed)
		}
	}
	if !sawRep {
		t.Error("no validation changed the reputation book: that case is not tested")
	}
	feed, err := s.rdb.LRange(ctx, s.k.changes(p), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if last := feed[len(feed)-1]; last != " "+res.QAID {
		t.Errorf("first write's entry %q: want no version before and the QA", last)
	}
	var recs []core.Record
	for i := range maxChangedIDs + 1 {
		recs = append(recs, core.Record{QAID: fmt.Sprintf("qa_bulk%02d", i), ProjectID: p, Question: "bulk question " + strconv.Itoa(i), Answer: "bulk answer"})
	}
	if err := s.Import(ctx, recs); err != nil {
		t.Fatal(err)
	}
	first, err := s.rdb.LIndex(ctx, s.k.changes(p), 0).Result()
	if err != nil || !strings.HasSuffix(first, " *") {
		t.Errorf("an import of %d records: entry %q (%v), want \"*\"", len(recs), first, err)
	}
	for range 3 {
		for i := range changesCap/2 + 1 {
			if err := s.rdb.LPush(ctx, s.k.changes(p), "filler "+strconv.Itoa(i)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.RecordValidation(core.WithPrincipal(ctx, core.Principal{ID: "critic"}), core.ValidateRequest{ProjectID: p, QAID: res.QAID, Result: "fail"}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.rdb.LLen(ctx, s.k.changes(p)).Result(); err != nil || n != changesCap {
		t.Errorf("feed length %d (%v), want the cap %d", n, err, changesCap)
	}
	if !strings.Contains(commitSrc, "LTRIM', fk, 0, "+strconv.Itoa(changesCap-1)) || !strings.Contains(changesSrc, "> "+strconv.Itoa(changesCap)) {
		t.Error("the scripts' feed cap is not changesCap")
	}
}

// TestWrittenKeys: the keys a write changes are told apart by name.
func TestWrittenKeys(t *testing.T) {
	k := keys{prefix: "memex"}
	for _, c := range []struct {
		key, project, id string
		rep              bool
	}{
		{k.qa("p-1", "qa_x"), "p-1", "qa_x", false},
		{k.rep("p-1"), "p-1", "", true},
		{k.stats("p-1"), "p-1", "", false},
		{k.days("p"), "p", "", false},
		{"other:{p}:qa:x", "", "", false},
		{"memex:{p", "", "", false},
	} {
		p, id, rep := k.written(c.key)
		if p != c.project || id != c.id || rep != c.rep {
			t.Errorf("written(%q) = %q %q %v, want %q %q %v", c.key, p, id, rep, c.project, c.id, c.rep)
		}
	}
}

// TestSearchMatchesAreTheCallers: a caller may change the tags and
// metadata of the matches it got; the next search, answered from the
// memo, is unchanged.
func TestSearchMatchesAreTheCallers(t *testing.T) {
	s := newShared(t)
	ctx := t.Context()
	const p = "mine"
	if _, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: "how do puffins dive", Answer: "wings as flippers",
		Tags: []string{"bird"}, Metadata: map[string]any{"nested": map[string]any{"depth": "60m"}, "list": []any{"a"}}}); err != nil {
		t.Fatal(err)
	}
	q := core.SearchRequest{ProjectID: p, Query: "puffins dive", Limit: 5}
	first, err := s.Search(ctx, q)
	if err != nil || len(first) != 1 {
		t.Fatalf("search: %d matches, %v", len(first), err)
	}
	second, err := s.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(second)
	for _, ms := range [][]core.Match{first, second} {
		ms[0].Tags[0] = "changed"
		ms[0].Metadata["nested"].(map[string]any)["depth"] = "changed"
		ms[0].Metadata["list"].([]any)[0] = "changed"
	}
	got, err := s.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if gotJSON, _ := json.Marshal(got); string(gotJSON) != string(want) {
		t.Errorf("a caller's change reached the next search:\n got %s\nwant %s", gotJSON, want)
	}
}
