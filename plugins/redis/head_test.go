package redisstore

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// fullHead decodes a record's head the slow way: the whole value.
func fullHead(t *testing.T, v string) head {
	t.Helper()
	_, body, _ := strings.Cut(v, "\n")
	var h head
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestDecodeHeadSkipsText checks that the head decoded without the text
// equals the head decoded from the whole value, for texts that try to
// confuse the scanner (quotes, backslashes, braces, a "q" member inside).
func TestDecodeHeadSkipsText(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	voted := trust.NewState("maker", created)
	trust.New(trust.DefaultParams()).Apply(voted, trust.Vote{Source: "agent", Result: core.ResultPass, Strength: core.StrengthStrong, At: created}, nil)
	nasty := []string{
		`plain`, `say "hi"`, `ends with a backslash \`, `\\`, `\"`, `","q":"x`, `{"a":1}`, `}]},`,
		"tab\tnew\nline", "中文？", `\u0022`, `",`, ``,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, `q`, `a`, ` `, `x`, "\n", "é"}
	for range 300 {
		var b strings.Builder
		for range rng.IntN(20) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		nasty = append(nasty, b.String())
	}
	opts := cmp.Options{cmpopts.EquateEmpty(), cmp.AllowUnexported(trust.State{}, stateJSON{})}
	for i, text := range nasty {
		rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: text, Answer: text + text, Summary: text,
			Tags: []string{text}, Metadata: map[string]any{"q": text, "a": map[string]any{"q": text}},
			CreatedAt: created, UpdatedAt: created.Add(time.Duration(i) * time.Second), SharedProjects: []string{"o", "p2"}, Source: text}
		st := trust.NewState("maker", created)
		if i%2 == 1 {
			st = voted
		}
		v, err := toStored(rec, st, uint64(i)).encode(1)
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(v, "\n")
		small, ok := headJSON(body)
		if !ok {
			t.Fatalf("text %q: headJSON could not split %s", text, body)
		}
		if strings.Contains(small, `"q":`+mustJSON(t, text)+`,"a":`) || !json.Valid([]byte(small)) {
			t.Fatalf("text %q: bad head JSON %s", text, small)
		}
		var got head
		if err := json.Unmarshal([]byte(small), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fullHead(t, v), got, opts); diff != "" {
			t.Fatalf("text %q: head differs (-full +fast):\n%s", text, diff)
		}
		h, err := decodeHead("p", "qa-1", v)
		if err != nil {
			t.Fatal(err)
		}
		if h.Doc != uint64(i) || len(h.Shared) != 2 || h.State == nil {
			t.Fatalf("text %q: decodeHead = %+v", text, h)
		}
	}
}

func TestHeadJSONRejects(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"q":"x"`, `{"q":"x}`, `{"q":"x"} trailing`, `{q:1}`} {
		if s, ok := headJSON(body); ok {
			t.Errorf("headJSON(%q) = %q, want not ok", body, s)
		}
	}
	if s, ok := headJSON(`{}`); !ok || s != `{}` {
		t.Errorf("headJSON({}) = %q, %v", s, ok)
	}
	if s, ok := headJSON(`{"q":"x","a":"y"}`); !ok || s != `{}` {
		t.Errorf("headJSON(text only) = %q, %v", s, ok)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStatusOnlyStateElided checks that a state without evidence is stored
// as its status only and read back equal (an imported active QA).
func TestStatusOnlyStateElided(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	for _, status := range []core.Status{core.StatusCandidate, core.StatusActive, core.StatusStale, core.StatusDeprecated} {
		rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: "q?", Answer: "a.", CreatedAt: created, UpdatedAt: created, Status: status, Author: "maker"}
		st := trust.ImportedState(rec)
		v, err := toStored(rec, st, 1).encode(1)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(v, `"s":`) {
			t.Errorf("%s: state stored in full: %s", status, v)
		}
		if want := `"ss":"` + string(status) + `"`; (status == core.StatusCandidate) == strings.Contains(v, want) {
			t.Errorf("%s: status stored wrongly: %s", status, v)
		}
		full, err := decodeStored("p", "qa-1", v)
		if err != nil {
			t.Fatal(err)
		}
		h, err := decodeHead("p", "qa-1", v)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []*trust.State{full.State, h.State} {
			if diff := cmp.Diff(st, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: state differs (-want +got):\n%s", status, diff)
			}
		}
		if again, _ := full.encode(1); again != v {
			t.Errorf("%s: re-encoded value differs:\n%s\n%s", status, v, again)
		}
	}
	// Evidence keeps the whole state.
	rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: "q?", Answer: "a.", CreatedAt: created, UpdatedAt: created, Status: core.StatusActive, ValidationLevel: 1}
	if v, _ := toStored(rec, trust.ImportedState(rec), 1).encode(1); !strings.Contains(v, `"s":`) || strings.Contains(v, `"ss":`) {
		t.Errorf("state with evidence: %s", v)
	}
}
