package embedded

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// QA entries (schema 2), in the qa bucket under the doc id: the rank
// entry (what a search needs to rank a candidate, see encodeEntry), then
// the trust state, then the record: one format byte and
//
//	'j': the JSON of the core.Record;
//	'z': that JSON compressed with DEFLATE (RFC 1951) and recordDict as
//	     preset dictionary.
//
// The JSON keeps the record's format free to evolve with core.Record; the
// dictionary (the field names and typical values of a record) lets DEFLATE
// encode them as back-references, which brings a typical record to about a
// third of its JSON. recordDict is part of the file format: changing it
// needs a new format byte. Doc ids only grow, so the entries are appended
// and their pages stay full; the ids bucket maps a qa_id to its doc id.
const (
	recJSON  = 'j'
	recFlate = 'z'
)

const recordDict = `{"qa_id":"qa_","project_id":"global","question":"How do I fix the error when running the build?","answer":"Use the go test ./... command with the -race flag; the src/main.go file and config.yaml path should ` +
	`be updated, then run make and check the output.","summary":"","tags":[],"metadata":null,"source":"","author":"","status":"candidate","level":"L0","validation_level":0,"trust_score":0.2,"confidence":0,"freshness":1,` +
	`"alpha":1,"beta":1,"usage_count":0,"use_count":0,"success_count":0,"failure_count":0,"strong_signal_count":0,"consecutive_fail":0,"stats":{"strong_pass":0,"strong_fail":0,"medium_pass":0,"medium_fail":0,"weak_pass":0,` +
	`"weak_fail":0},"last_validated_at":"2026-01-01T00:00:00.000000000Z","last_used_at":"2026-01-01T00:00:00.000000000Z","created_at":"2026-01-01T00:00:00.000000000Z","updated_at":"2026-01-01T00:00:00.000000000Z",` +
	`"content_hash":"0123456789abcdef","shared_projects":[]}`

var (
	flateWriters = sync.Pool{New: func() any {
		w, err := flate.NewWriterDict(io.Discard, flate.DefaultCompression, []byte(recordDict))
		if err != nil {
			panic(err) // only for an invalid level
		}
		return w
	}}
	flateReaders = sync.Pool{New: func() any {
		return flate.NewReaderDict(bytes.NewReader(nil), []byte(recordDict))
	}}
)

// appendRecord appends the record part of a QA entry.
func appendRecord(b []byte, rec *core.Record) ([]byte, error) {
	js, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(b)
	buf.Grow(len(js)/2 + 16)
	buf.WriteByte(recFlate)
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(buf)
	_, err = w.Write(js)
	if err == nil {
		err = w.Close()
	}
	flateWriters.Put(w)
	if err != nil || buf.Len()-len(b) >= len(js)+1 {
		b = append(b[:len(b):len(b)], recJSON)
		return append(b, js...), nil
	}
	return buf.Bytes(), nil
}

// decodeRecord decodes the record part of a QA entry.
func decodeRecord(v []byte) (core.Record, error) {
	var rec core.Record
	if len(v) == 0 {
		return rec, errors.New("no record")
	}
	js := v[1:]
	switch v[0] {
	case recJSON:
	case recFlate:
		r := flateReaders.Get().(io.ReadCloser)
		defer flateReaders.Put(r)
		if err := r.(flate.Resetter).Reset(bytes.NewReader(v[1:]), []byte(recordDict)); err != nil {
			return rec, err
		}
		var buf bytes.Buffer
		buf.Grow(3 * len(v))
		if _, err := buf.ReadFrom(r); err != nil {
			return rec, err
		}
		js = buf.Bytes()
	default:
		return rec, fmt.Errorf("unknown record format %q", v[0])
	}
	return rec, json.Unmarshal(js, &rec)
}

// encodeEntry is the QA entry of st: the rank entry (uvarint-length-
// prefixed strings qa_id and project, a uvarint count and the shared
// projects, the status, the created, last validated and updated times
// (see appendTime)), the JSON of the trust.State (trust's format) prefixed
// by its length, then the record (see appendRecord).
func encodeEntry(st *stored) ([]byte, error) {
	state, err := json.Marshal(st.State)
	if err != nil {
		return nil, err
	}
	r := &st.Rec
	n := 4*binary.MaxVarintLen64 + len(r.QAID) + len(r.ProjectID) + len(r.Status) + 3*(binary.MaxVarintLen64+binary.MaxVarintLen32) + len(state) + len(r.Question) + len(r.Answer) + 256
	for _, p := range r.SharedProjects {
		n += len(p) + binary.MaxVarintLen16
	}
	b := make([]byte, 0, n)
	b = appendString(b, r.QAID)
	b = appendString(b, r.ProjectID)
	b = binary.AppendUvarint(b, uint64(len(r.SharedProjects)))
	for _, p := range r.SharedProjects {
		b = appendString(b, p)
	}
	b = appendString(b, string(r.Status))
	b = appendTime(b, r.CreatedAt)
	b = appendTime(b, r.LastValidatedAt)
	b = appendTime(b, r.UpdatedAt)
	b = binary.AppendUvarint(b, uint64(len(state)))
	b = append(b, state...)
	return appendRecord(b, r)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendTime encodes t as uvarint 0 for the zero time, else as uvarint
// nanoseconds+1 then varint Unix seconds (decoded in UTC).
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(t.Nanosecond())+1)
	return binary.AppendVarint(b, t.Unix())
}

// byteReader reads the fields of a binary value; the first error sticks.
type byteReader struct {
	v   []byte
	err bool
}

func (r *byteReader) uvarint() uint64 {
	x, n := binary.Uvarint(r.v)
	if n <= 0 {
		r.err, r.v = true, nil
		return 0
	}
	r.v = r.v[n:]
	return x
}

// bytes reads a uvarint length and that many bytes (not copied).
func (r *byteReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.v)) {
		r.err, r.v = true, nil
		return nil
	}
	b := r.v[:n]
	r.v = r.v[n:]
	return b
}

func (r *byteReader) string() string { return string(r.bytes()) }

func (r *byteReader) time() time.Time {
	ns := r.uvarint()
	if ns == 0 || r.err {
		return time.Time{}
	}
	sec, n := binary.Varint(r.v)
	if n <= 0 || ns > 1e9 {
		r.err, r.v = true, nil
		return time.Time{}
	}
	r.v = r.v[n:]
	return time.Unix(sec, int64(ns-1)).UTC()
}

// decodeRank decodes the rank entry and trust state at the start of a QA
// entry and returns the rest (the record). The entry's record holds the
// rank entry's fields only: what a search needs to rank a lexical
// candidate (visibility, status, timestamps), decoded without the record
// that follows, so a search decodes ~50 small values and only `limit`
// full records.
func decodeRank(v []byte) (ledger.Entry, []byte, error) {
	r := byteReader{v: v}
	var e ledger.Entry
	rec := &e.Rec
	rec.QAID = r.string()
	rec.ProjectID = r.string()
	n := r.uvarint()
	if n > uint64(len(r.v)) {
		return e, nil, errors.New("bad shared project count")
	}
	rec.SharedProjects = make([]string, 0, n)
	for range n {
		rec.SharedProjects = append(rec.SharedProjects, r.string())
	}
	rec.Status = core.Status(r.string())
	rec.CreatedAt = r.time()
	rec.LastValidatedAt = r.time()
	rec.UpdatedAt = r.time()
	state := r.uvarint()
	if r.err || state > uint64(len(r.v)) {
		return e, nil, errors.New("truncated")
	}
	if js := r.v[:state]; len(js) > 0 && string(js) != "null" {
		e.State = new(trust.State)
		if err := json.Unmarshal(js, e.State); err != nil {
			return e, nil, err
		}
	}
	e.State = stateOf(e.State, *rec)
	return e, r.v[state:], nil
}

// stateOf is the trust state st of a QA stored with rec: a QA stored
// without one (null) starts from a fresh state at its creation, with its
// status.
func stateOf(st *trust.State, rec core.Record) *trust.State {
	if st == nil {
		st = trust.NewState("", rec.CreatedAt)
		st.Status = rec.Status
	}
	return st
}

// getByDoc reads the QA of doc, nil if there is none; with rankOnly, its
// record holds the rank entry's fields only (decodeRank).
func getByDoc(tx *bolt.Tx, doc uint64, rankOnly bool) (*stored, error) {
	v := tx.Bucket(bQA).Get(docKey(doc))
	if v == nil {
		return nil, nil
	}
	return decodeStored(doc, v, rankOnly)
}

// decodeStored decodes the QA entry v stored under doc (see getByDoc).
func decodeStored(doc uint64, v []byte, rankOnly bool) (*stored, error) {
	e, rest, err := decodeRank(v)
	if err != nil {
		return nil, fmt.Errorf("entry of doc %d is corrupt: %w", doc, err)
	}
	if !rankOnly {
		rec, err := decodeRecord(rest)
		if err != nil {
			return nil, fmt.Errorf("record %s is corrupt: %w", e.Rec.QAID, err)
		}
		e.Rec = rec
	}
	return &stored{Entry: e, Doc: doc}, nil
}

// getStored reads the QA qaID, nil if there is none.
func getStored(tx *bolt.Tx, qaID string) (*stored, error) {
	v := tx.Bucket(bIDs).Get([]byte(qaID))
	if v == nil {
		return nil, nil
	}
	doc, n := binary.Uvarint(v)
	if n <= 0 {
		return nil, fmt.Errorf("doc id of %s is corrupt", qaID)
	}
	st, err := getByDoc(tx, doc, false)
	if err != nil || st == nil || st.Rec.QAID != qaID {
		return nil, err
	}
	return st, nil
}

// putStored writes st's QA entry, and its id when new, and moves its
// share of the project statistics from the entry it replaces (agg.go).
func putStored(tx *bolt.Tx, st *stored) error {
	v, err := encodeEntry(st)
	if err != nil {
		return fmt.Errorf("encode record %s: %w", st.Rec.QAID, err)
	}
	if err := statsReplace(tx, st.Doc); err != nil {
		return fmt.Errorf("stats of %s: %w", st.Rec.QAID, err)
	}
	if err := tx.Bucket(bQA).Put(docKey(st.Doc), v); err != nil {
		return err
	}
	if err := statsAdd(tx, st.Doc, st.Rec, 1); err != nil {
		return fmt.Errorf("stats of %s: %w", st.Rec.QAID, err)
	}
	ids := tx.Bucket(bIDs)
	id := binary.AppendUvarint(nil, st.Doc)
	if bytes.Equal(ids.Get([]byte(st.Rec.QAID)), id) {
		return nil
	}
	return ids.Put([]byte(st.Rec.QAID), id)
}
