package cas_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

func TestHashVectors(t *testing.T) {
	tests := []struct {
		name string
		h    cas.Hash
		want string
	}{
		{"empty", cas.Sum([]byte("")), "EYHPV6X8XHTCS"},
		{"a", cas.Sum([]byte("a")), "D4KP4Y6MRRVJV"},
		{"abc", cas.Sum([]byte("abc")), "49F1CYPPQE2CS"},
		{"hello", cas.Sum([]byte("hello")), "2DHW2FP49YVD3"},
		{"max", cas.Hash(^uint64(0)), "FZZZZZZZZZZZZ"},
		{"deadbeef", cas.Hash(0xdeadbeefcafebabe), "DXBDYXZ5FXENY"},
		{"zero", 0, "0000000000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.String(); got != tc.want {
				t.Errorf("%#x.String() = %q, want %q", uint64(tc.h), got, tc.want)
			}
			back, err := cas.ParseHash(tc.want)
			if err != nil || back != tc.h {
				t.Errorf("ParseHash(%q) = %v, %v; want %v", tc.want, back, err, tc.h)
			}
			canon, err := cas.ParseCanonicalHash(tc.want)
			if err != nil || canon != tc.h {
				t.Errorf("ParseCanonicalHash(%q) = %v, %v; want %v", tc.want, canon, err, tc.h)
			}
		})
	}
	if got := uint64(cas.Sum(nil)); got != 0xef46db3751d8e999 {
		t.Errorf("Sum(\"\") = %#x, want 0xef46db3751d8e999", got)
	}
}

func TestParseHashTolerant(t *testing.T) {
	tests := []struct{ in, want string }{
		{"eyhpv6x8xhtcs", "EYHPV6X8XHTCS"},
		{"OOOOOOOOOOOOO", "0000000000000"},
		{"ooooooooooooo", "0000000000000"},
		{"IiLl000000000", "1111000000000"},
		{"d4kp4y6mrrvjv", "D4KP4Y6MRRVJV"},
	}
	for _, tc := range tests {
		h, err := cas.ParseHash(tc.in)
		if err != nil || h.String() != tc.want {
			t.Errorf("ParseHash(%q) = %v, %v; want %s", tc.in, h, err, tc.want)
		}
		if _, err := cas.ParseCanonicalHash(tc.in); err == nil {
			t.Errorf("ParseCanonicalHash(%q) accepted a non-canonical spelling", tc.in)
		}
	}
}

func TestParseHashRejects(t *testing.T) {
	tests := []struct{ name, in, wantMsg string }{
		{"empty", "", "has 0 characters"},
		{"short", "EYHPV6X8XHTC", "has 12 characters"},
		{"long", "EYHPV6X8XHTCSS", "has 14 characters"},
		{"U", "EYHPV6X8XHTCU", `invalid character 'U'`},
		{"first above F", "GZZZZZZZZZZZZ", "above F"},
		{"dotdot", "../x000000000", `invalid character '.'`},
		{"slash", "0000000000/00", `invalid character '/'`},
		{"NUL", "000000000000\x00", `invalid character '\x00'`},
		{"space", " 000000000000", `invalid character ' '`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cas.ParseHash(tc.in)
			if !errors.Is(err, cas.ErrInvalidHash) {
				t.Fatalf("ParseHash(%q) error = %v, want ErrInvalidHash", tc.in, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), "invalid hash") {
				t.Errorf("ParseHash(%q) error = %q, want it to contain %q", tc.in, err, tc.wantMsg)
			}
		})
	}
}

func TestHashText(t *testing.T) {
	h := cas.Sum([]byte("hello"))
	b, _ := h.MarshalText()
	var back cas.Hash
	if err := back.UnmarshalText(b); err != nil || back != h {
		t.Fatalf("UnmarshalText(%s) = %v, %v", b, back, err)
	}
	if err := back.UnmarshalText([]byte("nope")); !errors.Is(err, cas.ErrInvalidHash) {
		t.Errorf("UnmarshalText(nope) error = %v", err)
	}
}

func FuzzParseHash(f *testing.F) {
	for _, s := range []string{"", "EYHPV6X8XHTCS", "../x000000000", "FZZZZZZZZZZZZ", "GZZZZZZZZZZZZ", "0000000000/00", "ooooooooooooo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := cas.ParseHash(s)
		if err != nil {
			return
		}
		txt := h.String()
		if len(txt) != cas.HashLen || !cas.IsCanonicalHash(txt) {
			t.Fatalf("String() = %q is not canonical", txt)
		}
		if back, err := cas.ParseHash(txt); err != nil || back != h {
			t.Fatalf("round trip %q -> %v -> %q -> %v, %v", s, h, txt, back, err)
		}
		if !strings.EqualFold(s, txt) && !strings.ContainsAny(s, "OoIiLl") {
			t.Fatalf("ParseHash(%q) accepted input that is not its text %q", s, txt)
		}
		// Nothing a parse accepts can escape a directory.
		p := filepath.Join("objects", txt[11:], txt)
		if filepath.Dir(filepath.Dir(p)) != "objects" || strings.Contains(txt, "..") {
			t.Fatalf("hash %q forms path %q", txt, p)
		}
	})
}
