package postgres

import (
	"errors"
	"strconv"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// FuzzParseCursor: a cursor parses only as a log id in canonical decimal,
// which prints back unchanged.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0", "1", "42", "-1", "01", "+1", " 1", "1e3", "d.1.0", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseCursor(cas.Cursor(s))
		if err != nil {
			if !errors.Is(err, cas.ErrInvalidCursor) {
				t.Fatalf("parseCursor(%q): %v, not ErrInvalidCursor", s, err)
			}
			return
		}
		if s == "" {
			if n != 0 {
				t.Fatalf("parseCursor(\"\") = %d", n)
			}
			return
		}
		if n < 0 || strconv.FormatInt(n, 10) != s {
			t.Fatalf("parseCursor(%q) = %d", s, n)
		}
	})
}
