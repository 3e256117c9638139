package redisstore

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// votedStates are states that random votes (sources, results, strengths,
// times to the nanosecond, human verdicts, anchors) left.
func votedStates(t *testing.T, n int) []*trust.State {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 9))
	model := trust.New(trust.DefaultParams())
	at := time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.UTC)
	var out []*trust.State
	for range n {
		st := trust.NewState("maker"+strconv.Itoa(rng.IntN(3)), at)
		for range rng.IntN(12) {
			at = at.Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
			res := core.ResultPass
			if rng.IntN(3) == 0 {
				res = core.ResultFail
			}
			strength := []core.Strength{core.StrengthWeak, core.StrengthMedium, core.StrengthStrong}[rng.IntN(3)]
			model.Apply(st, trust.Vote{Source: "src" + strconv.Itoa(rng.IntN(5)), Result: res, Strength: strength, At: at,
				Human: rng.IntN(10) == 0, Trusted: rng.IntN(8) == 0}, nil)
		}
		// What only other paths set (a human's status, the CUSUM alarm).
		st.HumanLocked = rng.IntN(5) == 0
		if rng.IntN(4) == 0 {
			st.StaleBy = "src" + strconv.Itoa(rng.IntN(5))
		}
		out = append(out, st)
	}
	return out
}

var stateOpts = cmp.Options{cmp.AllowUnexported(trust.State{}), cmpopts.EquateEmpty()}

// TestStateJSON: the compact form round-trips every state exactly, is read
// back as trust.State's own JSON (what earlier versions wrote) is, and is
// at most 75 % of its size once a state holds evidence (71 % on these:
// the evidence's floats are most of what is left).
func TestStateJSON(t *testing.T) {
	var compact, legacy int
	for i, st := range votedStates(t, 300) {
		b, err := json.Marshal(stateJSON{st})
		if err != nil {
			t.Fatal(err)
		}
		var got stateJSON
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("state %d: %v: %s", i, err, b)
		}
		if diff := cmp.Diff(st, got.st, stateOpts); diff != "" {
			t.Fatalf("state %d: compact round trip (-want +got):\n%s\n%s", i, diff, b)
		}
		old, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var fromOld stateJSON
		if err := json.Unmarshal(old, &fromOld); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st, fromOld.st, stateOpts); diff != "" {
			t.Fatalf("state %d: earlier versions' form (-want +got):\n%s", i, diff)
		}
		if len(st.Sources) > 0 {
			compact += len(b)
			legacy += len(old)
		}
	}
	if compact == 0 || float64(compact) > 0.75*float64(legacy) {
		t.Errorf("compact states take %d bytes, trust.State's JSON %d: want ≤ 75 %%", compact, legacy)
	}
	t.Logf("states with evidence: %d bytes compact, %d as trust.State's JSON", compact, legacy)

	// A time no int64 of nanoseconds holds: trust.State's own form, exact.
	far := trust.NewState("maker", time.Date(2300, 1, 1, 0, 0, 0, 1, time.UTC))
	b, err := json.Marshal(stateJSON{far})
	if err != nil {
		t.Fatal(err)
	}
	var got stateJSON
	if err := json.Unmarshal(b, &got); err != nil || !got.st.CreatedAt.Equal(far.CreatedAt) {
		t.Errorf("a state created in 2300: %s decodes to %v (%v)", b, got.st, err)
	}
	if err := json.Unmarshal([]byte(`{"v":3,"st":"active"}`), &got); err == nil || !strings.Contains(err.Error(), "format 3") {
		t.Errorf("an unknown format: %v", err)
	}
}

// TestRecordWithEarlierState: a record whose state an earlier version
// wrote (trust.State's own JSON) decodes, whole and as a head, to the same
// state as one written now.
func TestRecordWithEarlierState(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	rec := core.Record{QAID: "qa-1", ProjectID: "p", Question: `say "s":{}`, Answer: "a.", CreatedAt: created, UpdatedAt: created}
	for i, st := range votedStates(t, 20) {
		if len(st.Sources) == 0 {
			continue
		}
		now, err := toStored(rec, st, 7).encode(3)
		if err != nil {
			t.Fatal(err)
		}
		compact, _ := json.Marshal(stateJSON{st})
		old, _ := json.Marshal(st)
		if !strings.Contains(now, `"s":`+string(compact)) {
			t.Fatalf("record %d does not hold the compact state: %s", i, now)
		}
		earlier := strings.Replace(now, `"s":`+string(compact), `"s":`+string(old), 1)
		for _, v := range []string{now, earlier} {
			full, err := decodeStored("p", "qa-1", v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(st, full.State, stateOpts); diff != "" {
				t.Fatalf("record %d (-want +got):\n%s", i, diff)
			}
		}
	}
}
