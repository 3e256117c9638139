package redisstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// stored is one QA as kept in Redis: the record's own fields (derived ones
// — trust, level, freshness, status — are recomputed from the trust state
// when read), its trust evidence and its document id. The question, the
// answer, created_at and the document id lead the value as length-prefixed
// bytes and varints (recordFields), the other fields follow as JSON with
// short names and zero values omitted (docs/REDIS.md, memory); a value
// written as JSON alone (q, a, c and d as members) is read as well.
type stored struct {
	ID       string         `json:"-"` // from the key
	Q        string         `json:"q,omitempty"`
	A        string         `json:"a,omitempty"`
	Summary  string         `json:"su,omitempty"`
	Tags     []string       `json:"tg,omitempty"`
	Metadata map[string]any `json:"md,omitempty"`
	Source   string         `json:"sr,omitempty"`
	Author   string         `json:"au,omitempty"`
	Conf     float64        `json:"cf,omitempty"`
	Usage    int64          `json:"us,omitempty"`
	Use      int64          `json:"ue,omitempty"`
	Succ     int64          `json:"ok,omitempty"`
	Fail     int64          `json:"ko,omitempty"`
	Strong   int64          `json:"sg,omitempty"`
	Counters [6]int64       `json:"x,omitzero"`
	Quar     bool           `json:"qu,omitempty"`
	LastUsed int64          `json:"lu,omitempty"` // unix ms
	LastVal  int64          `json:"lv,omitempty"` // unix ms
	Created  int64          `json:"c,omitempty"`  // unix ms
	Updated  int64          `json:"u,omitempty"`  // unix ms; omitted when equal to Created
	Hash     string         `json:"h,omitempty"`  // only when it differs from ContentHash(q, a)
	Shared   []string       `json:"sh,omitempty"`
	Doc      uint64         `json:"d,omitempty"`
	// State is the trust evidence; omitted while it holds no evidence yet
	// (a new candidate, or an imported record): then Creator names its
	// creator and Status its status when that is not "candidate".
	State   *trust.State `json:"-"`
	S       *stateJSON   `json:"s,omitempty"` // State as encoded (stateJSON)
	Creator string       `json:"cr,omitempty"`
	Status  core.Status  `json:"ss,omitempty"`

	project string // from the key
	ver     int64  // version the record was read at (0: new)
	sum     string // ContentHash(Q, A) when computed by a write (write.put)
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// toStored converts a record (derived fields are dropped).
func toStored(r core.Record, st *trust.State, doc uint64) *stored {
	s := &stored{
		ID: r.QAID, Q: r.Question, A: r.Answer, Summary: r.Summary, Tags: r.Tags, Metadata: r.Metadata,
		Source: r.Source, Author: r.Author, Conf: r.Confidence,
		Usage: r.UsageCount, Use: r.UseCount, Succ: r.SuccessCount, Fail: r.FailureCount, Strong: r.StrongSignalCount,
		Counters: [6]int64{r.Stats.StrongPass, r.Stats.StrongFail, r.Stats.MediumPass, r.Stats.MediumFail, r.Stats.WeakPass, r.Stats.WeakFail},
		Quar:     r.Quarantined, LastUsed: ms(r.LastUsedAt), LastVal: ms(r.LastValidatedAt),
		Created: ms(r.CreatedAt), Updated: ms(r.UpdatedAt), Shared: r.SharedProjects, Doc: doc, State: st,
		project: r.ProjectID,
	}
	if r.ContentHash != "" && r.ContentHash != core.ContentHash(r.Question, r.Answer) {
		s.Hash = r.ContentHash
	}
	return s
}

// entry is st as the ledger sees it (the content hash as for record).
func (s *stored) entry(withHash bool) ledger.Entry {
	return ledger.Entry{Rec: s.record(withHash), State: s.State}
}

// set takes back an entry the ledger changed; the key, the document and
// the version read stay.
func (s *stored) set(e ledger.Entry) {
	r := e.Rec
	hash, sum := s.Hash, s.sum // (a text the ledger changed has the computed hash)
	if r.Question != s.Q || r.Answer != s.A {
		hash, sum = "", ""
	}
	r.ContentHash = ""
	n := toStored(r, e.State, s.Doc)
	n.ID, n.project, n.ver, n.Hash, n.sum = s.ID, s.project, s.ver, hash, sum
	*s = *n
}

// record converts back; derived fields are filled by Store.refresh. The
// content hash is computed (when not stored) only if withHash: search
// results do not carry it.
func (s *stored) record(withHash bool) core.Record {
	r := core.Record{
		QAID: s.ID, ProjectID: s.project, Question: s.Q, Answer: s.A, Summary: s.Summary,
		Tags: s.Tags, Metadata: s.Metadata, Source: s.Source, Author: s.Author, Confidence: s.Conf,
		UsageCount: s.Usage, UseCount: s.Use, SuccessCount: s.Succ, FailureCount: s.Fail, StrongSignalCount: s.Strong,
		Stats: core.Counters{StrongPass: s.Counters[0], StrongFail: s.Counters[1], MediumPass: s.Counters[2],
			MediumFail: s.Counters[3], WeakPass: s.Counters[4], WeakFail: s.Counters[5]},
		Quarantined: s.Quar, LastUsedAt: fromMS(s.LastUsed), LastValidatedAt: fromMS(s.LastVal),
		CreatedAt: fromMS(s.Created), UpdatedAt: fromMS(s.Updated), ContentHash: s.Hash,
		SharedProjects: s.Shared, Status: s.State.Status,
	}
	if withHash {
		r.ContentHash = s.contentHash()
	}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	if r.SharedProjects == nil {
		r.SharedProjects = []string{}
	}
	return r
}

// contentHash is the record's content hash (stored only when imported
// with a different one); a record lastWritten keeps carries it computed.
func (s *stored) contentHash() string {
	if s.Hash != "" {
		return s.Hash
	}
	if s.sum != "" {
		return s.sum
	}
	return core.ContentHash(s.Q, s.A)
}

// pristine reports whether st holds no evidence yet — exactly a new
// state created at created (ms) with some status — so only its creator and
// status need storing (elidedState rebuilds it).
func pristine(st *trust.State, created int64) bool {
	return st != nil && len(st.Sources) == 0 && st.Status.Valid() && !st.HumanLocked &&
		st.CUSUM == 0 && st.LastPass.IsZero() && st.ConsecutiveFail == 0 && st.Seq == 0 && st.PassSeq == 0 &&
		st.StaleBy == "" && st.PeakPassers == 0 && !st.Proven && !st.Rejected &&
		st.CreatedAt.UnixMilli() == created && st.CreatedAt.Equal(time.UnixMilli(created))
}

// elidedState rebuilds the state pristine let encode leave out.
func elidedState(creator string, created int64, status core.Status) *trust.State {
	st := trust.NewState(creator, fromMS(created))
	if status != "" {
		st.Status = status
	}
	return st
}

// encode returns the value stored at the record key for version ver.
func (s *stored) encode(ver int64) (string, error) {
	cp := *s
	cp.Creator, cp.Status = "", ""
	if pristine(s.State, s.Created) {
		cp.Creator, cp.State = s.State.Creator, nil
		if s.State.Status != core.StatusCandidate {
			cp.Status = s.State.Status
		}
	}
	if cp.Updated == cp.Created {
		cp.Updated = 0
	}
	cp.S = nil
	if cp.State != nil {
		cp.S = &stateJSON{cp.State}
	}
	b := strconv.AppendInt(make([]byte, 0, 32+len(s.Q)+len(s.A)), ver, 10)
	b = append(b, '\n', recordFields)
	b = appendText(b, s.Q)
	b = appendText(b, s.A)
	b = binary.AppendVarint(b, s.Created)
	b = binary.AppendUvarint(b, s.Doc)
	cp.Q, cp.A, cp.Created, cp.Doc = "", "", 0, 0
	rest, err := json.Marshal(&cp)
	if err != nil {
		return "", fmt.Errorf("encode record %s: %w", s.ID, err)
	}
	if string(rest) != "{}" {
		b = append(b, rest...)
	}
	return string(b), nil
}

// recordFields is the first byte of a record body that leads with its
// question, answer, created_at and document id (stored.encode): never
// the '{' that starts a body written as JSON alone.
const recordFields = 0x01

// appendText appends s as uvarint length and bytes, as the JSON of the
// earlier form would read it back: each byte that is not UTF-8 becomes
// U+FFFD (encoding/json's rule), so both forms keep the same text.
func appendText(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		var v strings.Builder
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				v.WriteRune(utf8.RuneError)
			} else {
				v.WriteString(s[i : i+size])
			}
			i += size
		}
		s = v.String()
	}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readText reads what appendText wrote at body[i:].
func readText(body string, i int) (s string, next int, ok bool) {
	n, i, ok := readUvarint(body, i)
	if !ok || n > uint64(len(body)-i) {
		return "", 0, false
	}
	return body[i : i+int(n)], i + int(n), true
}

// splitFields reads the leading fields of a record body that has them
// (recordFields) into s and returns the JSON of the others ("" for none).
func splitFields(body string, s *stored) (rest string, err error) {
	i := 1
	var ok bool
	if s.Q, i, ok = readText(body, i); ok {
		s.A, i, ok = readText(body, i)
	}
	if ok {
		var n int
		s.Created, n = binary.Varint([]byte(body[i:min(i+binary.MaxVarintLen64, len(body))]))
		ok = n > 0
		i += n
	}
	if ok {
		s.Doc, i, ok = readUvarint(body, i)
	}
	if !ok {
		return "", fmt.Errorf("record is corrupt: its leading fields are cut short")
	}
	return body[i:], nil
}

// decodeStored parses the record value of QA id of project.
func decodeStored(project, id, v string) (*stored, error) {
	head, body, ok := strings.Cut(v, "\n")
	ver, err := strconv.ParseInt(head, 10, 64)
	if !ok || err != nil {
		return nil, fmt.Errorf("record value has no version")
	}
	var s stored
	rest := body
	if body != "" && body[0] == recordFields {
		if rest, err = splitFields(body, &s); err != nil {
			return nil, err
		}
	}
	if rest != "" {
		if err := json.Unmarshal([]byte(rest), &s); err != nil {
			return nil, fmt.Errorf("record is corrupt: %w", err)
		}
	}
	if s.S != nil {
		s.State, s.S = s.S.st, nil
	} else {
		s.State = elidedState(s.Creator, s.Created, s.Status)
	}
	s.Creator, s.Status = "", ""
	if s.Updated == 0 {
		s.Updated = s.Created
	}
	s.ID = id
	if s.State.Sources == nil {
		s.State.Sources = map[string]*trust.SourceEvidence{}
	}
	s.project, s.ver = project, ver
	return &s, nil
}

// lastWritten keeps, per QA, the record value this process's last
// applied write of it stored and the record that value decodes to, so the
// next write of the QA that reads back the same bytes (one process
// validating a QA over and over) skips decodeStored's JSON decode. Only a
// value equal byte for byte is answered from it, and each answer is a copy
// its caller may change.
type lastWritten struct {
	mu sync.Mutex
	m  map[string]lastValue
}

type lastValue struct {
	v  string
	st *stored
}

const maxLastWritten = 1 << 12

func lastKey(project, id string) string { return project + "\x00" + id }

// put keeps v, the value st encodes, for st's QA; st is not to be
// changed after.
func (l *lastWritten) put(v string, c *stored) {
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	if len(c.Shared) == 0 {
		c.Shared = nil
	}
	if len(c.Metadata) == 0 {
		c.Metadata = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxLastWritten {
		l.m = map[string]lastValue{}
	}
	l.m[lastKey(c.project, c.ID)] = lastValue{v, c}
}

// decode is decodeStored(project, id, v), from the value kept when it is v.
func (l *lastWritten) decode(project, id, v string) (*stored, error) {
	l.mu.Lock()
	last, ok := l.m[lastKey(project, id)]
	l.mu.Unlock()
	if ok && last.v == v {
		return last.st.clone(), nil
	}
	return decodeStored(project, id, v)
}

// clone copies st deep enough for the ledger to change the copy: the
// evidence and the lists (the metadata's values are not changed by writes).
func (s *stored) clone() *stored {
	c := *s
	c.Tags, c.Shared, c.Metadata = slices.Clone(s.Tags), slices.Clone(s.Shared), maps.Clone(s.Metadata)
	if s.State != nil {
		st := *s.State
		st.Sources = make(map[string]*trust.SourceEvidence, len(s.State.Sources))
		for src, e := range s.State.Sources {
			ec := *e
			st.Sources[src] = &ec
		}
		c.State = &st
	}
	return &c
}

// A posting list is a 4-byte big-endian header holding the largest
// document id in the list, then its postings in ascending document order.
// A posting is the uvarint gap to the previous document id (the first: the
// id itself), then the question and answer term frequencies: one byte
// tfQ<<4|tfA when tfQ < 8 and tfA < 16, else the byte 0x80 and two
// uvarints. A typical posting is 2–3 bytes. The field lengths of a document
// are stored once, in its project's lens buckets (lensEntry), not in every
// posting. The commit script appends (header update + APPEND when the
// document is the largest, else an ordered merge) and removes (sequential
// scan, the next gap is re-encoded). docs/REDIS.md, memory.
const postingHeader = 4

// postingRest encodes a posting without its document gap.
func postingRest(tf retrieval.TF) string {
	if tf[0] < 8 && tf[1] < 16 {
		return string([]byte{byte(tf[0]<<4 | tf[1])})
	}
	b := []byte{0x80}
	b = binary.AppendUvarint(b, uint64(tf[0]))
	b = binary.AppendUvarint(b, uint64(tf[1]))
	return string(b)
}

// lensSize is the bytes of one document's field lengths in a lens bucket:
// question and answer length in terms, uint16 big-endian each (saturated).
const lensSize = 4

// lensBucket is how many documents share one lens string (4 KiB).
const lensBucket = 1024

// lensEntry encodes a document's field lengths.
func lensEntry(lens [retrieval.NumFields]uint32) string {
	var b [lensSize]byte
	binary.BigEndian.PutUint16(b[0:], uint16(min(lens[0], 65535)))
	binary.BigEndian.PutUint16(b[2:], uint16(min(lens[1], 65535)))
	return string(b[:])
}

// lensOf reads document doc's field lengths from its lens bucket (zero
// when the bucket is short).
func lensOf(bucket string, doc uint64) [retrieval.NumFields]uint32 {
	i := int(doc%lensBucket) * lensSize
	if i+lensSize > len(bucket) {
		return [retrieval.NumFields]uint32{}
	}
	return [retrieval.NumFields]uint32{uint32(bucket[i])<<8 | uint32(bucket[i+1]), uint32(bucket[i+2])<<8 | uint32(bucket[i+3])}
}

// uvarintGap encodes a document gap.
func uvarintGap(d uint64) string { return string(binary.AppendUvarint(nil, d)) }

// readUvarint decodes a uvarint of s at i; ok is false when s is cut short
// or the value overflows 32 bits.
func readUvarint(s string, i int) (v uint64, next int, ok bool) {
	var shift uint
	for ; i < len(s); i++ {
		c := s[i]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i + 1, v < 1<<32
		}
		if shift += 7; shift > 28 {
			return 0, i, false
		}
	}
	return 0, i, false
}

// docValue is the value of a record's field in its docs bucket: its qa_id
// and created_at (unix ms, base 36), which List, Stats and Expire order by.
func docValue(id string, created int64) string {
	return id + " " + strconv.FormatInt(created, 36)
}

// docEntry parses a docValue.
func docEntry(v string) (id string, created int64) {
	id, c, _ := strings.Cut(v, " ")
	created, _ = strconv.ParseInt(c, 36, 64)
	return id, created
}

// hashField is the content-hash index field: the first 16 hex digits (the
// full hash is compared on the record).
func hashField(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// reputation is a trust.Reputation read from a project's book.
type reputation struct {
	src map[string]trust.SourceRep
	cre map[string]trust.CreatorRep
}

func (r reputation) Source(id string) trust.SourceRep   { return r.src[id] }
func (r reputation) Creator(id string) trust.CreatorRep { return r.cre[id] }
