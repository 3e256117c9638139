// Package redact finds and redacts secrets: a rule set written as data (id,
// keywords, regex, optional entropy threshold, true and false samples), in
// the manner of gitleaks. Findings carry the rule id and position, never the
// secret. The same rules serve candidate extraction, events files and logs
// (SPEC §3.4, §10 "no secrets stored").
//
// How a rule runs: the input is lower-cased (ASCII only, so byte offsets do
// not move) and the rule's keywords are looked up first; a rule with keywords
// runs its regex only on windows around them, cut to the keyword's line and
// to Rule.Before/After bytes (a Multiline rule runs on the whole text when a
// keyword is present anywhere). Text without keywords costs a few substring
// searches, which keeps the no-secret path fast. Each
// match's secret (the SecretGroup submatch) must then reach MinEntropy, must
// not look like a placeholder ("xxx", "<your-key>", "changeme", "${VAR}",
// "*****", "[REDACTED:…]", …) and must pass the rule's Keep predicate.
// Overlapping matches are merged into one finding named after the earliest
// rule in the set, so provider rules win over the generic ones listed last.
package redact

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Rule is one kind of secret.
type Rule struct {
	ID          string
	Description string
	Keywords    []string // lower-case prefilter; empty = always run
	Regex       *regexp.Regexp
	// Pattern is the regex source when Regex is nil. The default rules use
	// it so that a rule's regex is compiled only the first time its keyword
	// is seen: compiling all of them costs milliseconds at every start.
	Pattern string
	// SecretGroup is the submatch holding the secret (0 = whole match). When
	// that group did not take part in the match, the next group that did is
	// used (so alternatives can hold the secret in different groups).
	SecretGroup int
	// MinEntropy, when > 0, requires the secret's Shannon entropy (bits per
	// char) to reach it.
	MinEntropy float64
	True       []string // samples that must be found
	False      []string // samples that must not

	// Multiline marks a rule whose matches may span lines (PEM blocks): its
	// regex runs on the whole text when a keyword is present anywhere,
	// instead of only on the lines holding a keyword.
	Multiline bool
	// Keep, when set, is a last check on a match: groups[i] is submatch i
	// ("" when it did not take part). false drops the match.
	Keep func(groups []string) bool
	// Before and After bound how far a match reaches before the start and
	// after the end of its keyword (0 = 512 and 4096 bytes): the regex of a
	// single-line rule runs only on these windows around keyword hits.
	Before, After int
}

// Finding is one detected secret: the rule and the byte span of the secret
// in the scanned text. It never holds the secret itself.
type Finding struct {
	Rule  string `json:"rule"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	// Field names where the finding is when the scan covered several values
	// (RedactValue: a JSON path such as "metadata.tags[1]"; extract: the
	// candidate field). Empty for a plain string.
	Field string `json:"field,omitempty"`
}

// Redactor applies a rule set. It is immutable and safe for concurrent use.
type Redactor struct {
	rules []Rule
	prio  map[string]int // rule id → position in rules
	lazy  []lazyRegex    // per rule: Pattern compiled on first use
}

// New returns a redactor with the default rules (DefaultRules).
func New() *Redactor {
	r, err := newRedactor(DefaultRules())
	if err != nil {
		// The default rules are checked by the package tests.
		panic("redact: default rules: " + err.Error())
	}
	return r
}

// NewWithRules returns a redactor applying rules, in order of priority (an
// overlap of two findings is named after the earlier rule). It checks that
// every rule has a unique, marker-safe id ([a-z0-9-]), a regex, a secret
// group the regex has and lower-case keywords.
func NewWithRules(rules []Rule) (*Redactor, error) {
	rules = slices.Clone(rules)
	for i := range rules {
		if rules[i].Regex == nil && rules[i].Pattern != "" {
			re, err := regexp.Compile(rules[i].Pattern)
			if err != nil {
				return nil, fmt.Errorf("redact: rule %s: bad pattern: %v", rules[i].ID, err)
			}
			rules[i].Regex = re
		}
	}
	return newRedactor(rules)
}

// newRedactor checks rules and builds the redactor; a rule with only a
// Pattern is compiled on first use (the default rules, checked by the
// package tests).
func newRedactor(rules []Rule) (*Redactor, error) {
	r := &Redactor{rules: rules, prio: make(map[string]int, len(rules)), lazy: make([]lazyRegex, len(rules))}
	for i, rule := range r.rules {
		if rule.Regex == nil && rule.Pattern != "" {
			r.lazy[i].pattern = rule.Pattern
		}
		switch {
		case !validID(rule.ID):
			return nil, fmt.Errorf("redact: rule %d: id %q must be 1-64 chars of [a-z0-9-]", i, rule.ID)
		case rule.Regex == nil && rule.Pattern != "":
			// compiled on first use
		case rule.Regex == nil:
			return nil, fmt.Errorf("redact: rule %s: no regex", rule.ID)
		case rule.SecretGroup < 0 || rule.Regex != nil && rule.SecretGroup > rule.Regex.NumSubexp():
			return nil, fmt.Errorf("redact: rule %s: secret group %d out of range", rule.ID, rule.SecretGroup)
		}
		if _, dup := r.prio[rule.ID]; dup {
			return nil, fmt.Errorf("redact: rule %s: duplicate id", rule.ID)
		}
		for _, k := range rule.Keywords {
			if k == "" || k != strings.ToLower(k) {
				return nil, fmt.Errorf("redact: rule %s: keyword %q must be non-empty lower case", rule.ID, k)
			}
		}
		r.prio[rule.ID] = i
	}
	return r, nil
}

// lazyRegex is a rule regex compiled on first use.
type lazyRegex struct {
	once    sync.Once
	pattern string
	re      *regexp.Regexp
}

// regex returns rule i's compiled regex, compiling a Pattern-only rule once.
func (r *Redactor) regex(i int) *regexp.Regexp {
	if re := r.rules[i].Regex; re != nil {
		return re
	}
	l := &r.lazy[i]
	l.once.Do(func() { l.re = regexp.MustCompile(l.pattern) })
	return l.re
}

func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Rules returns the rule set.
func (r *Redactor) Rules() []Rule { return r.rules }

// Marker returns the text a finding of rule is replaced with.
func Marker(rule string) string { return "[REDACTED:" + rule + "]" }

var markerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[REDACTED:[a-z0-9-]{1,64}\]`) })

// cand is a match before merging; prio is the rule's position.
type cand struct{ start, end, prio int }

// Find returns the findings in s, ordered by position, non-overlapping.
// Redaction markers already in s are never findings; a match that reaches
// into a marker is widened to cover the whole marker.
func (r *Redactor) Find(s string) []Finding {
	cs := r.scan(s)
	if len(cs) == 0 {
		return nil
	}
	cs = r.avoidMarkers(s, cs)
	if len(cs) == 0 {
		return nil
	}
	cs = merge(cs)
	out := make([]Finding, len(cs))
	for i, c := range cs {
		out[i] = Finding{Rule: r.rules[c.prio].ID, Start: c.start, End: c.end}
	}
	return out
}

// Has reports whether s holds a secret.
func (r *Redactor) Has(s string) bool { return len(r.Find(s)) > 0 }

func (r *Redactor) scan(s string) []cand {
	if s == "" {
		return nil
	}
	lower := asciiLower(s)
	var cs []cand
	var groups []string
	for i := range r.rules {
		rule := &r.rules[i]
		switch {
		case len(rule.Keywords) == 0:
			cs = r.match(cs, &groups, i, s, 0)
		case rule.Multiline:
			if containsAny(lower, rule.Keywords) {
				cs = r.match(cs, &groups, i, s, 0)
			}
		default:
			before, after := rule.Before, rule.After
			if before <= 0 {
				before = windowBefore
			}
			if after <= 0 {
				after = windowAfter
			}
			for _, rg := range keywordWindows(lower, rule.Keywords, before, after) {
				cs = r.match(cs, &groups, i, s[rg[0]:rg[1]], rg[0])
			}
		}
	}
	return cs
}

// match runs rule i on sub (at offset off in the scanned text).
//
// A match the rule rejects may hide one inside its secret group: in
// "set it: DB_PASSWORD=x" the assignment rules first read "it" as the key
// and "DB_PASSWORD=x" as its value. Regex matches do not overlap, so when
// the rejected secret holds one of the rule's keywords and starts after a
// byte no name or token holds (the anchors there mean what they mean in
// the whole text), the rule is tried again from that start, for a match
// starting before the rejected one ends (each retry starts further on, and
// scans no further than the next match).
func (r *Redactor) match(cs []cand, groups *[]string, i int, sub string, off int) []cand {
	rule := &r.rules[i]
	re := r.regex(i)
	for _, loc := range re.FindAllStringSubmatchIndex(sub, -1) {
		end := loc[1]
		a, b, ok := accept(rule, groups, sub, loc)
		for !ok && a > loc[0] && !nameByte(sub[a-1]) &&
			(len(rule.Keywords) == 0 || containsAny(asciiLower(sub[a:b]), rule.Keywords)) {
			in := re.FindStringSubmatchIndex(sub[a:])
			if in == nil || a+in[0] >= end {
				break
			}
			for j := range in {
				if in[j] >= 0 {
					in[j] += a
				}
			}
			loc = in
			a, b, ok = accept(rule, groups, sub, loc)
		}
		if ok {
			cs = append(cs, cand{start: off + a, end: off + b, prio: i})
		}
	}
	return cs
}

// nameByte reports a byte of a name or token ([A-Za-z0-9_.-]).
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// accept checks one match of rule: the secret's span and whether it is
// kept (a is -1 when the match holds no secret group).
func accept(rule *Rule, groups *[]string, sub string, loc []int) (a, b int, ok bool) {
	a, b = -1, -1
	for g := rule.SecretGroup; 2*g+1 < len(loc); g++ {
		if loc[2*g] >= 0 {
			a, b = loc[2*g], loc[2*g+1]
			break
		}
	}
	if a < 0 || a == b {
		return -1, -1, false
	}
	secret := sub[a:b]
	if rule.MinEntropy > 0 && Entropy(secret) < rule.MinEntropy {
		return a, b, false
	}
	if IsPlaceholder(secret) {
		return a, b, false
	}
	if rule.Keep != nil {
		gs := (*groups)[:0]
		for g := 0; 2*g+1 < len(loc); g++ {
			if loc[2*g] < 0 {
				gs = append(gs, "")
			} else {
				gs = append(gs, sub[loc[2*g]:loc[2*g+1]])
			}
		}
		*groups = gs
		if !rule.Keep(gs) {
			return a, b, false
		}
	}
	return a, b, true
}

// avoidMarkers drops candidates lying wholly inside redaction markers and
// widens those that reach into one to the marker's edges.
func (r *Redactor) avoidMarkers(s string, cs []cand) []cand {
	if !strings.Contains(s, "[REDACTED:") {
		return cs
	}
	ms := markerRE().FindAllStringIndex(s, -1)
	if len(ms) == 0 {
		return cs
	}
	out := cs[:0]
	for _, c := range cs {
		covered := 0
		for _, m := range ms {
			if m[1] <= c.start || m[0] >= c.end {
				continue
			}
			covered += min(m[1], c.end) - max(m[0], c.start)
			c.start = min(c.start, m[0])
			c.end = max(c.end, m[1])
		}
		// After widening, the candidate is the markers it touched plus the
		// text between; keep it only if some of that text is not a marker.
		if covered > 0 && markerBytes(ms, c.start, c.end) >= c.end-c.start {
			continue
		}
		out = append(out, c)
	}
	return out
}

func markerBytes(ms [][]int, start, end int) int {
	n := 0
	for _, m := range ms {
		if m[1] <= start || m[0] >= end {
			continue
		}
		n += min(m[1], end) - max(m[0], start)
	}
	return n
}

// merge sorts candidates and unites overlapping ones; a union is named
// after its highest-priority (earliest) rule.
func merge(cs []cand) []cand {
	slices.SortFunc(cs, func(a, b cand) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return a.prio - b.prio
	})
	out := cs[:1]
	for _, c := range cs[1:] {
		last := &out[len(out)-1]
		if c.start < last.end {
			last.end = max(last.end, c.end)
			last.prio = min(last.prio, c.prio)
			continue
		}
		out = append(out, c)
	}
	return out
}

// Redact replaces every finding with "[REDACTED:<rule>]" and returns the
// findings (spans in s). Idempotent: Redact of the output finds nothing and
// returns it unchanged. When replacing creates a new match (text joined
// across a marker), the new match is mapped back onto s and redaction is
// repeated until nothing is found.
func (r *Redactor) Redact(s string) (string, []Finding) {
	fs := r.Find(s)
	if len(fs) == 0 {
		return s, nil
	}
	for {
		out, segs := render(s, fs)
		more := r.Find(out)
		if len(more) == 0 {
			return out, fs
		}
		cs := make([]cand, 0, len(fs)+len(more))
		for _, f := range fs {
			cs = append(cs, cand{f.Start, f.End, r.prio[f.Rule]})
		}
		for _, f := range more {
			cs = append(cs, cand{mapPos(segs, f.Start, false), mapPos(segs, f.End, true), r.prio[f.Rule]})
		}
		cs = merge(cs)
		next := make([]Finding, len(cs))
		for i, c := range cs {
			next[i] = Finding{Rule: r.rules[c.prio].ID, Start: c.start, End: c.end}
		}
		if sameSpans(next, fs) {
			// Cannot happen (each round covers new input bytes); guard
			// against looping forever all the same.
			return out, fs
		}
		fs = next
	}
}

func sameSpans(a, b []Finding) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Start != b[i].Start || a[i].End != b[i].End {
			return false
		}
	}
	return true
}

// seg maps a marker in the output back to the span of input it replaced.
type seg struct{ outStart, outEnd, inStart, inEnd int }

func render(s string, fs []Finding) (string, []seg) {
	var b strings.Builder
	b.Grow(len(s) + 24*len(fs))
	segs := make([]seg, 0, len(fs))
	last := 0
	for _, f := range fs {
		b.WriteString(s[last:f.Start])
		o := b.Len()
		b.WriteString(Marker(f.Rule))
		segs = append(segs, seg{o, b.Len(), f.Start, f.End})
		last = f.End
	}
	b.WriteString(s[last:])
	return b.String(), segs
}

// mapPos maps an output offset to an input offset; an offset inside a
// marker maps to the start (or, for an end, the end) of what it replaced.
func mapPos(segs []seg, p int, isEnd bool) int {
	in := p
	for _, sg := range segs {
		switch {
		case p <= sg.outStart:
			return in
		case p < sg.outEnd:
			if isEnd {
				return sg.inEnd
			}
			return sg.inStart
		}
		in = sg.inEnd + (p - sg.outEnd)
	}
	return in
}

// RedactBytes is Redact for bytes; it returns b itself when nothing is found.
func (r *Redactor) RedactBytes(b []byte) []byte {
	out, fs := r.Redact(string(b))
	if len(fs) == 0 {
		return b
	}
	return []byte(out)
}

// RedactValue redacts every string inside a decoded JSON value (maps,
// slices, strings; keys too), returning the new value and the findings, each
// with Field set to the value's path ("a.b[2]"; a key's own findings carry
// the path of the key).
func (r *Redactor) RedactValue(v any) (any, []Finding) {
	return r.redactValue(v, "")
}

func (r *Redactor) redactValue(v any, path string) (any, []Finding) {
	switch x := v.(type) {
	case string:
		out, fs := r.Redact(x)
		return out, withField(fs, path)
	case map[string]any:
		var all []Finding
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			k2, f1 := r.Redact(k)
			sub := k2
			if path != "" {
				sub = path + "." + k2
			}
			v2, f2 := r.redactValue(x[k], sub)
			if _, clash := out[k2]; clash {
				// Two keys redact to the same text: keep both values.
				k2 = fmt.Sprintf("%s#%d", k2, len(out))
			}
			out[k2] = v2
			all = append(all, withField(f1, sub)...)
			all = append(all, f2...)
		}
		return out, all
	case []any:
		var all []Finding
		out := make([]any, len(x))
		for i, vv := range x {
			var f []Finding
			out[i], f = r.redactValue(vv, fmt.Sprintf("%s[%d]", path, i))
			all = append(all, f...)
		}
		return out, all
	case []string:
		var all []Finding
		out := make([]string, len(x))
		for i, vv := range x {
			var f []Finding
			out[i], f = r.Redact(vv)
			all = append(all, withField(f, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out, all
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, vv := range x {
			m[k] = vv
		}
		return r.redactValue(m, path)
	}
	return v, nil
}

func withField(fs []Finding, field string) []Finding {
	for i := range fs {
		fs[i].Field = field
	}
	return fs
}

// ErrRules reports a rule set that fails its own samples (CheckRules).
var ErrRules = errors.New("redact: rule samples failed")

// CheckRules runs every rule's True and False samples through r and returns
// an error naming each rule whose samples fail (the ids, never a sample).
func (r *Redactor) CheckRules() error {
	var bad []string
	for _, rule := range r.rules {
		for i, s := range rule.True {
			if !r.hasRule(s, rule.ID) {
				bad = append(bad, fmt.Sprintf("%s true[%d] not found", rule.ID, i))
			}
		}
		for i, s := range rule.False {
			if r.Has(s) {
				bad = append(bad, fmt.Sprintf("%s false[%d] found", rule.ID, i))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrRules, strings.Join(bad, "; "))
	}
	return nil
}

// hasRule reports whether rule id alone finds something in s.
func (r *Redactor) hasRule(s, id string) bool {
	i, ok := r.prio[id]
	if !ok {
		return false
	}
	one := &Redactor{rules: r.rules[i : i+1], prio: map[string]int{id: 0}, lazy: r.lazy[i : i+1]}
	return one.Has(s)
}

// Entropy is the Shannon entropy of s in bits per byte.
func Entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	e := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

// asciiLower lower-cases ASCII letters only, keeping byte offsets.
func asciiLower(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return b
}

func containsAny(lower []byte, kws []string) bool {
	for _, k := range kws {
		if bytes.Contains(lower, []byte(k)) {
			return true
		}
	}
	return false
}

// Default window of text around a keyword that a single-line rule's regex
// sees: a match holds its keyword, so it lies within the keyword's line and,
// unless it is longer than these bounds, within this many bytes of it.
const (
	windowBefore = 512
	windowAfter  = 4096
)

// keywordWindows returns the merged [start,end) ranges of lower around each
// keyword occurrence, cut to the occurrence's line and to the window bounds.
// Running a regex on short windows instead of the whole text is what makes
// text without secrets cheap to scan.
func keywordWindows(lower []byte, kws []string, before, after int) [][2]int {
	var rs [][2]int
	for _, k := range kws {
		kb := []byte(k)
		from := 0
		for from < len(lower) {
			i := bytes.Index(lower[from:], kb)
			if i < 0 {
				break
			}
			i += from
			// One byte more than asked, so \b and similar see the byte
			// before the window.
			lo := max(0, i-before-1)
			if j := bytes.LastIndexByte(lower[lo:i], '\n'); j >= 0 {
				lo += j + 1
			}
			hi := min(len(lower), i+len(kb)+after+1)
			if j := bytes.IndexByte(lower[i+len(kb):hi], '\n'); j >= 0 {
				hi = i + len(kb) + j
			}
			rs = append(rs, [2]int{lo, hi})
			from = i + len(kb)
		}
	}
	if len(rs) <= 1 {
		return rs
	}
	slices.SortFunc(rs, func(a, b [2]int) int { return a[0] - b[0] })
	out := rs[:1]
	for _, x := range rs[1:] {
		last := &out[len(out)-1]
		if x[0] <= last[1] {
			last[1] = max(last[1], x[1])
			continue
		}
		out = append(out, x)
	}
	return out
}
