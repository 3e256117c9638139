package ledger

import (
	"errors"
	"testing"

	"github.com/memex-dev/memex/core"
)

// TestCursorForms pins each store's cursor as it has always handed it out
// (the strings below are what the stores wrote before their listing
// shared this code): it decodes to the same position and encodes back to
// the same string.
func TestCursorForms(t *testing.T) {
	for _, tc := range []struct {
		form   CursorForm
		cursor string
		pos    ListPos
	}{
		// bbolt: 8-byte big-endian created_at ns, then the qa_id.
		{CursorBinary, "GBZofseyzRVxYS03ZjNh", ListPos{Created: 1735689600123456789, ID: "qa-7f3a"}},
		// Redis: "<created_at ms>:<qa_id>".
		{CursorText, "MTczNTY4OTYwMDEyMzpxYS03ZjNh", ListPos{Created: 1735689600123, ID: "qa-7f3a"}},
	} {
		got, err := tc.form.Decode(tc.cursor)
		if err != nil || got != tc.pos {
			t.Errorf("form %d: Decode(%q) = %+v, %v; want %+v", tc.form, tc.cursor, got, err, tc.pos)
		}
		if c := tc.form.Encode(tc.pos); c != tc.cursor {
			t.Errorf("form %d: Encode(%+v) = %q, want %q", tc.form, tc.pos, c, tc.cursor)
		}
	}
	for _, tc := range []struct {
		form   CursorForm
		cursor string
	}{
		{CursorBinary, "not a cursor!"},
		{CursorBinary, "eHk"}, // "xy": shorter than a created_at
		{CursorText, "not a cursor!"},
		{CursorText, "eHk"},     // "xy": no separator
		{CursorText, "MTIzOg"},  // "123:": no id
		{CursorText, "YWI6cWE"}, // "ab:qa": no number before the separator
	} {
		if _, err := tc.form.Decode(tc.cursor); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("form %d: Decode(%q): err = %v, want ErrInvalid", tc.form, tc.cursor, err)
		}
	}
}
