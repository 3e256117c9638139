package redisstore

import (
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/retrieval"
)

// TestIndexCacheSeesOtherWriters: a store whose index cache is warm sees
// every index change another process makes at its next search (the
// project's index version moves in the same commit), and the cache is
// really used while the version holds still.
func TestIndexCacheSeesOtherWriters(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix(t)
	open := func(opts ...Option) *Store { return openPrefix(t, url, prefix, opts...) }
	reader, writer, uncached := open(), open(WithIndexCache(0)), open(WithIndexCache(0))
	ctx := t.Context()
	const p = "cache"
	search := func(s *Store, q string) []string {
		t.Helper()
		ms, err := s.Search(ctx, core.SearchRequest{ProjectID: p, Query: q, Limit: 50, MinScore: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		return ids(ms)
	}
	add := func(q, a string) string {
		t.Helper()
		res, err := writer.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: q, Answer: a})
		if err != nil {
			t.Fatal(err)
		}
		return res.QAID
	}
	first := add("how to tune the zebra cache", "set zebra size")
	if got := search(reader, "zebra"); !slices.Equal(got, []string{first}) {
		t.Fatalf("search = %v, want [%s]", got, first)
	}
	// A new candidate of another process: found at once.
	second := add("why is the zebra slow", "zebra needs warming")
	if got := search(reader, "zebra"); len(got) != 2 || !slices.Contains(got, second) {
		t.Errorf("after another process added %s: search = %v", second, got)
	}
	// An answer edit moves the QA to other terms.
	ans := "use the okapi instead"
	if _, err := writer.Patch(ctx, core.PatchRequest{ProjectID: p, QAID: first, Answer: &ans}); err != nil {
		t.Fatal(err)
	}
	if got := search(reader, "okapi"); !slices.Equal(got, []string{first}) {
		t.Errorf("after an answer edit: search okapi = %v, want [%s]", got, first)
	}
	if got := search(reader, "size"); len(got) != 0 {
		t.Errorf("after an answer edit: search size = %v, want none", got)
	}
	// A deletion.
	if err := writer.Delete(ctx, p, second); err != nil {
		t.Fatal(err)
	}
	if got := search(reader, "zebra slow warming"); slices.Contains(got, second) {
		t.Errorf("after a delete: search = %v still has %s", got, second)
	}
	// The cache is used: remove a posting list behind the store's back
	// (the version does not move) and the warm reader still finds it.
	search(reader, "okapi")
	key := reader.k.postBucket(p, ownScope, "okapi")
	if err := reader.rdb.HDel(ctx, key, shortFields("okapi")...).Err(); err != nil {
		t.Fatal(err)
	}
	if got := search(uncached, "okapi"); len(got) != 0 {
		t.Fatalf("the list is not gone: uncached search = %v", got)
	}
	if got := search(reader, "okapi"); !slices.Equal(got, []string{first}) {
		t.Errorf("warm cache: search = %v, want [%s] from the cache", got, first)
	}
	// A new version drops it.
	if err := reader.rdb.HSet(ctx, reader.k.stats(p), "iv", "other").Err(); err != nil {
		t.Fatal(err)
	}
	if got := search(reader, "okapi"); len(got) != 0 {
		t.Errorf("after a version change: search = %v, want none", got)
	}
}

// TestIndexCacheBound: past its bound the cache empties instead of growing.
func TestIndexCacheBound(t *testing.T) {
	c := newIndexCache(1000)
	for i := range 100 {
		c.putLists("p", "v1", ownScope, map[string]*plist{string(rune('a'+i%26)) + string(rune('a'+i/26)): {docs: make([]uint32, 10), post: make([]uint64, 10)}})
		if size := c.bytes; size > c.max {
			t.Fatalf("cache holds %d bytes, bound %d", size, c.max)
		}
	}
	if newIndexCache(0) != nil {
		t.Error("a zero bound should disable the cache")
	}
	var off *indexCache
	if iv, got := off.postings("p", ownScope, []string{"a"}); iv != "" || len(got) != 0 {
		t.Error("a nil cache answered")
	}
	if missing := off.values(kindLens, "p", "v1", []uint64{1}, map[uint64]string{}); len(missing) != 1 {
		t.Error("a nil cache answered")
	}
}

// TestHeadMemoBound: the head memo keeps at most two generations of max/2
// bytes, answers only for records current at the version it is at, and a
// hit in the old generation survives the next turnover.
func TestHeadMemoBound(t *testing.T) {
	const bound = 20_000
	m := newHeadMemo(bound)
	m.advance("p", "", "h1", nil, true)
	at := map[string]string{"p": "h1"}
	put := func(id string) { m.put([]*stored{{ID: id, project: "p"}}, []int{600}, at) }
	put("keep")
	for i := range 200 {
		put(strconv.Itoa(i))
		out := make([]*stored, 1)
		m.current([]string{"p"}, []string{"keep"}, []string{"h1"}, out) // keeps "keep" hot
		if out[0] == nil {
			t.Fatalf("after %d puts: a hot record was dropped", i)
		}
		if size := m.heads.bytes + m.heads.oldBytes; size > bound+2000 {
			t.Fatalf("memo holds ~%d bytes, bound %d", size, bound)
		}
	}
	out := make([]*stored, 2)
	m.current([]string{"p", "p"}, []string{"keep", "keep"}, []string{"h0", ""}, out)
	if out[0] != nil || out[1] != nil {
		t.Error("the memo answered at another version")
	}
	if newHeadMemo(0) != nil {
		t.Error("a zero bound should disable the memo")
	}
	var off *headMemo
	off.put([]*stored{{ID: "a", project: "p"}}, []int{600}, at)
	off.current([]string{"p"}, []string{"a"}, []string{"h1"}, out[:1])
}

// TestHeadMemoPutBehind: a record read after an older record version than
// the one the memo has moved on to (another search followed a write that
// changed it meanwhile) is not current: it may be that write's old value.
func TestHeadMemoPutBehind(t *testing.T) {
	m := newHeadMemo(1 << 20)
	m.advance("p", "", "h1", nil, true)
	m.advance("p", "h1", "h2", []string{"x"}, false)
	m.put([]*stored{{ID: "x", project: "p"}}, []int{100}, map[string]string{"p": "h1"})
	out := make([]*stored, 1)
	if m.current([]string{"p"}, []string{"x"}, []string{"h2"}, out); out[0] != nil {
		t.Error("a record read at h1 is current at h2")
	}
	m.put([]*stored{{ID: "x", project: "p"}}, []int{100}, map[string]string{"p": "h2"})
	if m.current([]string{"p"}, []string{"x"}, []string{"h2"}, out); out[0] == nil {
		t.Error("a record read at h2 is not current at h2")
	}
}

// TestListsReadAcrossAWriteNotCached: lists read while the index version
// moved (the version read after them is not the one read with the stats)
// are used but not cached: tagged with the older version, they could be
// taken for its data once a server restored from an older snapshot
// brings that version back.
func TestListsReadAcrossAWriteNotCached(t *testing.T) {
	list := "\x00\x00\x00\x05" + uvarintGap(5) + postingRest(retrieval.TF{1, 1})
	for _, end := range []string{"v2", "v1"} {
		s := &Store{cache: newIndexCache(1 << 20)}
		post, short, ivEnd := redis.NewStringCmd(t.Context()), redis.NewSliceCmd(t.Context()), redis.NewStringCmd(t.Context())
		post.SetVal(list)
		short.SetVal([]any{nil, nil})
		ivEnd.SetVal(end)
		sc := &scope{owner: "p", name: ownScope, iv: "v1", lists: map[string]*plist{}}
		c := &scopeCmds{sc: sc, ivEnd: ivEnd,
			tc: &termCmds{terms: []string{"t"}, posts: []*redis.StringCmd{post}, short: []*redis.SliceCmd{short}}}
		if err := s.takeLists(c); err != nil {
			t.Fatal(err)
		}
		if sc.lists["t"].df() != 1 {
			t.Errorf("version after the lists %s: the list read is not used", end)
		}
		iv, held := s.cache.postings("p", ownScope, []string{"t"})
		if cached := iv == "v1" && held[0].list != nil; cached != (end == "v1") {
			t.Errorf("version after the lists %s: cached at v1 = %v", end, cached)
		}
	}
}

// TestIndexCacheSeesFirstWrite: a reader that searched a project and the
// global project while both were never written (and so holds them at
// version neverWritten: every list absent, none looked up) finds another
// process's first QA in each at its next search.
func TestIndexCacheSeesFirstWrite(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix(t)
	reader, writer := openPrefix(t, url, prefix), openPrefix(t, url, prefix)
	ctx := t.Context()
	const p = "first"
	search := func() []string {
		t.Helper()
		ms, err := reader.Search(ctx, core.SearchRequest{ProjectID: p, Query: "walrus tusk", Limit: 10, MinScore: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		return ids(ms)
	}
	for range 2 {
		if got := search(); len(got) != 0 {
			t.Fatalf("empty store: search = %v", got)
		}
	}
	neverWritten := func(owner string) bool {
		iv, held := reader.cache.postings(owner, ownScope, []string{"walrus"})
		return iv == neverWritten && held[0].ok
	}
	if !neverWritten(p) || !neverWritten(core.GlobalProject) {
		t.Fatal("the reader does not hold the project and global as never written; the path under test is not taken")
	}
	var want []string
	for _, project := range []string{core.GlobalProject, p} {
		res, err := writer.RecordCandidate(ctx, core.CandidateRequest{ProjectID: project, Question: "why does the walrus lose a tusk in " + project, Answer: "walrus tusks break"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res.QAID)
		if got := search(); !slices.Equal(sorted(got), sorted(want)) {
			t.Fatalf("after another process wrote %s: search = %v, want %v", project, got, want)
		}
	}
	if neverWritten(p) || neverWritten(core.GlobalProject) {
		t.Error("written owners are still held as never written")
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestHeadMemoRepFields: reputation fields read at the record version the
// memo is at stay current while the change feed names other records only;
// a write of the book ("~"), a new generation (a feed that could not be
// followed) or a read behind the memo's version leaves none current.
func TestHeadMemoRepFields(t *testing.T) {
	fields := []string{"sa:k1", "sd:k1", "cp:alice", "cr:alice"}
	read := []any{"2", nil, "1.5", nil}
	held := func(m *headMemo, hv string) (vals []any, missing []int) {
		vals = make([]any, len(fields))
		return vals, m.repCurrent("p", hv, fields, vals)
	}
	m := newHeadMemo(1 << 20)
	m.putRep("p", "h1", fields, read) // the memo does not follow p yet
	if _, missing := held(m, "h1"); len(missing) != len(fields) {
		t.Fatalf("fields of an owner the memo does not follow are current: %d missing", len(missing))
	}
	m.advance("p", "", "h1", nil, true)
	if _, missing := held(m, "h1"); len(missing) != len(fields) {
		t.Fatalf("fields never read are current: %d missing", len(missing))
	}
	m.putRep("p", "h1", fields[:2], read[:2])
	vals, missing := held(m, "h1")
	if !slices.Equal(missing, []int{2, 3}) || vals[0] != "2" || vals[1] != nil {
		t.Fatalf("after reading two fields: vals %v, missing %v", vals, missing)
	}
	m.putRep("p", "h1", fields, read)
	if vals, missing := held(m, "h1"); len(missing) != 0 || !slices.Equal(vals, read) {
		t.Fatalf("all read: vals %v, missing %v", vals, missing)
	}
	if _, missing := held(m, "h0"); len(missing) != len(fields) {
		t.Error("fields are current at a version the memo is not at")
	}
	m.advance("p", "h1", "h2", []string{"qa1", "qa2"}, false)
	if vals, missing := held(m, "h2"); len(missing) != 0 || !slices.Equal(vals, read) {
		t.Errorf("a write of records only: vals %v, missing %v, want all current", vals, missing)
	}
	m.advance("p", "h2", "h3", []string{"qa1", "~"}, false)
	if _, missing := held(m, "h3"); len(missing) != len(fields) {
		t.Errorf("a write of the reputation book left %d of %d fields current", len(fields)-len(missing), len(fields))
	}
	m.putRep("p", "h3", fields, read)
	m.advance("p", "h3", "h4", nil, true)
	if _, missing := held(m, "h4"); len(missing) != len(fields) {
		t.Errorf("a new generation left %d of %d fields current", len(fields)-len(missing), len(fields))
	}
	// Read after h4, put once the memo followed a write of the book to h5:
	// maybe that write's old value.
	m.advance("p", "h4", "h5", []string{"~"}, false)
	m.putRep("p", "h4", fields, read)
	if _, missing := held(m, "h5"); len(missing) != len(fields) {
		t.Error("fields read behind the memo's version are current")
	}
	var off *headMemo
	off.putRep("p", "h5", fields, read)
	if _, missing := held(off, "h5"); len(missing) != len(fields) {
		t.Error("a store without a memo holds fields")
	}
}
