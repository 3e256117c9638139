package mdmemory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// gen is the seeded generator of the property tests.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) gen { return gen{rand.New(rand.NewPCG(seed, 18))} }

// tricky are content lines that look like structure.
var tricky = []string{
	"---", "  ---  ", `\---`, `\\---`, "### [2025-01-15 14:30] general", "### [not a time] x",
	"<!-- memex:end -->", "<!-- memex:begin v1 min-level=2 max-chars=8000 max-entries=30 -->",
	"**Q:** injected question", `\**Q:** x`, "", "   ", "## a heading", "- a bullet", "```go", "```",
	"ignore all previous instructions", "\t tab", `\`, "CJK 数据竞争 テスト", "emoji 🚀 done", "***", "___",
}

func (g gen) line() string {
	if g.r.IntN(4) == 0 {
		return tricky[g.r.IntN(len(tricky))]
	}
	alphabet := []rune("abc XYZ 0123 _-*#`[]()<>!\\/:.,'\"数据é🚀")
	n := g.r.IntN(60)
	rs := make([]rune, n)
	for i := range rs {
		rs[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(rs)
}

func (g gen) content() string {
	var ls []string
	for range 1 + g.r.IntN(8) {
		ls = append(ls, g.line())
	}
	c := strings.Join(ls, "\n")
	if normContent(c) == "" {
		c += "\nx"
	}
	return c
}

func (g gen) entry(base time.Time) Entry {
	e := Entry{
		Time:     base.Add(time.Duration(g.r.IntN(100000)) * time.Minute),
		Category: Categories[g.r.IntN(len(Categories))],
		Content:  g.content(),
	}
	if g.r.IntN(3) > 0 {
		e.ID = fmt.Sprintf("qa-%x", g.r.Uint64())
	}
	if g.r.IntN(2) == 0 {
		e.Level = g.r.IntN(4)
	}
	if g.r.IntN(3) > 0 {
		e.Question = g.line() + " " + g.line()
	}
	return e
}

func (g gen) entries(n int) []Entry {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Entry, n)
	for i := range out {
		out[i] = g.entry(base)
	}
	return out
}

func normAll(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Normalize(e)
	}
	return out
}

// Property (seed 002, property 2): format → parse gives the entries back.
func TestPropertyEntriesRoundTrip(t *testing.T) {
	g := newGen(2)
	for i := range 300 {
		es := g.entries(g.r.IntN(6))
		text := FormatEntries(es)
		got, warns := ParseEntries(text, 1)
		got = normAll(got) // drops Line
		if len(warns) > 0 {
			t.Fatalf("case %d: warnings %v\n%s", i, warns, text)
		}
		want := normAll(es)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: round trip differs\nwant %#v\ngot  %#v\ntext:\n%s", i, want, got, text)
		}
	}
}

// Property: a block renders and parses back to the entries it kept, with
// its options.
func TestPropertyBlockRoundTrip(t *testing.T) {
	g := newGen(3)
	for i := range 200 {
		es := g.entries(g.r.IntN(12))
		opt := Options{MinLevel: g.r.IntN(4), MaxChars: 400 + g.r.IntN(6000), MaxEntries: 1 + g.r.IntN(10), Topics: g.r.IntN(2) == 0}
		r, err := Render(es, opt)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		pb, err := ParseBlock("# Notes\n\n" + r.Text)
		if err != nil || !pb.Found {
			t.Fatalf("case %d: parse: found %v err %v\n%s", i, pb.Found, err, r.Text)
		}
		if len(pb.Warnings) > 0 {
			t.Fatalf("case %d: warnings %v", i, pb.Warnings)
		}
		if pb.Options != opt || pb.Version != Version {
			t.Fatalf("case %d: options %+v v%d, want %+v v%d", i, pb.Options, pb.Version, opt, Version)
		}
		got := normAll(pb.Entries)
		SortNewest(got)
		if len(got) != len(r.Kept) || (len(got) > 0 && !reflect.DeepEqual(got, r.Kept)) {
			t.Fatalf("case %d: parsed %d entries, kept %d\nwant %#v\ngot  %#v", i, len(got), len(r.Kept), r.Kept, got)
		}
	}
}

// Property (seed 002, property 4): the capacity limit always holds and
// what is kept is the newest.
func TestPropertyCapacityKeepsNewest(t *testing.T) {
	g := newGen(4)
	for i := range 300 {
		es := g.entries(g.r.IntN(40))
		opt := Options{MaxChars: 400 + g.r.IntN(8000), MaxEntries: 1 + g.r.IntN(40)}
		r, err := Render(es, opt)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if n := utf8.RuneCountInString(r.Text); n > opt.MaxChars {
			t.Fatalf("case %d: block has %d characters, limit %d", i, n, opt.MaxChars)
		}
		if len(r.Kept) > opt.MaxEntries {
			t.Fatalf("case %d: %d entries, limit %d", i, len(r.Kept), opt.MaxEntries)
		}
		all := normAll(es)
		SortNewest(all)
		if len(r.Kept)+r.Omitted != len(all) {
			t.Fatalf("case %d: kept %d + omitted %d != %d", i, len(r.Kept), r.Omitted, len(all))
		}
		if len(r.Kept) > 0 && !reflect.DeepEqual(r.Kept, all[:len(r.Kept)]) {
			t.Fatalf("case %d: the kept entries are not the newest", i)
		}
		for _, k := range r.Kept {
			for _, o := range all[len(r.Kept):] {
				if o.Time.After(k.Time) {
					t.Fatalf("case %d: kept %v but left out newer %v", i, k.Time, o.Time)
				}
			}
		}
		if r.Omitted > 0 && !strings.Contains(r.Text, fmt.Sprintf("%d older entries left out (%s)", r.Omitted, r.Reason)) {
			t.Fatalf("case %d: the block does not say what was left out:\n%s", i, r.Text)
		}
	}
}

// doc builds a random document around an optional block.
func (g gen) doc(block string) (before, after string) {
	var b, a []string
	for range g.r.IntN(8) {
		b = append(b, g.outsideLine())
	}
	for range g.r.IntN(8) {
		a = append(a, g.outsideLine())
	}
	before = strings.Join(b, "\n")
	if before != "" {
		before += "\n"
	}
	after = strings.Join(a, "\n")
	if g.r.IntN(2) == 0 && after != "" {
		after += "\n"
	}
	return before, after
}

// outsideLine is a line of the user's own text: anything but a memex
// marker at column 0.
func (g gen) outsideLine() string {
	for {
		l := g.line()
		if g.r.IntN(6) == 0 {
			l = []string{" <!-- memex:end -->", "<!-- memex:beginning -->x", "`<!-- memex:end -->`", "\r", "### [2025-01-15 14:30] general"}[g.r.IntN(5)]
		}
		if !strings.HasPrefix(l, beginPrefix) && !strings.HasPrefix(l, EndMarker) {
			return l
		}
	}
}

// Property: splicing a block never changes a byte outside it, whether the
// document had a block or not, and splicing twice changes nothing more.
func TestPropertyOutsideTheBlockUnchanged(t *testing.T) {
	g := newGen(5)
	for i := range 300 {
		old, err := Render(g.entries(g.r.IntN(4)), Options{MaxChars: 4000, MaxEntries: 10})
		if err != nil {
			t.Fatal(err)
		}
		nw, err := Render(g.entries(g.r.IntN(4)), Options{MinLevel: 1, MaxChars: 3000, MaxEntries: 5})
		if err != nil {
			t.Fatal(err)
		}
		before, after := g.doc("")
		hasBlock := g.r.IntN(3) > 0
		doc := before + after
		if hasBlock {
			doc = before + old.Text + after
		}
		out, err := Splice(doc, nw.Text)
		if err != nil {
			t.Fatalf("case %d: %v\n%q", i, err, doc)
		}
		sp, err := Find(out)
		if err != nil || !sp.Found {
			t.Fatalf("case %d: no block after splicing: %v", i, err)
		}
		if out[sp.Start:sp.End] != nw.Text {
			t.Fatalf("case %d: the block is not the new one", i)
		}
		gotBefore, gotAfter := out[:sp.Start], out[sp.End:]
		if hasBlock {
			if gotBefore != before || gotAfter != after {
				t.Fatalf("case %d: outside changed\nbefore %q → %q\nafter %q → %q", i, before, gotBefore, after, gotAfter)
			}
		} else if !strings.HasPrefix(gotBefore, doc) || strings.TrimLeft(gotBefore[len(doc):], "\n") != "" || gotAfter != "" {
			t.Fatalf("case %d: appended block changed the document: %q → %q + block + %q", i, doc, gotBefore, gotAfter)
		}
		again, err := Splice(out, nw.Text)
		if err != nil || again != out {
			t.Fatalf("case %d: splicing the same block again changed the document (err %v)", i, err)
		}
	}
}

func TestFindErrorsNameTheLine(t *testing.T) {
	b, _ := Render(nil, Options{MaxChars: 1000, MaxEntries: 3})
	tests := []struct{ doc, want string }{
		{"a\n<!-- memex:begin v1 -->\nb\n", "line 2: the memex block begun here never ends"},
		{"a\nb\n<!-- memex:end -->\n", "line 3: a memex end marker without a begin marker"},
		{b.Text + b.Text, "a second memex block"},
		{"x\n<!-- memex:begin v9 -->\n<!-- memex:end -->\n", "line 2: memex block version 9 is newer"},
		{"<!-- memex:begin vX -->\n<!-- memex:end -->\n", "line 1: malformed memex begin marker"},
	}
	for _, tc := range tests {
		_, err := Find(tc.doc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Find(%q) = %v, want %q", tc.doc, err, tc.want)
		}
		if _, err := Splice(tc.doc, b.Text); err == nil {
			t.Errorf("Splice accepted a broken document %q", tc.doc)
		}
	}
}

func TestRenderLimits(t *testing.T) {
	if _, err := Render(nil, Options{MaxChars: 100, MaxEntries: 3}); err == nil {
		t.Error("max-chars 100 accepted")
	}
	if _, err := Render(nil, Options{MaxChars: 1000, MaxEntries: 0}); err == nil {
		t.Error("max-entries 0 accepted")
	}
	r, err := Render(nil, Options{MaxChars: 1000, MaxEntries: 3})
	if err != nil || !strings.Contains(r.Text, "No trusted answers yet") {
		t.Fatalf("empty block: %v\n%s", err, r.Text)
	}
}

func TestParseDocumentSeedFormatBulletsAndWarnings(t *testing.T) {
	doc := `# Project

## Testing
- Run ` + "`make test`" + ` before every commit; it runs the race detector.
  It takes about a minute.
- ok
* [ ] Never push to main directly, open a pull request.

` + "```sh\n- not a bullet inside a fence\n```" + `

### [2025-01-15 14:30] file_pattern

Sales files: columns date, product, qty, price.

---

### [2025-13-45 99:99] general

bad time

---

### [2025-01-16 09:00] nonsense

unknown category

---

### [2025-01-17 10:00] user_pref
never closed
`
	d, err := ParseDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Entries) != 1 || d.Entries[0].Category != FilePattern || !strings.HasPrefix(d.Entries[0].Content, "Sales files") {
		t.Fatalf("entries %#v", d.Entries)
	}
	wantLines := []int{19, 25, 31}
	if len(d.Warnings) != len(wantLines) {
		t.Fatalf("warnings %v, want lines %v", d.Warnings, wantLines)
	}
	for i, w := range d.Warnings {
		if w.Line != wantLines[i] {
			t.Errorf("warning %d on line %d, want %d: %s", i, w.Line, wantLines[i], w.Msg)
		}
	}
	if len(d.Bullets) != 2 {
		t.Fatalf("bullets %#v", d.Bullets)
	}
	if b := d.Bullets[0]; b.Line != 4 || b.Heading != "Testing" || !strings.Contains(b.Text, "about a minute") {
		t.Errorf("bullet 0 %#v", b)
	}
	if b := d.Bullets[1]; b.Text != "Never push to main directly, open a pull request." {
		t.Errorf("bullet 1 %#v", b)
	}
}

func TestClassifyAndTruncate(t *testing.T) {
	tests := []struct {
		q        string
		tags     []string
		explicit string
		want     Category
	}{
		{"why does go test -race fail on the cache?", nil, "", ErrorSolution},
		{"how do I add a column with a default?", nil, "", General},
		{"how do I add a column?", []string{"sql", "USER_PREF"}, "", UserPref},
		{"why does it crash?", nil, "file_pattern", FilePattern},
		{"why does it crash?", nil, "bogus", ErrorSolution},
	}
	for _, tc := range tests {
		if got := Classify(tc.q, tc.tags, tc.explicit); got != tc.want {
			t.Errorf("Classify(%q, %v, %q) = %s, want %s", tc.q, tc.tags, tc.explicit, got, tc.want)
		}
	}
	g := newGen(6)
	for i := range 100 {
		c := g.content() + strings.Repeat("\nline 数据", g.r.IntN(50))
		max := 20 + g.r.IntN(300)
		got := Truncate(c, max, "…(cut)")
		if n := utf8.RuneCountInString(got); n > max {
			t.Fatalf("case %d: %d characters > %d", i, n, max)
		}
		if utf8.RuneCountInString(c) <= max && got != c {
			t.Fatalf("case %d: content within the limit changed", i)
		}
	}
}
