package secret_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/uncaged/uwf/internal/secret"
)

func TestMaskerString(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"none known", nil, "password hunter22x", "password hunter22x"},
		{"plain", []string{"hunter22x"}, "pw=hunter22x;", "pw=********;"},
		{"every occurrence", []string{"s3cretVal"}, "s3cretVal and s3cretVal", "******** and ********"},
		{"exactly MinLen", []string{"12345678"}, "id 12345678", "id ********"},
		{"shorter than MinLen is kept", []string{"1234567"}, "id 1234567", "id 1234567"},
		{"empty secret ignored", []string{""}, "text", "text"},
		{"longer secret first", []string{"abcdefgh", "abcdefgh-ijkl"}, "x abcdefgh-ijkl y abcdefgh", "x ******** y ********"},
		{"JSON escaped", []string{`pa"ss\word`}, `{"v":"pa\"ss\\word"}`, `{"v":"********"}`},
		{"Go quoted", []string{"tab\there!"}, `msg="tab\there!"`, `msg="********"`},
		{"percent-encoded in a URL", []string{"p@ss:w/rd"}, "postgres://u:p%40ss%3Aw%2Frd@h/db", "postgres://u:********@h/db"},
		{"query escaped", []string{"a b&c=d!"}, "x?password=a+b%26c%3Dd%21", "x?password=********"},
		{"multi-line secret", []string{"line one\nline two"}, "<line one\nline two>", "<********>"},
		{"unicode", []string{"pässwörter"}, "key: pässwörter", "key: ********"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := secret.New(tc.secrets...)
			if got := m.String(tc.in); got != tc.want {
				t.Errorf("String(%q) with %q = %q, want %q", tc.in, tc.secrets, got, tc.want)
			}
		})
	}
}

func TestMaskerNilAndZero(t *testing.T) {
	var nilM *secret.Masker
	if got := nilM.String("abcdefghij"); got != "abcdefghij" {
		t.Errorf("nil Masker: String = %q", got)
	}
	var zero secret.Masker
	if got := zero.String("abcdefghij"); got != "abcdefghij" {
		t.Errorf("zero Masker: String = %q", got)
	}
	zero.Add("abcdefghij")
	if got := zero.String("abcdefghij"); got != secret.Mask {
		t.Errorf("zero Masker after Add: String = %q", got)
	}
}

func TestMaskerError(t *testing.T) {
	m := secret.New("topsecret1")
	base := fmt.Errorf("connect with topsecret1: %w", fs.ErrNotExist)
	err := m.Error(base)
	if strings.Contains(err.Error(), "topsecret1") || !strings.Contains(err.Error(), secret.Mask) {
		t.Errorf("Error() = %q, want the secret masked", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("masked error does not unwrap to its cause")
	}
	plain := errors.New("nothing to hide")
	if m.Error(plain) != plain {
		t.Errorf("an error without secrets should be returned as it is")
	}
	if m.Error(nil) != nil {
		t.Errorf("Error(nil) != nil")
	}
}

func TestMaskerWriterSlog(t *testing.T) {
	m := secret.New(`se"cret pass`)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(m.Writer(&buf), nil))
	log.Info("connected", "url", `postgres://u:se"cret pass@h/db`, "raw", `se"cret pass`)
	if strings.Contains(buf.String(), "cret pass") || !strings.Contains(buf.String(), secret.Mask) {
		t.Errorf("log = %q, want the secret masked in its quoted form", buf.String())
	}
	buf.Reset()
	jlog := slog.New(slog.NewJSONHandler(m.Writer(&buf), nil))
	jlog.Info("x", "v", `se"cret pass`)
	if strings.Contains(buf.String(), "cret pass") {
		t.Errorf("JSON log = %q, want the secret masked", buf.String())
	}
}

func TestMaskerConcurrentAdd(t *testing.T) {
	m := secret.New()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() { defer wg.Done(); m.Add(fmt.Sprintf("secret-%04d", i)) }()
		go func() { defer wg.Done(); _ = m.String("secret-0001 secret-0002") }()
	}
	wg.Wait()
	if got := m.String("secret-0003"); got != secret.Mask {
		t.Errorf("String = %q after concurrent Adds", got)
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://uwf:hunter2hunter@127.0.0.1:5432/uwf?sslmode=disable", "postgres://uwf:xxxxx@127.0.0.1:5432/uwf?sslmode=disable"},
		{"postgres://uwf@127.0.0.1/uwf", "postgres://uwf@127.0.0.1/uwf"},
		{"postgresql://h/db?password=hunter2hunter&sslmode=disable", "postgresql://h/db?password=xxxxx&sslmode=disable"},
		{"postgres://h/db?sslpassword=abc", "postgres://h/db?sslpassword=xxxxx"},
		{"/home/me/store", "/home/me/store"},
		{"file:///tmp/s?durability=none", "file:///tmp/s?durability=none"},
		{"postgres://u:pa ss@h:bad port/db", "<unprintable URL>"},
		{"/tmp/my store", "/tmp/my store"},
		{"//u:pw@h/db", "<unprintable URL>"},
		{"postgres://u:p%40ss@h/db?sslmode=disable&password=zz&application_name=a%20b", "postgres://u:xxxxx@h/db?sslmode=disable&password=xxxxx&application_name=a%20b"},
		{"postgres://u@h/db?x=1#frag", "postgres://u@h/db?x=1#frag"},
		{"postgres://us%20er:pw@h/db", "postgres://us%20er:xxxxx@h/db"},
	} {
		if got := secret.RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURLPasswords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"postgres://u:p%40ss@h/db", []string{"p%40ss", "p@ss"}},
		{"postgres://u:p%40ss:w%2frd@h/db", []string{"p%40ss:w%2frd", "p@ss:w/rd"}},
		{"postgres://u@h/db?password=qq&sslpassword=rr", []string{"qq", "rr"}},
		{"/some/dir", nil},
		{"postgres://u:@h/db", nil},
	} {
		got := secret.URLPasswords(tc.in)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("URLPasswords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMaskerTrimCut: text cut in the middle of a secret loses the part of
// the secret it kept, and only that, so masking leaves no part of it.
func TestMaskerTrimCut(t *testing.T) {
	const sec = "hunter22-abcdef"
	for _, tc := range []struct {
		name       string
		secrets    []string
		in         string
		end, start string // TrimCutEnd's and TrimCutStart's text
		nEnd       int    // bytes TrimCutEnd drops
		nStart     int    // bytes TrimCutStart drops
	}{
		{"no secrets", nil, "abc hunter", "abc hunter", "abc hunter", 0, 0},
		{"nothing at the edges", []string{sec}, "log line\nmore", "log line\nmore", "log line\nmore", 0, 0},
		{"start of a secret at the end", []string{sec}, "token=hunter22-a", "token=", "token=hunter22-a", 10, 0},
		{"end of a secret at the start", []string{sec}, "2-abcdef rest", "2-abcdef rest", " rest", 0, 8},
		{"one byte of a secret", []string{sec}, "xx h", "xx ", "xx h", 1, 0},
		{"a whole secret is not cut", []string{sec}, "x " + sec, "x " + sec, "x " + sec, 0, 0},
		{"the longest fragment", []string{"abcabcabcX"}, "zz abcabcabc", "zz ", "zz abcabcabc", 9, 0},
		{"an escaped form", []string{`pa"ss\word`}, `{"v":"pa\"ss`, `{"v":"`, `{"v":"pa\"ss`, 6, 0},
		{"all of the text", []string{sec}, "hunte", "", "hunte", 5, 0},
		{"the middle of a secret is not its end", []string{sec}, "22-ab", "22-ab", "22-ab", 0, 0},
		{"empty text", []string{sec}, "", "", "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := secret.New(tc.secrets...)
			if got, n := m.TrimCutEnd(tc.in); got != tc.end || n != tc.nEnd {
				t.Errorf("TrimCutEnd(%q) = %q, %d; want %q, %d", tc.in, got, n, tc.end, tc.nEnd)
			}
			if got, n := m.TrimCutStart(tc.in); got != tc.start || n != tc.nStart {
				t.Errorf("TrimCutStart(%q) = %q, %d; want %q, %d", tc.in, got, n, tc.start, tc.nStart)
			}
		})
	}
	var nilM *secret.Masker
	if got, n := nilM.TrimCutEnd("abc"); got != "abc" || n != 0 {
		t.Errorf("nil Masker: TrimCutEnd = %q, %d", got, n)
	}
}

// FuzzMaskerTrimCut: text holding a secret, cut anywhere inside it, loses
// at the cut at least the part of the secret it kept, and less than the
// secret's length and an escape.
func FuzzMaskerTrimCut(f *testing.F) {
	f.Add("hunter22-abcdef", "before ", " after", 10)
	f.Add("aaaaaaaa", "aaa", "aaa", 5)
	f.Add("ab\ncd\"ef", "{\"x\":", "}", -3)
	f.Fuzz(func(t *testing.T, sec, before, after string, at int) {
		if len(sec) < secret.MinLen {
			return
		}
		m := secret.New(sec)
		text := before + sec + after
		in := 1 + abs(at)%(len(sec)-1) // bytes of the secret before the cut
		at = len(before) + in
		// Text that may be the rest of an escape (an escape's last hex
		// digits) may be dropped with it: up to 11 bytes more.
		if _, n := m.TrimCutEnd(text[:at]); n < in || n >= len(sec)+11 {
			t.Errorf("cut %q at %d: TrimCutEnd dropped %d bytes, want %d to %d", text, at, n, in, len(sec)+10)
		}
		if _, n := m.TrimCutStart(text[at:]); n < len(sec)-in || n >= len(sec)+11 {
			t.Errorf("cut %q at %d: TrimCutStart dropped %d bytes, want %d to %d", text, at, n, len(sec)-in, len(sec)+10)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "github_token": true, "DB_PASSWORD": true, "MY_SECRET": true,
		"GITHUB_TOKEN_PATH": true, "apiKey": true, "SECRETS_DIR": true, "PasswordHint": true, "keys": true,
		"HOME": false, "AGENT_LOG": false, "PATH": false, "passwd": false, "TOK": false, "": false,
	} {
		if got := secret.IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzMasker(f *testing.F) {
	f.Add("abcdefgh", "xx abcdefgh yy")
	f.Add(`q"\x`+"\n1234", `"q\"\\x\n1234"`)
	f.Fuzz(func(t *testing.T, sec, text string) {
		m := secret.New(sec)
		got := m.String(text)
		if len(sec) >= secret.MinLen && !strings.Contains(secret.Mask, sec) && strings.Contains(got, sec) {
			// A secret may reappear only by being assembled from the
			// mask and the text around it.
			if !strings.Contains(text, secret.Mask) && !strings.ContainsRune(sec, '*') {
				t.Errorf("String(%q) with secret %q = %q: secret left", text, sec, got)
			}
		}
	})
}

// FuzzRedactURL: a password that occurs once in a URL is not in its
// redacted form.
func FuzzRedactURL(f *testing.F) {
	f.Add("postgres://uwf:hunter2hunter@127.0.0.1:5432/uwf?sslmode=disable")
	f.Add("postgresql://h/db?password=abcdef&sslpassword=ghijkl")
	f.Add("postgres://u:p%40ss:w%2frd@h/db#x")
	f.Fuzz(func(t *testing.T, raw string) {
		got := secret.RedactURL(raw)
		for _, p := range secret.URLPasswords(raw) {
			if len(p) >= 3 && strings.Count(raw, p) == 1 && !strings.Contains("xxxxx<unprintable URL>", p) && strings.Contains(got, p) {
				t.Errorf("RedactURL(%q) = %q holds the password %q", raw, got, p)
			}
		}
	})
}
