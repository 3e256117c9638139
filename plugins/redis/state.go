package redisstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// stateJSON is a record's trust.State as the store keeps it: short member
// names and times as Unix nanoseconds (exact): ~70 % of the bytes of
// trust.State's own JSON (its floats are most of the rest), which a
// record written by an earlier version holds and which is still read. A record that has been validated carries
// its state, so this is most of what validation adds to its size.
type stateJSON struct{ st *trust.State }

// stateFormat marks the compact form: it is the first member, so a value
// starting with {"v": is compact and anything else is trust.State's JSON.
const stateFormat = 2

type stateWire struct {
	V         int                     `json:"v"`
	Creator   string                  `json:"cr,omitempty"`
	CreatedAt int64                   `json:"c,omitempty"`
	Sources   map[string]evidenceWire `json:"r,omitempty"`
	Status    core.Status             `json:"st,omitempty"`
	Human     bool                    `json:"hl,omitempty"`
	CUSUM     float64                 `json:"cu,omitempty"`
	LastPass  int64                   `json:"lp,omitempty"`
	Fails     int                     `json:"cf,omitempty"`
	Seq       uint64                  `json:"sq,omitempty"`
	PassSeq   uint64                  `json:"ps,omitempty"`
	StaleBy   string                  `json:"sb,omitempty"`
	Peak      int                     `json:"pp,omitempty"`
	Proven    bool                    `json:"pv,omitempty"`
	Rejected  bool                    `json:"rj,omitempty"`
}

type evidenceWire struct {
	S        float64 `json:"s,omitempty"`
	F        float64 `json:"f,omitempty"`
	T        int64   `json:"t,omitempty"`
	Anchor   bool    `json:"a,omitempty"`
	CA       float64 `json:"ca,omitempty"`
	CD       float64 `json:"cd,omitempty"`
	LastFail bool    `json:"lf,omitempty"`
	N        uint64  `json:"n,omitempty"`
}

func (s stateJSON) MarshalJSON() ([]byte, error) {
	st := s.st
	if !inNS(st.CreatedAt) || !inNS(st.LastPass) {
		return json.Marshal(st) // (a clock set past 2262: trust.State's own form)
	}
	for _, e := range st.Sources {
		if e != nil && !inNS(e.T) {
			return json.Marshal(st)
		}
	}
	w := stateWire{V: stateFormat, Creator: st.Creator, CreatedAt: ns(st.CreatedAt), Status: st.Status,
		Human: st.HumanLocked, CUSUM: st.CUSUM, LastPass: ns(st.LastPass), Fails: st.ConsecutiveFail,
		Seq: st.Seq, PassSeq: st.PassSeq, StaleBy: st.StaleBy, Peak: st.PeakPassers, Proven: st.Proven, Rejected: st.Rejected}
	if len(st.Sources) > 0 {
		w.Sources = make(map[string]evidenceWire, len(st.Sources))
		for id, e := range st.Sources {
			if e == nil {
				continue
			}
			w.Sources[id] = evidenceWire{S: e.S, F: e.F, T: ns(e.T), Anchor: e.Anchor, CA: e.CA, CD: e.CD, LastFail: e.LastFail, N: e.N}
		}
	}
	return json.Marshal(w)
}

func (s *stateJSON) UnmarshalJSON(b []byte) error {
	if !bytes.HasPrefix(b, []byte(`{"v":`)) {
		var st trust.State // written by an earlier version
		if err := json.Unmarshal(b, &st); err != nil {
			return err
		}
		s.st = &st
		return nil
	}
	var w stateWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.V != stateFormat {
		return fmt.Errorf("trust state format %d is not known to this version", w.V)
	}
	st := &trust.State{Creator: w.Creator, CreatedAt: fromNS(w.CreatedAt), Status: w.Status, HumanLocked: w.Human,
		CUSUM: w.CUSUM, LastPass: fromNS(w.LastPass), ConsecutiveFail: w.Fails, Seq: w.Seq, PassSeq: w.PassSeq,
		StaleBy: w.StaleBy, PeakPassers: w.Peak, Proven: w.Proven, Rejected: w.Rejected,
		Sources: make(map[string]*trust.SourceEvidence, len(w.Sources))}
	for id, e := range w.Sources {
		st.Sources[id] = &trust.SourceEvidence{S: e.S, F: e.F, T: fromNS(e.T), Anchor: e.Anchor, CA: e.CA, CD: e.CD, LastFail: e.LastFail, N: e.N}
	}
	s.st = st
	return nil
}

// nsMin and nsMax bound the times Unix nanoseconds hold (1678–2262).
var nsMin, nsMax = time.Unix(0, -1<<63+1), time.Unix(0, 1<<63-1)

// inNS reports whether ns(t) is exact.
func inNS(t time.Time) bool { return t.IsZero() || !t.Before(nsMin) && !t.After(nsMax) }

// ns is t in Unix nanoseconds (0: the zero time).
func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}
