package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

func TestSplitURL(t *testing.T) {
	tests := []struct {
		name, raw, scheme, user, pass string
		hosts, path                   []string
		bad                           bool
	}{
		{name: "plain", raw: "redis://h:1/0", scheme: "redis", hosts: []string{"h:1"}, path: []string{"0"}},
		{name: "default port", raw: "redis://h", scheme: "redis", hosts: []string{"h:6379"}},
		{name: "sentinel", raw: "redis+sentinel://u:p@a:1,b:2/mymaster/3", scheme: "redis+sentinel", user: "u", pass: "p",
			hosts: []string{"a:1", "b:2"}, path: []string{"mymaster", "3"}},
		{name: "password only", raw: "redis+cluster://:secret@a:1,b:2", scheme: "redis+cluster", pass: "secret", hosts: []string{"a:1", "b:2"}},
		{name: "no scheme", raw: "h:1", bad: true},
		{name: "no host", raw: "redis+cluster://", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := splitURL(tc.raw)
			if tc.bad {
				if !errors.Is(err, core.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.scheme != tc.scheme || u.user != tc.user || u.pass != tc.pass || !slices.Equal(u.hosts, tc.hosts) || !slices.Equal(u.path, tc.path) {
				t.Errorf("got %+v", u)
			}
		})
	}
}

func TestNewClientKinds(t *testing.T) {
	tests := []struct {
		name, raw string
		check     func(redis.UniversalClient) bool
		bad       bool
	}{
		{"single", "redis://127.0.0.1:1/2", func(c redis.UniversalClient) bool {
			o := c.(*redis.Client).Options()
			return o.DB == 2 && o.DialTimeout == DialTimeout && o.ReadTimeout == ReadTimeout && o.PoolTimeout == PoolTimeout
		}, false},
		{"tls", "rediss://127.0.0.1:1", func(c redis.UniversalClient) bool { return c.(*redis.Client).Options().TLSConfig != nil }, false},
		{"sentinel", "redis+sentinel://u:pw@127.0.0.1:1,127.0.0.1:2/mymaster/1", func(c redis.UniversalClient) bool {
			o := c.(*redis.Client).Options()
			return o.DB == 1 && o.Username == "u" && o.Password == "pw" && o.TLSConfig == nil && o.ReadTimeout == ReadTimeout && o.MaxRetries == 2
		}, false},
		{"sentinel tls", "rediss+sentinel://127.0.0.1:1/mymaster", func(c redis.UniversalClient) bool {
			return c.(*redis.Client).Options().TLSConfig != nil
		}, false},
		{"cluster", "redis+cluster://127.0.0.1:1,127.0.0.1:2", func(c redis.UniversalClient) bool {
			o := c.(*redis.ClusterClient).Options()
			return len(o.Addrs) == 2 && o.MaxRedirects == ClusterMaxRedirects && o.ReadTimeout == ReadTimeout && o.TLSConfig == nil
		}, false},
		{"cluster of one seed, tls", "rediss+cluster://u:pw@127.0.0.1:1", func(c redis.UniversalClient) bool {
			o := c.(*redis.ClusterClient).Options()
			return len(o.Addrs) == 1 && o.Username == "u" && o.Password == "pw" && o.TLSConfig != nil && o.MaxRetries == 2
		}, false},
		{"sentinel without master", "redis+sentinel://127.0.0.1:1", nil, true},
		{"cluster with db", "redis+cluster://127.0.0.1:1/3", nil, true},
		{"unknown scheme", "memcached://127.0.0.1:1", nil, true},
		{"bad db", "redis+sentinel://127.0.0.1:1/m/x", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := newClient(tc.raw)
			if tc.bad {
				if !errors.Is(err, core.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !tc.check(c) {
				t.Errorf("client for %s not configured as expected", tc.name)
			}
		})
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	for _, raw := range []string{
		"redis+sentinel://user:hunter2@127.0.0.1:1",         // no master
		"redis+sentinel://user:hunter2@127.0.0.1:1/m/x",     // bad db
		"redis+cluster://user:hunter2@127.0.0.1:1/3",        // a path
		"redis://user:hunter2@127.0.0.1:1/0?dial_timeout=x", // go-redis refuses it
		"redis://user:hunter2@[::1",                         // net/url refuses it
		"memcached://user:hunter2@127.0.0.1:1",
		"rediss+cluster://user:hunter2@127.0.0.1:1", // nobody answers
	} {
		_, err := Open(t.Context(), raw)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%s): err = %v: want an error without the password", raw, err)
		}
	}
}

// TestUnavailable: a dead server gives ErrUnavailable promptly, and a
// context deadline is wrapped.
func TestUnavailable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	s, err := New(c, WithPrefix("x"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Search(t.Context(), core.SearchRequest{ProjectID: "p", Query: "anything"})
	if !errors.Is(err, core.ErrUnavailable) || time.Since(start) > time.Second {
		t.Errorf("search on a dead server: %v after %s, want ErrUnavailable promptly", err, time.Since(start))
	}
	if msg := err.Error(); !strings.Contains(msg, "connection refused") && !strings.Contains(msg, "timeout") {
		t.Errorf("error %q does not say what failed", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "p", QAID: "q", Result: "pass"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v, want context.Canceled", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()).Err(); errors.Is(err, redis.ErrClosed) {
		t.Errorf("Close closed a client the store did not open")
	}
}

// srvErr is a server error reply as go-redis reports it.
type srvErr string

func (e srvErr) Error() string { return string(e) }
func (srvErr) RedisError()     {}

func TestWrapMapsErrors(t *testing.T) {
	s := &Store{}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"nil reply", redis.Nil, core.ErrNotFound},
		{"clusterdown", srvErr("CLUSTERDOWN The cluster is down"), core.ErrUnavailable},
		{"loading", srvErr("LOADING Redis is loading the dataset in memory"), core.ErrUnavailable},
		{"tryagain", srvErr("TRYAGAIN Multiple keys request during rehashing of slot"), core.ErrUnavailable},
		{"pool timeout", redis.ErrPoolTimeout, core.ErrUnavailable},
		{"client-side timeout", context.DeadlineExceeded, core.ErrUnavailable},
		{"conflict kept", core.ErrConflict, core.ErrConflict},
	}
	expired, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	if err := s.wrap(expired, "op", errors.New("i/o timeout")); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("expired context: %v, want ErrUnavailable wrapping ctx.Err()", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.wrap(context.Background(), "op", tc.err)
			if !errors.Is(err, tc.want) {
				t.Errorf("wrap(%v) = %v, want %v", tc.err, err, tc.want)
			}
			var re redis.Error
			if errors.As(err, &re) || errors.Is(err, redis.Nil) || errors.Is(err, redis.ErrPoolTimeout) {
				t.Errorf("a go-redis error leaks through %v", err)
			}
		})
	}
}

func TestPrefixIsolation(t *testing.T) {
	url := redistest.URL(t)
	a := newShared(t)
	ctx := t.Context()
	if _, err := a.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "iso", Question: "isolated walrus question", Answer: "walrus"}); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, url, WithPrefix(redistest.Prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ms, err := b.Search(ctx, core.SearchRequest{ProjectID: "iso", Query: "walrus"})
	if err != nil || len(ms) != 0 {
		t.Errorf("another prefix sees %d matches (err %v)", len(ms), err)
	}
	if _, err := New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New(nil): %v", err)
	}
	if _, err := New(redis.NewClient(&redis.Options{}), WithPrefix("a{b}")); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("prefix with braces: %v", err)
	}
}

// TestKeysShareProjectTag: every key a project's writes touch carries the
// project's hash tag (cluster safety), but for the global qa_id index,
// and nothing is left after delete except counters.
func TestKeysShareProjectTag(t *testing.T) {
	s := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "agent"})
	res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "tags", Question: "How to tag keys", Answer: "use a hash tag", SharedProjects: []string{"other"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "tags", QAID: res.QAID, Result: "pass", SignalStrength: "strong"}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.rdb.Keys(t.Context(), s.k.prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k == s.k.projects() || k == s.k.ids(res.QAID) || k == s.k.idsBuilt() || k == s.k.format() {
			// The global qa_id index (ids.go) sits outside every project's
			// slot by design: single-key commands claim an id before the
			// project's own script runs. So does the format mark, read
			// and written alone (format.go).
			continue
		}
		if !strings.HasPrefix(k, s.k.tag("tags")) && !strings.HasPrefix(k, s.k.tag("other")) {
			t.Errorf("key %q is outside the project tags", k)
		}
		if strings.HasPrefix(k, s.k.tag("other")) && !strings.HasSuffix(k, "sharers") && !strings.HasSuffix(k, "shin") {
			t.Errorf("a write of project tags created %q under another project's tag", k)
		}
	}
}

func TestSharedProjects(t *testing.T) {
	s := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "agent"})
	shared, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "owner", Question: "How to share the narwhal cache", Answer: "narwhal share", SharedProjects: []string{"reader"}})
	if err != nil {
		t.Fatal(err)
	}
	private, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "owner", Question: "How to hide the narwhal cache", Answer: "narwhal hide"})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "reader", Query: "narwhal cache", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(ms)
	if !slices.Equal(got, []string{shared.QAID}) {
		t.Errorf("reader sees %v, want only the shared %s", got, shared.QAID)
	}
	if _, err := s.Get(t.Context(), "reader", private.QAID); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Get of a private QA from reader: %v", err)
	}
	voter := core.WithPrincipal(t.Context(), core.Principal{ID: "voter"}) // (the creator's own reports do not count)
	r, err := s.RecordValidation(voter, core.ValidateRequest{ProjectID: "reader", QAID: shared.QAID, Result: "pass", SignalStrength: "strong"})
	if err != nil || r.SuccessCount != 1 || r.ProjectID != "owner" {
		t.Fatalf("validate shared from reader: %+v %v", r.SuccessCount, err)
	}
	if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "reader", QAID: private.QAID, Result: "pass"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("validate private from reader: %v", err)
	}
	h, err := s.RecordHit(t.Context(), core.HitRequest{ProjectID: "reader", References: []core.HitRef{{QAID: shared.QAID, Shown: true}, {QAID: private.QAID, Shown: true}}})
	if err != nil || h.Updated != 1 {
		t.Errorf("hits from reader: %+v %v, want 1 updated", h, err)
	}
}

func ids(ms []core.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.QAID
	}
	return out
}

func TestReceipts(t *testing.T) {
	s := newShared(t)
	now := time.Now().UTC()
	r := core.Receipt{ID: "rc1", ProjectID: "p", Source: "key-a", QAIDs: []string{"q1"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.IssueReceipt(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	other := r
	other.Source = "key-b"
	if err := s.IssueReceipt(t.Context(), other); err != nil {
		t.Fatalf("re-issue: %v", err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "rc1", "key-b", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("redeem by a foreign source: %v, want ErrConflict (the first issue wins)", err)
	}
	got, err := s.RedeemReceipt(t.Context(), "p", "rc1", "key-a", now)
	if err != nil || !slices.Equal(got.QAIDs, r.QAIDs) {
		t.Fatalf("redeem: %+v %v", got, err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "rc1", "key-a", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("second redeem: %v, want ErrConflict", err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "nope", "key-a", now); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("unknown receipt: %v, want ErrNotFound", err)
	}
	// A retried issue after the redemption does not make it new again.
	if err := s.IssueReceipt(t.Context(), r); err != nil {
		t.Fatalf("re-issue after redeem: %v", err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "rc1", "key-a", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("redeem after a retried issue: %v, want ErrConflict", err)
	}
	// The TTL is the receipt's expiry.
	if ttl := s.rdb.PTTL(t.Context(), s.k.receipt("p", "rc1")).Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("receipt TTL %v, want about an hour", ttl)
	}
	exp := core.Receipt{ID: "rc2", ProjectID: "p", Source: "key-a", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.IssueReceipt(t.Context(), exp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "rc2", "key-a", now.Add(2*time.Hour)); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("expired receipt: %v, want ErrNotFound", err)
	}
}

// TestReceiptsLegacyHash: receipts stored as hashes by earlier versions
// are still redeemed, once, until they expire.
func TestReceiptsLegacyHash(t *testing.T) {
	s := newShared(t)
	now := time.Now().UTC()
	r := core.Receipt{ID: "old", ProjectID: "p", Source: "key-a", QAIDs: []string{"q1", "q2"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	key := s.k.receipt("p", "old")
	if err := s.rdb.HSet(t.Context(), key, "j", string(body), "src", "key-a", "used", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "old", "key-b", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("foreign source: %v, want ErrConflict", err)
	}
	got, err := s.RedeemReceipt(t.Context(), "p", "old", "key-a", now)
	if err != nil || !slices.Equal(got.QAIDs, r.QAIDs) {
		t.Fatalf("redeem: %+v %v", got, err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "old", "key-a", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("second redeem: %v, want ErrConflict", err)
	}
	// Something else under a receipt's key is no receipt.
	if err := s.rdb.RPush(t.Context(), s.k.receipt("p", "odd"), "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "odd", "key-a", now); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("a list under the key: %v, want ErrNotFound", err)
	}
}

// TestReceiptFamily: a search receipt issued with all its per-QA receipts
// is one key; each of them is redeemed once, by its own source, as the
// receipt of its QA; a family missing a member, and per-QA receipts with
// their own keys (as earlier versions stored them), are stored and
// redeemed one by one.
func TestReceiptFamily(t *testing.T) {
	s := newShared(t)
	now := time.Now().UTC()
	family := func(base string, qas ...string) []core.Receipt {
		mk := func(id string, ids []string) core.Receipt {
			return core.Receipt{ID: id, ProjectID: "p", Source: "key-a", QAIDs: ids, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
		}
		rs := []core.Receipt{mk(base, qas)}
		for i, q := range qas {
			rs = append(rs, mk(core.ItemReceiptID(base, i+1), []string{q}))
		}
		return rs
	}
	keysOf := func(pattern string) int {
		n, err := s.rdb.Keys(t.Context(), s.k.receipt("p", pattern)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(n)
	}
	rs := family("fam", "q1", "q2", "q3")
	for i, err := range s.IssueReceipts(t.Context(), rs) {
		if err != nil {
			t.Fatalf("receipt %d: %v", i, err)
		}
	}
	if n := keysOf("fam*"); n != 1 {
		t.Fatalf("a search receipt and its 3 per-QA receipts take %d keys, want 1", n)
	}
	// A retried issue changes nothing.
	for _, err := range s.IssueReceipts(t.Context(), rs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "fam.2", "key-b", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("another source: %v, want ErrConflict", err)
	}
	got, err := s.RedeemReceipt(t.Context(), "p", "fam.2", "key-a", now)
	if err != nil || got.ID != "fam.2" || !slices.Equal(got.QAIDs, []string{"q2"}) || got.Source != "key-a" || got.ProjectID != "p" {
		t.Fatalf("redeem fam.2: %+v %v", got, err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "fam.2", "key-a", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("fam.2 again: %v, want ErrConflict", err)
	}
	for _, id := range []string{"fam.4", "fam.0", "other.1"} {
		if _, err := s.RedeemReceipt(t.Context(), "p", id, "key-a", now); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", id, err)
		}
	}
	got, err = s.RedeemReceipt(t.Context(), "p", "fam", "key-a", now)
	if err != nil || got.ID != "fam" || !slices.Equal(got.QAIDs, []string{"q1", "q2", "q3"}) {
		t.Fatalf("redeem the search receipt: %+v %v", got, err)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "fam", "key-a", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("the search receipt again: %v, want ErrConflict", err)
	}
	for _, id := range []string{"fam.1", "fam.3"} { // the others are still new
		if got, err := s.RedeemReceipt(t.Context(), "p", id, "key-a", now); err != nil || got.ID != id {
			t.Errorf("redeem %s after the others: %+v %v", id, got, err)
		}
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "fam.1", "key-a", now.Add(2*time.Hour)); !errors.Is(err, core.ErrConflict) {
		t.Errorf("fam.1 again, later: %v, want ErrConflict", err)
	}

	// Without one of its per-QA receipts, a search receipt is stored alone,
	// and so is each per-QA receipt given.
	part := family("part", "q1", "q2")
	part = append(part[:1], part[2:]...)
	for _, err := range s.IssueReceipts(t.Context(), part) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := keysOf("part*"); n != 2 {
		t.Fatalf("a partial family takes %d keys, want 2", n)
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "part.1", "key-a", now); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("part.1, never issued: %v, want ErrNotFound", err)
	}
	if got, err := s.RedeemReceipt(t.Context(), "p", "part.2", "key-a", now); err != nil || !slices.Equal(got.QAIDs, []string{"q2"}) {
		t.Errorf("part.2: %+v %v", got, err)
	}

	// A per-QA receipt naming another QA than its search receipt's: each
	// receipt is stored on its own, as given.
	odd := family("odd", "q1", "q2")
	odd[2].QAIDs = []string{"q9"}
	for _, err := range s.IssueReceipts(t.Context(), odd) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := keysOf("odd*"); n != 3 {
		t.Fatalf("receipts that are no family take %d keys, want 3", n)
	}
	if got, err := s.RedeemReceipt(t.Context(), "p", "odd.2", "key-a", now); err != nil || !slices.Equal(got.QAIDs, []string{"q9"}) {
		t.Errorf("odd.2: %+v %v, want its own QA (q9)", got, err)
	}

	// A per-QA receipt stored on its own (by an earlier version) beside a
	// family under its search receipt: its own key wins.
	old := family("mix", "q1")
	for _, err := range s.IssueReceipts(t.Context(), old[:1]) {
		if err != nil {
			t.Fatal(err)
		}
	}
	solo := old[1]
	solo.QAIDs = []string{"q9"}
	if err := s.IssueReceipt(t.Context(), solo); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RedeemReceipt(t.Context(), "p", "mix.1", "key-a", now); err != nil || !slices.Equal(got.QAIDs, []string{"q9"}) {
		t.Errorf("mix.1: %+v %v, want its own key's receipt (q9)", got, err)
	}
	// A receipt's expiry still holds.
	exp := family("late", "q1")
	for _, err := range s.IssueReceipts(t.Context(), exp) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RedeemReceipt(t.Context(), "p", "late.1", "key-a", now.Add(2*time.Hour)); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("expired per-QA receipt: %v, want ErrNotFound", err)
	}
}

func TestAudit(t *testing.T) {
	s := newShared(t, WithAuditCap(50))
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 120 {
		e := core.AuditEntry{Time: base.Add(time.Duration(i) * time.Second), KeyID: "k", ProjectID: "p", Action: "validate", QAID: "q", Weight: 1}
		if err := s.AppendAudit(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Audit(t.Context(), "p", time.Time{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 50 || len(all) > 120 || !all[len(all)-1].Time.Equal(base.Add(119*time.Second)) {
		t.Errorf("capped audit holds %d entries ending %v", len(all), all[len(all)-1].Time)
	}
	since := base.Add(110 * time.Second)
	got, err := s.Audit(t.Context(), "p", since, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !got[0].Time.Equal(since) {
		t.Errorf("since+limit: %d entries, first %v", len(got), got[0].Time)
	}
	if err := s.AppendAudit(t.Context(), core.AuditEntry{Time: base, ProjectID: "p", Action: "late"}); err != nil {
		t.Errorf("an entry older than the stream's last: %v", err)
	}
}

// TestAuditPassesOverLateEntries: entries appended after newer ones (their
// ids are later than their times) do not cut a read short.
func TestAuditPassesOverLateEntries(t *testing.T) {
	s := newShared(t)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	add := func(at time.Time, action string) {
		if err := s.AppendAudit(t.Context(), core.AuditEntry{Time: at, ProjectID: "p", Action: action}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		add(base.Add(time.Duration(10+i)*time.Second), "in")
	}
	for range 5 {
		add(base, "before the window") // appended late: an id after the entries above
	}
	for i := range 5 {
		add(base.Add(time.Duration(20+i)*time.Second), "in")
	}
	got, err := s.Audit(t.Context(), "p", base.Add(10*time.Second), 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 || slices.ContainsFunc(got, func(e core.AuditEntry) bool { return e.Action != "in" }) {
		t.Errorf("Audit since the window, limit 8: %d entries %v, want the window's first 8", len(got), got)
	}
}

func TestProjects(t *testing.T) {
	s := newShared(t)
	for _, p := range []string{"pa", "pb", "pb"} {
		if _, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: p, Question: "question of " + p + " " + time.Now().String(), Answer: "answer"}); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := s.Projects(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].ProjectID != "pa" || ps[0].Total != 1 || ps[1].Total != 2 || ps[1].ByStatus[core.StatusCandidate] != 2 {
		t.Errorf("projects = %+v", ps)
	}
}

// TestCrossStoreCAS: two stores (two processes) writing one QA at once
// only meet at the version check; no update is lost.
func TestCrossStoreCAS(t *testing.T) {
	url := redistest.URL(t)
	prefix := redistest.Prefix(t)
	var stores []*Store
	for range 2 {
		s, err := Open(t.Context(), url, WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	res, err := stores[0].RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "cas", Question: "contended question", Answer: "contended answer"})
	if err != nil {
		t.Fatal(err)
	}
	const perStore, goroutines, each = 2, 8, 40
	var wg sync.WaitGroup
	for _, s := range stores {
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("agent-%d", g)})
				for range each {
					if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "cas", QAID: res.QAID, Result: "pass", SignalStrength: "weak"}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	r, err := stores[1].Get(t.Context(), "cas", res.QAID)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(perStore * goroutines * each); r.SuccessCount != want || r.Stats.WeakPass != want {
		t.Errorf("success_count %d, weak_pass %d; want %d", r.SuccessCount, r.Stats.WeakPass, want)
	}
}

// TestRepeatAfterDelete: a retried validation whose QA was deleted since
// returns its first result; a new one is ErrNotFound.
func TestRepeatAfterDelete(t *testing.T) {
	s := newShared(t)
	res, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "rd", Question: "to be deleted", Answer: "soon"})
	if err != nil {
		t.Fatal(err)
	}
	req := core.ValidateRequest{ProjectID: "rd", QAID: res.QAID, Result: "pass", SignalStrength: "strong", EventID: "ev-1"}
	first, err := s.RecordValidation(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "rd", res.QAID); err != nil {
		t.Fatal(err)
	}
	again, err := s.RecordValidation(t.Context(), req)
	if err != nil || again.SuccessCount != first.SuccessCount || again.QAID != res.QAID {
		t.Errorf("repeat after delete: %+v %v", again.SuccessCount, err)
	}
	req.EventID = "ev-2"
	if _, err := s.RecordValidation(t.Context(), req); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("new validation of a deleted QA: %v, want ErrNotFound", err)
	}
}

// TestSameIDOwnAndGlobal: a qa_id names one QA across projects, the
// global project included: a second project's QA with a taken id is
// refused with a conflict that names the id (as on the embedded store,
// coretest OwnIDTaken), and search finds the one QA with its own text.
func TestSameIDOwnAndGlobal(t *testing.T) {
	s := newShared(t)
	if _, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "mine", QAID: "same-id", Question: "How to fold the origami crane in mine", Answer: "crane fold mine"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: core.GlobalProject, QAID: "same-id", Question: "How to fold the origami crane globally", Answer: "crane fold " + core.GlobalProject})
	if !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), "same-id") {
		t.Fatalf("global QA with mine's id: %v, want a conflict naming the id", err)
	}
	ms, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "mine", Query: "origami crane", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].ProjectID != "mine" || ms[0].Answer != "crane fold mine" {
		t.Fatalf("matches %+v, want mine's QA alone", ms)
	}
}

// TestValidationEventKeepsNoText: a validation's event key (core.EventWindow) stores
// the result without the QA's text, and a repeat still returns the text.
func TestValidationEventKeepsNoText(t *testing.T) {
	s := newShared(t)
	ctx := t.Context()
	res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "ev", Question: "which walrus question", Answer: "a distinctive walrus answer"})
	if err != nil {
		t.Fatal(err)
	}
	req := core.ValidateRequest{ProjectID: "ev", QAID: res.QAID, Result: "pass", SignalStrength: "strong", EventID: "ev-text"}
	first, err := s.RecordValidation(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.rdb.Get(ctx, s.k.event("ev", "v", "ev", "ev-text")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, "distinctive walrus") {
		t.Errorf("event key holds the answer text: %s", stored)
	}
	again, err := s.RecordValidation(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("repeat differs (-first +again):\n%s", diff)
	}
}

// TestRestoreReceipt: a receipt given back (its write failed) can be
// redeemed again, once — a per-QA receipt kept with its search receipt
// (only its own state byte), one stored alone and one of the legacy hash
// form — and only by its own source.
func TestRestoreReceipt(t *testing.T) {
	s := newShared(t)
	ctx := t.Context()
	now := time.Now().UTC()
	mk := func(id string, ids ...string) core.Receipt {
		return core.Receipt{ID: id, ProjectID: "p", Source: "key-a", QAIDs: ids, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	fam := []core.Receipt{mk("fam", "q1", "q2"), mk("fam.1", "q1"), mk("fam.2", "q2"), mk("alone", "q9")}
	for i, err := range s.IssueReceipts(ctx, fam) {
		if err != nil {
			t.Fatalf("receipt %d: %v", i, err)
		}
	}
	body, _ := json.Marshal(mk("old", "q7"))
	if err := s.rdb.HSet(ctx, s.k.receipt("p", "old"), "j", string(body), "src", "key-a", "used", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"fam.2", "fam.1", "alone", "old"} {
		if _, err := s.RedeemReceipt(ctx, "p", id, "key-a", now); err != nil {
			t.Fatalf("redeem %s: %v", id, err)
		}
	}
	if err := s.RestoreReceipt(ctx, "p", "fam.2", "key-b"); !errors.Is(err, core.ErrConflict) {
		t.Errorf("restore by another source: %v, want ErrConflict", err)
	}
	if err := s.RestoreReceipt(ctx, "p", "nope", "key-a"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("restore of an unknown receipt: %v, want ErrNotFound", err)
	}
	for _, id := range []string{"fam.2", "alone", "old"} {
		if err := s.RestoreReceipt(ctx, "p", id, "key-a"); err != nil {
			t.Fatalf("restore %s: %v", id, err)
		}
		if _, err := s.RedeemReceipt(ctx, "p", id, "key-a", now); err != nil {
			t.Errorf("redeem %s after its restore: %v", id, err)
		}
		if _, err := s.RedeemReceipt(ctx, "p", id, "key-a", now); !errors.Is(err, core.ErrConflict) {
			t.Errorf("%s a third time: %v, want ErrConflict", id, err)
		}
	}
	// Restoring fam.2 left its siblings as they were.
	if _, err := s.RedeemReceipt(ctx, "p", "fam.1", "key-a", now); !errors.Is(err, core.ErrConflict) {
		t.Errorf("fam.1 after fam.2's restore: %v, want ErrConflict (still spent)", err)
	}
	if _, err := s.RedeemReceipt(ctx, "p", "fam", "key-a", now); err != nil {
		t.Errorf("the search receipt after fam.2's restore: %v, want it still new", err)
	}
}

// TestIssueReceiptsCancelled: receipts issued under a context that has
// ended all fail with its error (a per-QA receipt with its search
// receipt's), a malformed one with its own, and none is stored.
func TestIssueReceiptsCancelled(t *testing.T) {
	s := newShared(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	now := time.Now().UTC()
	mk := func(id string, ids ...string) core.Receipt {
		return core.Receipt{ID: id, ProjectID: "p", Source: "key-a", QAIDs: ids, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	bad := mk("bad", "q1")
	bad.ExpiresAt = now
	errs := s.IssueReceipts(ctx, []core.Receipt{mk("c", "q1"), mk("c.1", "q1"), mk("alone", "q2"), bad})
	for i, err := range errs[:3] {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("receipt %d: %v, want context.Canceled", i, err)
		}
	}
	if !errors.Is(errs[3], core.ErrInvalid) {
		t.Errorf("malformed receipt: %v, want ErrInvalid", errs[3])
	}
	if n, err := s.rdb.Exists(t.Context(), s.k.receipt("p", "c"), s.k.receipt("p", "alone")).Result(); err != nil || n != 0 {
		t.Errorf("%d receipts stored (%v), want none", n, err)
	}
}
