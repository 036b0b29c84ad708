package secret

import (
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Mask replaces each secret in masked text.
const Mask = "********"

// MinLen is the length in bytes below which a value is not masked.
const MinLen = 8

// Masker replaces known secrets with [Mask]. The zero Masker masks
// nothing; a nil *Masker may be used and masks nothing. A Masker is safe
// for concurrent use: secrets may be added while it masks.
type Masker struct {
	mu     sync.RWMutex
	values []string // the forms to replace, longest first
	esc    *escaped // values for masking escaped text, never changed (replaced on Add)
	r      *strings.Replacer
}

// New returns a Masker for values (see [Masker.Add]).
func New(values ...string) *Masker {
	m := &Masker{}
	m.Add(values...)
	return m
}

// Add adds secrets to mask. Values shorter than [MinLen] are ignored. Each
// secret is masked as written and in the escaped forms its text takes in
// JSON, in Go-quoted strings (slog's text output) and in URLs, and
// wherever text decodes to one of those once its JSON (or Go) escapes are
// undone, up to three levels deep: `\u0073k-...`, `sk\/...` (see
// [Masker.String]).
func (m *Masker) Add(values ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		for _, f := range forms(v) {
			if !slices.Contains(m.values, f) {
				m.values = append(m.values, f)
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	// Longest first: where one secret contains another, the whole of the
	// longer one is masked (strings.Replacer tries its pairs in order).
	slices.SortStableFunc(m.values, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(m.values))
	for _, v := range m.values {
		pairs = append(pairs, v, Mask)
	}
	m.r = strings.NewReplacer(pairs...)
	m.esc = newEscaped(m.values)
}

// forms returns v and the escaped forms it takes in uwf's outputs.
func forms(v string) []string {
	out := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if b, err := json.Marshal(v); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	q := strconv.Quote(v)
	add(q[1 : len(q)-1])
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	add(strings.TrimPrefix(url.UserPassword("", v).String(), ":")) // as in user:password@
	return out
}

// Len returns how many secrets are masked, counting each escaped form.
func (m *Masker) Len() int {
	if m == nil {
		return 0
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.values)
}

// String returns s with every known secret replaced by [Mask]: where it
// appears in one of its forms (see [Masker.Add]), and where it appears
// once s's backslash escapes are decoded (JSON's, any character as
// `\uXXXX` or a surrogate pair, `\/`, and Go's `\xHH`, `\UXXXXXXXX`),
// up to three levels of escaping deep; there the whole escaped text of
// the secret is replaced. Text without a backslash is only searched for
// the forms.
func (m *Masker) String(s string) string {
	if m == nil {
		return s
	}
	m.mu.RLock()
	r, esc := m.r, m.esc
	m.mu.RUnlock()
	if r == nil {
		return s
	}
	out := r.Replace(s)
	if strings.IndexByte(s, '\\') < 0 {
		return out
	}
	// Text with escapes: where one of them may be part of a secret, or a
	// secret was found as written (perhaps inside an escape), mask in the
	// escape-aware way.
	if out != s || esc.mayHide(s) {
		if masked, ok := esc.mask(s); ok {
			return masked
		}
	}
	return out
}

// TrimCutEnd is for text whose end was cut off (the rest dropped): a
// secret that straddled the cut left its start in s, which [Masker.String]
// cannot recognise. It returns s without the longest end of it that is the
// start of a known secret (in any masked form) cut short, as written or
// once its JSON or Go escapes are decoded (one level; the last escape may
// itself be cut short, as `\u00`), and how many bytes it dropped: none if
// no secret begins there, else fewer than the secret's text, which is at
// most 12 bytes (a surrogate pair) for each of its bytes escaped.
func (m *Masker) TrimCutEnd(s string) (string, int) {
	n := m.cutFragment(s, func(f string, k int) bool { return strings.HasSuffix(s, f[:k]) })
	if esc := m.escaped(); esc != nil {
		n = max(n, esc.cutEnd(s))
	}
	return s[:len(s)-n], n
}

// escaped returns what masking escaped text needs; nil for none.
func (m *Masker) escaped() *escaped {
	if m == nil {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.esc
}

// TrimCutStart is [Masker.TrimCutEnd] for text whose start was cut off (the
// bytes before it dropped): it returns s without the longest start of it
// that is the end of a known secret cut short (as written or escaped, the
// first escape perhaps the rest of one cut short, as `0041`), and how many
// bytes it dropped.
func (m *Masker) TrimCutStart(s string) (string, int) {
	n := m.cutFragment(s, func(f string, k int) bool { return strings.HasPrefix(s, f[len(f)-k:]) })
	if esc := m.escaped(); esc != nil {
		n = max(n, esc.cutStart(s))
	}
	return s[n:], n
}

// cutFragment returns the length of the longest part of s at its cut edge
// that is a proper part (k bytes, 0 < k < len(f)) of a form f of a secret,
// as match reports.
func (m *Masker) cutFragment(s string, match func(f string, k int) bool) int {
	if m == nil {
		return 0
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	best := 0
	for _, f := range m.values {
		for k := min(len(f)-1, len(s)); k > best; k-- {
			if match(f, k) {
				best = k
				break
			}
		}
	}
	return best
}

// Error returns err with its message masked: an error whose Error is
// [Masker.String] of err's and which unwraps to err, so [errors.Is] and
// [errors.As] see through it. A nil err gives nil; an error with no secret
// in its message is returned as it is.
func (m *Masker) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	masked := m.String(msg)
	if masked == msg {
		return err
	}
	return &maskedError{msg: masked, err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// Writer returns a writer that masks what it writes to w. Each Write is
// masked on its own: a secret split across two writes is not found, so
// give it whole records (a slog handler writes each record in one Write).
// Write reports len(p) when the masked bytes were all written.
func (m *Masker) Writer(w io.Writer) io.Writer { return &writer{m: m, w: w} }

type writer struct {
	m *Masker
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	s := w.m.String(string(p))
	n, err := io.WriteString(w.w, s)
	if err == nil && n < len(s) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// RedactURL returns raw with its password hidden, for printing: the
// userinfo password and the values of password and sslpassword query
// parameters (which PostgreSQL URLs accept) become "xxxxx"; the rest is
// kept as written. Text that does not parse as a URL but may hold a
// password ("user:pass@host", "password=") is replaced whole by
// "<unprintable URL>"; other text (a plain path) is returned as it is.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") || strings.Contains(strings.ToLower(raw), "password") {
			return "<unprintable URL>"
		}
		return raw
	}
	out := raw
	if _, ok := u.User.Password(); ok {
		if u.Scheme == "" || !strings.Contains(raw, "://") {
			return "<unprintable URL>"
		}
		out = u.Scheme + "://" + url.UserPassword(u.User.Username(), "xxxxx").String() + "@" + afterUserinfo(raw)
	}
	base, query, ok := strings.Cut(out, "?")
	if !ok {
		return out
	}
	frag := ""
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query, frag = query[:i], query[i:]
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if dk, err := url.QueryUnescape(k); err == nil && isPasswordParam(dk) {
			parts[i] = k + "=xxxxx"
		} else if err != nil && strings.Contains(strings.ToLower(k), "password") {
			return "<unprintable URL>"
		}
	}
	return base + "?" + strings.Join(parts, "&") + frag
}

// afterUserinfo returns what follows the userinfo's "@" in raw, a URL
// with a "://" and userinfo.
func afterUserinfo(raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	at := strings.LastIndexByte(auth, '@')
	return rest[at+1:]
}

// URLPasswords returns the passwords a connection URL holds: its userinfo
// password (decoded, and as written if that differs) and its password and
// sslpassword query parameters, decoded.
// Text that is not a URL has none.
func URLPasswords(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok && p != "" {
		out = append(out, p)
		// The password as written, which may escape other characters
		// than Go does.
		if _, rest, ok := strings.Cut(raw, "://"); ok {
			if i := strings.IndexAny(rest, "/?#"); i >= 0 {
				rest = rest[:i]
			}
			if i := strings.LastIndexByte(rest, '@'); i >= 0 {
				if _, pw, ok := strings.Cut(rest[:i], ":"); ok && pw != p {
					out = append(out, pw)
				}
			}
		}
	}
	if q, err := url.ParseQuery(u.RawQuery); err == nil {
		for k, vs := range q {
			if isPasswordParam(k) {
				for _, v := range vs {
					if v != "" {
						out = append(out, v)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func isPasswordParam(k string) bool {
	k = strings.ToLower(k)
	return k == "password" || k == "sslpassword"
}

// IsSecretName reports whether a variable's name says it holds a secret:
// it contains KEY, TOKEN, SECRET or PASSWORD, case ignored
// (OPENAI_API_KEY, github_token, DB_PASSWORD).
func IsSecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
