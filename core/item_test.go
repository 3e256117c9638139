package core_test

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/memex-dev/memex/core"
)

// randName is a valid segment or key drawn from a small alphabet that
// includes the characters an encoding could trip on.
func randName(r *rand.Rand, slash bool) string {
	alpha := []string{"a", "b", "Z", " ", "-", ".", ":", "{", "}", "é", "用", "\\", "%"}
	if slash {
		alpha = append(alpha, "/")
	}
	for {
		var b strings.Builder
		for range 1 + r.Intn(6) {
			b.WriteString(alpha[r.Intn(len(alpha))])
		}
		if s := b.String(); s != "." && s != ".." {
			return s
		}
	}
}

type nsKey struct {
	NS  core.Namespace
	Key string
}

func (nsKey) Generate(r *rand.Rand, _ int) reflect.Value {
	ns := make(core.Namespace, 1+r.Intn(core.MaxNamespaceDepth))
	for i := range ns {
		ns[i] = randName(r, false)
	}
	return reflect.ValueOf(nsKey{ns, randName(r, true)})
}

// TestItemIDRoundTrip: ParseItemID inverts ItemID, the text form of a
// namespace parses back to it, and cursors decode to their id.
func TestItemIDRoundTrip(t *testing.T) {
	f := func(x nsKey) bool {
		ns, key, err := core.ParseItemID(core.ItemID(x.NS, x.Key))
		if err != nil || !slices.Equal(ns, x.NS) || key != x.Key {
			return false
		}
		back, err := core.ParseNamespace(x.NS.String())
		if err != nil || !slices.Equal(back, x.NS) {
			return false
		}
		id, err := core.DecodeItemCursor(core.EncodeItemCursor(core.ItemID(x.NS, x.Key)))
		return err == nil && id == core.ItemID(x.NS, x.Key)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

// TestItemIDOrder: ID order is namespace order segment by segment (an item
// of a namespace before those of its children), then key order; an ID has
// the prefix ID of exactly its namespace's ancestors.
// TestItemEntryFormat: the stored form of an item (both stores keep it) is
// created ns, updated ns (8 bytes each, big-endian), then the value, and
// decodes back under its id.
func TestItemEntryFormat(t *testing.T) {
	it := core.Item{Namespace: core.Namespace{"user", "alice"}, Key: "k", Value: []byte(`{"text":"x"}`),
		CreatedAt: time.Unix(0, 0x0102030405060708).UTC(), UpdatedAt: time.Unix(0, 0x1112131415161718).UTC()}
	v := core.EncodeItemEntry(it)
	want := append([]byte{1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}, it.Value...)
	if !bytes.Equal(v, want) {
		t.Fatalf("entry %x, want %x", v, want)
	}
	got, err := core.DecodeItemEntry(core.ItemID(it.Namespace, it.Key), v)
	if err != nil || !reflect.DeepEqual(got, it) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, it)
	}
	v[16] = 'X'
	if got.Value[0] != '{' {
		t.Fatal("the decoded value shares the entry's bytes")
	}
	if _, err := core.DecodeItemEntry(core.ItemID(it.Namespace, it.Key), v[:15]); err == nil {
		t.Fatal("a short entry decoded")
	}
	if _, err := core.DecodeItemEntry("no id", v); err == nil {
		t.Fatal("an entry under a bad id decoded")
	}
}

func TestItemIDOrder(t *testing.T) {
	cmpNS := func(a, b nsKey) int {
		for i := range min(len(a.NS), len(b.NS)) {
			if c := strings.Compare(a.NS[i], b.NS[i]); c != 0 {
				return c
			}
		}
		if c := len(a.NS) - len(b.NS); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	}
	f := func(a, b nsKey) bool {
		ia, ib := core.ItemID(a.NS, a.Key), core.ItemID(b.NS, b.Key)
		if sign(strings.Compare(ia, ib)) != sign(cmpNS(a, b)) {
			return false
		}
		return strings.HasPrefix(ia, core.NamespacePrefixID(b.NS)) == a.NS.HasPrefix(b.NS)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestScopeNamespace(t *testing.T) {
	c := core.ScopeContext{Session: "s1", User: "alice", Project: "acme"}
	for sc, want := range map[core.Scope]string{
		core.ScopeConversation: "conversation/alice/s1",
		core.ScopeUser:         "user/alice",
		core.ScopeProject:      "project/acme",
		core.ScopeGlobal:       "global",
	} {
		ns, err := sc.Namespace(c)
		if err != nil || ns.String() != want || core.ScopeOf(ns) != sc {
			t.Errorf("%s: %v, %v; want %s", sc, ns, err, want)
		}
	}
	for sc, msg := range map[core.Scope]string{
		core.ScopeConversation: "needs a session id",
		core.ScopeUser:         "needs a user id",
		core.ScopeProject:      "needs a project id",
	} {
		if _, err := sc.Namespace(core.ScopeContext{}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s without ids: %v, want %q", sc, err, msg)
		}
	}
	if _, err := core.ScopeUser.Namespace(core.ScopeContext{User: "a/b"}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("a user id with a separator: %v, want ErrInvalid", err)
	}
	if _, err := core.ParseScope("team"); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("ParseScope(team): %v", err)
	}
}
