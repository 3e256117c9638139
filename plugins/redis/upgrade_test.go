package redisstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

// jsonRecord is the value an earlier version wrote for the record that
// the value v holds: JSON alone, with q, a, c and d as members.
func jsonRecord(tb testing.TB, v string) string {
	tb.Helper()
	head, body, _ := strings.Cut(v, "\n")
	if body == "" || body[0] != recordFields {
		tb.Fatalf("not a value with leading fields: %q", v)
	}
	var s stored
	rest, err := splitFields(body, &s)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]json.RawMessage{}
	if rest != "" {
		if err := json.Unmarshal([]byte(rest), &m); err != nil {
			tb.Fatal(err)
		}
	}
	q, _ := json.Marshal(s.Q)
	a, _ := json.Marshal(s.A)
	m["q"], m["a"] = q, a
	m["c"], m["d"] = json.RawMessage(strconv.FormatInt(s.Created, 10)), json.RawMessage(strconv.FormatUint(s.Doc, 10))
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return head + "\n" + string(b)
}

// TestUpgradeFromJSONRecords: a store whose records are JSON alone and
// whose qa_id index is in oldIDBuckets buckets (as the earlier layout
// wrote them), and whose posting lists of 65–128 bytes are keys of their
// own, reads, lists, searches, validates, adds and deletes the same after
// the upgrade; the index's claims are merged (another project's import under
// an id it holds is refused) and the old buckets deleted; a write
// rewrites its record with the leading fields.
func TestUpgradeFromJSONRecords(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix(t)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := func() time.Time { return now }
	s := openPrefix(t, url, prefix, WithClock(clock))
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "agent"})
	vctx := core.WithPrincipal(t.Context(), core.Principal{ID: "reviewer"})
	const p = "up-a"
	var ids []string
	for i := range 60 {
		req := core.CandidateRequest{ProjectID: p, Question: fmt.Sprintf("How do I groom wombat number %d before the show?", i),
			Answer: fmt.Sprintf("brush wombat %d with the soft comb", i)}
		if i%4 == 0 {
			req.Tags = []string{"wombat", "grooming"}
			req.Metadata = map[string]any{"k": "v"}
		}
		res, err := s.RecordCandidate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.QAID)
	}
	for _, id := range ids[:10] {
		if _, err := s.RecordValidation(vctx, core.ValidateRequest{ProjectID: p, QAID: id, Result: "pass", SignalStrength: "strong"}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]core.Record{}
	for _, id := range ids {
		r, err := s.Get(ctx, p, id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = r
	}

	// The earlier layout: every record JSON alone, the claims in the
	// bucket of oldIDBuckets their id falls in.
	for _, id := range ids {
		v, err := s.rdb.Get(ctx, s.k.qa(p, id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.rdb.Set(ctx, s.k.qa(p, id), jsonRecord(t, v), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	movedUp := 0
	for n := range idBuckets {
		claims, err := s.rdb.HGetAll(ctx, s.k.idsBucket(n)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for id, v := range claims {
			old, _ := strconv.Atoi(bucketOf(id, oldIDBuckets))
			if old == n {
				continue
			}
			s.rdb.HDel(ctx, s.k.idsBucket(n), id)
			s.rdb.HSet(ctx, s.k.idsBucket(old), id, v)
			movedUp++
		}
	}
	if movedUp == 0 {
		t.Fatal("no claim is in a bucket of the earlier layout only")
	}
	if err := s.rdb.Set(ctx, s.k.idsBuilt(), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var longer []string // the lists of 65–128 bytes: their own keys
	for n := range postBuckets {
		bucket := s.k.tag(p) + "ps:" + ownScope + ":" + strconv.Itoa(n)
		fields, err := s.rdb.HGetAll(ctx, bucket).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, rest := range fields {
			term, ok := strings.CutSuffix(f, "\x00")
			if !ok {
				continue
			}
			s.rdb.Set(ctx, s.k.post(p, ownScope, term), fields[term]+rest, 0)
			s.rdb.HDel(ctx, bucket, shortFields(term)...)
			longer = append(longer, term)
		}
	}
	if !slices.Contains(longer, "wombat") {
		t.Fatalf("the list of wombat is not in two fields of its bucket (two-field lists: %v)", longer)
	}

	s2 := openPrefix(t, url, prefix, WithClock(clock))
	for _, id := range ids {
		got, err := s2.Get(ctx, p, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[id], got); diff != "" {
			t.Fatalf("%s read from JSON (-want +got):\n%s", id, diff)
		}
	}
	page, err := s2.List(ctx, core.ListRequest{ProjectID: p, Limit: 1000})
	if err != nil || len(page.Items) != len(ids) {
		t.Fatalf("list: %d records, %v; want %d", len(page.Items), err, len(ids))
	}
	ms, err := s2.Search(ctx, core.SearchRequest{ProjectID: p, Query: want[ids[17]].Question, Limit: 3})
	if err != nil || len(ms) == 0 || ms[0].QAID != ids[17] {
		t.Fatalf("search for a question: %+v, %v; want %s first", ms, err, ids[17])
	}
	if _, err := s2.RecordValidation(vctx, core.ValidateRequest{ProjectID: p, QAID: ids[17], Result: "pass", SignalStrength: "strong"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s2.Get(ctx, p, ids[17]); err != nil || r.SuccessCount != want[ids[17]].SuccessCount+1 || r.Question != want[ids[17]].Question {
		t.Errorf("validated after the upgrade: %+v, %v", r, err)
	}
	if v, _ := s2.rdb.Get(ctx, s2.k.qa(p, ids[17])).Result(); !strings.Contains(v, "\n\x01") {
		t.Errorf("a validated record is not rewritten with its leading fields: %q", v)
	}

	// The lists in their own keys take new postings and lose old ones.
	added, err := s2.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: "How do I groom a sleepy wombat before the show?", Answer: "wombat nap first, then the soft comb"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Delete(ctx, p, ids[3]); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	ms, err = s2.Search(ctx, core.SearchRequest{ProjectID: p, Query: "groom wombat show soft comb sleepy", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		found[m.QAID] = true
	}
	if !found[added.QAID] || found[ids[3]] || !found[ids[4]] {
		t.Errorf("search after a write to lists of the earlier layout: new %v, deleted %v, kept %v", found[added.QAID], found[ids[3]], found[ids[4]])
	}
	if n := s2.rdb.Exists(ctx, s2.k.post(p, ownScope, "wombat")).Val(); n != 1 {
		t.Errorf("the list of wombat left its own key")
	}

	for _, id := range ids {
		if id == ids[3] {
			continue // deleted: its id is free
		}
		err := s2.Import(ctx, []core.Record{{ProjectID: "up-b", QAID: id, Question: "Who took this id?", Answer: "another project"}})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("import of %s, an id of %s, into another project: %v, want ErrConflict", id, p, err)
		}
	}
	for n := idBuckets; n < oldIDBuckets; n++ {
		if ex := s2.rdb.Exists(ctx, s2.k.idsBucket(n)).Val(); ex != 0 {
			t.Fatalf("bucket %d of the earlier layout is left", n)
		}
	}
	if v := s2.rdb.Get(ctx, s2.k.idsBuilt()).Val(); v != idsLayout {
		t.Errorf("index layout %q, want %q", v, idsLayout)
	}
}
