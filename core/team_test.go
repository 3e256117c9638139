package core

import "testing"

func TestReceiptIDs(t *testing.T) {
	for _, tc := range []struct {
		id     string
		search string
		n      int
	}{
		{"rcpt_ab.1", "rcpt_ab", 1},
		{"rcpt_ab.12", "rcpt_ab", 12},
		{"rcpt_ab", "rcpt_ab", 0},
		{"a.b.3", "a.b", 3},
		{"x.0", "x.0", 0},
		{"x.01", "x.01", 0},
		{"x.", "x.", 0},
		{".5", ".5", 0},
		{"x.1a", "x.1a", 0},
		{"x.12345678", "x.12345678", 0},
	} {
		search, n := SplitReceiptID(tc.id)
		if search != tc.search || n != tc.n {
			t.Errorf("SplitReceiptID(%q) = %q, %d; want %q, %d", tc.id, search, n, tc.search, tc.n)
		}
		if n > 0 && ItemReceiptID(search, n) != tc.id {
			t.Errorf("ItemReceiptID(%q, %d) = %q, want %q", search, n, ItemReceiptID(search, n), tc.id)
		}
	}
}
