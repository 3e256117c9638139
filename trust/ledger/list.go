package ledger

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/memex-dev/memex/core"
)

// The listing of a project's own QAs (core.Lister: the admin list and the
// export) lives here once: the request's checks and page size, the
// cursor and its errors, the filter, where a page ends and the next
// starts, and the evidence of a full export. A store supplies only a
// ListWalk: its records in list order after a position.

// DefaultListLimit is the page size of a list request that names none.
const DefaultListLimit = 100

// ListPos is a QA's place in its project's list order, newest first:
// Created descending, then ID descending. Created is in the unit the
// store orders by (nanoseconds on bbolt, milliseconds on Redis).
type ListPos struct {
	Created int64
	ID      string
}

// CursorForm is how a store writes a ListPos into a cursor. Each store
// keeps its own form, so a cursor it has handed out keeps reading.
type CursorForm int

const (
	// CursorBinary is the 8-byte big-endian Created then the id: the
	// bbolt list key after its project.
	CursorBinary CursorForm = iota
	// CursorText is "<Created>:<id>", Created in decimal (Redis).
	CursorText
)

// Encode is the cursor of the page that starts after p.
func (f CursorForm) Encode(p ListPos) string {
	var b []byte
	if f == CursorBinary {
		b = binary.BigEndian.AppendUint64(nil, uint64(p.Created))
	} else {
		b = strconv.AppendInt(nil, p.Created, 10)
		b = append(b, ':')
	}
	return base64.RawURLEncoding.EncodeToString(append(b, p.ID...))
}

// Decode reads a cursor Encode wrote; the error of any other string is
// core.ErrInvalid naming the cursor.
func (f CursorForm) Decode(c string) (ListPos, error) {
	malformed := core.Invalid("cursor", "malformed cursor")
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return ListPos{}, malformed
	}
	if f == CursorBinary {
		if len(b) < 8 {
			return ListPos{}, malformed
		}
		return ListPos{Created: int64(binary.BigEndian.Uint64(b)), ID: string(b[8:])}, nil
	}
	sc, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(sc, 10, 64)
	if !ok || err != nil || id == "" {
		return ListPos{}, malformed
	}
	return ListPos{Created: n, ID: id}, nil
}

// ListWalk calls yield with the project's own QAs in list order, each
// refreshed at the store's now, starting after the position after (nil:
// from the newest), until yield returns false; it returns the first
// error it meets.
type ListWalk func(after *ListPos, yield func(ListPos, Entry) bool) error

// ListQuery is a checked list request.
type ListQuery struct {
	req    core.ListRequest
	form   CursorForm
	limit  int
	after  *ListPos
	listed func(core.Record) bool
}

// NewListQuery checks req and reads its cursor in the store's form; the
// error names the field.
func NewListQuery(req core.ListRequest, form CursorForm) (*ListQuery, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	q := &ListQuery{req: req, form: form, limit: req.Limit, listed: ListFilter(req)}
	if q.limit == 0 {
		q.limit = DefaultListLimit
	}
	if req.Cursor != "" {
		after, err := form.Decode(req.Cursor)
		if err != nil {
			return nil, err
		}
		q.after = &after
	}
	return q, nil
}

// Page reads the query's page with walk: the first limit QAs the filter
// lets through, with their evidence when the request asks for it (a full
// export). The next cursor is the page's last QA, set only when another
// QA the filter lets through follows it.
func (q *ListQuery) Page(ctx context.Context, walk ListWalk) (core.ListPage, error) {
	page := core.ListPage{Items: []core.Record{}}
	var last ListPos
	var err error
	werr := walk(q.after, func(pos ListPos, e Entry) bool {
		if err = ctx.Err(); err != nil {
			return false
		}
		if !q.listed(e.Rec) {
			return true
		}
		if len(page.Items) == q.limit {
			page.NextCursor = q.form.Encode(last)
			return false
		}
		r := e.Rec
		if q.req.Evidence {
			if r.Evidence, err = Evidence(e.State); err != nil {
				return false
			}
		}
		page.Items = append(page.Items, r)
		last = pos
		return true
	})
	if werr != nil {
		return core.ListPage{}, werr
	}
	if err != nil {
		return core.ListPage{}, err
	}
	return page, nil
}
