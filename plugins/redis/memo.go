package redisstore

import "sync"

// headMemo remembers the decoded records a search reads, so that the next
// search reads from Redis only the records that changed since. It follows
// each owner's change feed (keys.changes) from the record version hv it
// last saw (advance). A write's feed entry lists the records it changed;
// they stop being current. A record read while the memo is at hv, after hv
// was read, is current (it is hv's value or newer, and any later change is
// in the feed). A feed the
// memo cannot follow (too far behind, a server restarted from an older
// snapshot, a promoted replica that missed writes) starts a new
// generation: nothing of the owner is current.
//
// The records are bounded by bytes in two generations (genMap): a hot
// record outlives the turnover. They are shared: callers only read them
// (a match gets copies of their tags and metadata, detach).
//
// The memo keeps the fields of each owner's reputation book that searches
// read (repCurrent, putRep) the same way: every write of the book lists
// "~" in the feed, which forgets them all; so does a new generation.
type headMemo struct {
	mu     sync.Mutex
	heads  genMap[headKey, memoEntry]
	owners map[string]*ownerMemo
	gens   uint64 // generations handed out (0 is none)
}

type headKey struct{ owner, id string }

type memoEntry struct {
	st  *stored
	gen uint64 // the owner's generation the record is current in; 0: none
	raw int    // the length of the value st was decoded from
}

// ownerMemo is what the memo knows of one owner's records as of hv.
type ownerMemo struct {
	hv  string
	gen uint64
	// rep holds fields of the owner's reputation book as of hv (field →
	// value, "" for none), at most maxRepFields.
	rep map[string]string
}

// maxRepFields bounds the reputation fields the memo keeps per owner (two
// per evidence source or creator a search's candidates name): past it,
// further fields are read every time.
const maxRepFields = 4096

func newHeadMemo(max int64) *headMemo {
	if max <= 0 {
		return nil
	}
	return &headMemo{heads: newGenMap(max, headSize), owners: map[string]*ownerMemo{}}
}

// headSize is an entry's approximate memory: the decoded record (about its
// value's length, and a fixed part for its fields).
func headSize(k headKey, e memoEntry) int64 {
	return int64(len(k.owner) + len(k.id) + e.raw + 400)
}

// at is the record version the memo follows owner at ("": none).
func (m *headMemo) at(owner string) string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ow := m.owners[owner]; ow != nil {
		return ow.hv
	}
	return ""
}

// advance moves owner from record version from to version to: ids (a
// change feed's ids: "*" everything; "~", the reputation book, is not
// kept here) stop being current; restart (the feed could not be followed)
// makes nothing current.
// It does nothing unless the memo is at from (another search moved it).
func (m *headMemo) advance(owner, from, to string, ids []string, restart bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ow := m.owners[owner]
	if ow == nil {
		ow = &ownerMemo{}
		m.owners[owner] = ow
	}
	if ow.hv != from {
		return
	}
	for _, id := range ids {
		switch id {
		case "~": // the reputation book
			ow.rep = nil
		case "*":
			restart = true
		default:
			k := headKey{owner, id}
			if e, ok := m.heads.get(k); ok && e.gen != 0 {
				e.gen = 0
				m.heads.put(k, e)
			}
		}
	}
	if restart {
		m.gens++
		ow.gen = m.gens
		ow.rep = nil
	}
	ow.hv = to
}

// repCurrent sets vals[i] to the value of owner's reputation field
// fields[i] where the memo holds it current at record version hv (the
// version the memo is at), and returns the indexes of the fields it does
// not hold.
func (m *headMemo) repCurrent(owner, hv string, fields []string, vals []any) (missing []int) {
	if m == nil {
		return allIndexes(len(fields))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ow := m.owners[owner]
	if ow == nil || hv == "" || ow.hv != hv || ow.gen == 0 {
		return allIndexes(len(fields))
	}
	for i, f := range fields {
		v, ok := ow.rep[f]
		switch {
		case !ok:
			missing = append(missing, i)
		case v != "":
			vals[i] = v
		}
	}
	return missing
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// putRep remembers the values of owner's reputation fields (an HMGET's
// answer: a string or nil), read from Redis after record version hv was:
// current when the memo is still there (as put).
func (m *headMemo) putRep(owner, hv string, fields []string, vals []any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ow := m.owners[owner]
	if ow == nil || hv == "" || ow.hv != hv || ow.gen == 0 {
		return
	}
	for i, f := range fields {
		if len(ow.rep) >= maxRepFields {
			return
		}
		if ow.rep == nil {
			ow.rep = map[string]string{}
		}
		str, _ := vals[i].(string)
		ow.rep[f] = str
	}
}

// current sets out[i] to the record ids[i] of owners[i] where it is
// current at record version hvs[i] (the version the memo is at).
func (m *headMemo) current(owners, ids, hvs []string, out []*stored) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, id := range ids {
		if id == "" || hvs[i] == "" {
			continue
		}
		ow := m.owners[owners[i]]
		if ow == nil || ow.hv != hvs[i] || ow.gen == 0 {
			continue
		}
		if e, ok := m.heads.get(headKey{owners[i], id}); ok && e.gen == ow.gen {
			out[i] = e.st
		}
	}
}

// put remembers the records read (the value of each was raws[i] bytes),
// each read from Redis after record version hvs[its owner] was: current
// when the memo is still there.
func (m *headMemo) put(read []*stored, raws []int, hvs map[string]string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, st := range read {
		e := memoEntry{st: st, raw: raws[i]}
		if ow := m.owners[st.project]; ow != nil && ow.hv != "" && ow.hv == hvs[st.project] {
			e.gen = ow.gen
		}
		m.heads.put(headKey{st.project, st.ID}, e)
	}
}
