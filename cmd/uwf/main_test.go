package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestMain runs uwf's main instead of the tests when UWF_TEST_MAIN=1, so
// tests can run the test binary as the uwf binary in other processes.
func TestMain(m *testing.M) {
	if os.Getenv("UWF_TEST_MAIN") == "1" {
		main()
		return
	}
	if report := os.Getenv("UWF_TEST_STARTUP"); report != "" {
		os.Exit(startupMain(report))
	}
	if kind := os.Getenv("UWF_TEST_SOAK"); kind != "" {
		if err := soakWorker(kind, os.Args[len(os.Args)-countWorkerArgs():]); err != nil {
			fmt.Fprintln(os.Stderr, "soak worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("UWF_TEST_WORKER") == "1" {
		if err := stepWorker(os.Args[len(os.Args)-countWorkerArgs():]); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// epoch is the fixed clock of in-process tests.
var epoch = time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// testClock is a clock that moves only when told to.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a uwf home in a temporary directory, run in-process with a fixed
// clock, UWF_DURABILITY=none (tests do not need fsync) and the working
// directory set to a temporary directory for input files.
type env struct {
	t     *testing.T
	home  string
	dir   string // working directory
	clock *testClock
	ids   *idMaker
}

// idMaker makes thread IDs in order, so outputs are stable: the clock's
// time and a counter.
type idMaker struct {
	mu    sync.Mutex
	clock *testClock
	n     uint64
}

func (m *idMaker) New() ulid.ULID {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(m.clock.Now())); err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint64(id[8:], m.n)
	return id
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clock := &testClock{t: epoch}
	e := &env{t: t, home: filepath.Join(t.TempDir(), "home"), dir: t.TempDir(), clock: clock, ids: &idMaker{clock: clock}}
	t.Setenv("UWF_HOME", e.home)
	t.Setenv("UWF_STORE", "")
	t.Setenv("UWF_DURABILITY", "none")
	t.Setenv("UWF_LOG_LEVEL", "")
	t.Chdir(e.dir)
	return e
}

func (e *env) storeDir() string { return filepath.Join(e.home, "store") }

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs uwf with args (without the program name) and stdin.
func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	return e.runContext(e.t.Context(), strings.NewReader(stdin), args...)
}

func (e *env) runContext(ctx context.Context, stdin io.Reader, args ...string) result {
	e.t.Helper()
	var out, errb bytes.Buffer
	app := newApp(&out, &errb)
	app.Reader = stdin
	app.Metadata = map[string]any{metaNow: e.clock.Now, metaNewID: e.ids.New}
	err := app.RunContext(ctx, append([]string{"uwf"}, args...))
	code := exitCode(&errb, err)
	return result{out.String(), errb.String(), code}
}

// ok runs uwf and fails the test unless it exits 0 with nothing on stderr;
// it returns stdout.
func (e *env) ok(stdin string, args ...string) string {
	e.t.Helper()
	r := e.run(stdin, args...)
	if r.code != 0 || r.stderr != "" {
		e.t.Fatalf("uwf %q: %v", args, r)
	}
	return r.stdout
}

// okHash runs a command that prints one hash and returns it.
func (e *env) okHash(stdin string, args ...string) cas.Hash {
	e.t.Helper()
	out := e.ok(stdin, args...)
	h, err := cas.ParseCanonicalHash(strings.TrimSuffix(out, "\n"))
	if err != nil || !strings.HasSuffix(out, "\n") {
		e.t.Fatalf("uwf %q printed %q, want a hash and a newline", args, out)
	}
	return h
}

func (e *env) write(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// objects returns the hashes in the store, sorted (nil if there is no store).
func (e *env) objects() []cas.Hash {
	e.t.Helper()
	if _, err := os.Stat(e.storeDir()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	st, err := disk.OpenOrCreate(e.storeDir(), &disk.Options{Durability: mustDurability(e.t, "none")})
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	var hs []cas.Hash
	for o, err := range st.All(e.t.Context()) {
		if err != nil {
			e.t.Fatal(err)
		}
		hs = append(hs, o.Hash)
	}
	slices.Sort(hs)
	return hs
}

func mustDurability(t *testing.T, s string) disk.Durability {
	t.Helper()
	d, err := disk.ParseDurability(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// corrupt flips a byte of the object h in the disk store.
func (e *env) corrupt(h cas.Hash) {
	e.t.Helper()
	var path string
	filepath.WalkDir(e.storeDir(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == h.String() {
			path = p
		}
		return nil
	})
	if path == "" {
		e.t.Fatalf("object %s not found under %s", h, e.storeDir())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	os.Chmod(path, 0o644)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, lineDiff(string(want), got))
	}
}

// goldenDir is absolute: tests change the working directory.
var goldenDir = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, "testdata", "golden")
}()

// lineDiff shows the first differing lines of want and got.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, wl, gl)
		}
	}
	return "(no difference)"
}

// transcript records commands and their results for a golden file.
type transcript struct {
	e *env
	b strings.Builder
}

// run runs a command and records it; masks replace varying output.
func (tr *transcript) run(stdin string, args ...string) result {
	tr.e.t.Helper()
	r := tr.e.run(stdin, args...)
	fmt.Fprintf(&tr.b, "$ uwf %s\n", shellQuote(args))
	if stdin != "" {
		fmt.Fprintf(&tr.b, "stdin:\n%s", indentBlock(stdin))
	}
	if r.stdout != "" {
		fmt.Fprintf(&tr.b, "stdout:\n%s", indentBlock(r.stdout))
	}
	if r.stderr != "" {
		fmt.Fprintf(&tr.b, "stderr:\n%s", indentBlock(r.stderr))
	}
	fmt.Fprintf(&tr.b, "exit %d\n\n", r.code)
	return r
}

func indentBlock(s string) string {
	nl := strings.HasSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	s = "  | " + strings.ReplaceAll(s, "\n", "\n  | ") + "\n"
	if !nl {
		s += "  (no newline at end)\n"
	}
	return s
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$*?;&|<>()[]{}\x00") {
			a = fmt.Sprintf("%q", a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// okJSON runs uwf with --json, checks it exits 0 and prints valid JSON (one
// value, or one value per line for event streams), and decodes the first
// value into v (if not nil).
func (e *env) okJSON(v any, args ...string) string {
	e.t.Helper()
	out := e.ok("", append([]string{"--json"}, args...)...)
	checkJSON(e.t, out, v)
	return out
}

// checkJSON fails the test unless s is one or more JSON values, each
// ending a line; it decodes the first into v (if not nil).
func checkJSON(t *testing.T, s string, v any) {
	t.Helper()
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("JSON output %q does not end in a newline", s)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("invalid JSON output: %v\n%s", err, s)
		}
		if i == 0 && v != nil {
			if err := json.Unmarshal(raw, v); err != nil {
				t.Fatalf("decode %s: %v", raw, err)
			}
		}
	}
}

// firstField returns the first space-separated field of the first line of
// s: the hash or ID a command printed.
func firstField(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	f, _, _ := strings.Cut(line, " ")
	return f
}

// masked replaces the test's temporary paths in s with $HOME and $WORK.
func (e *env) masked(s string) string {
	s = strings.ReplaceAll(s, e.home, "$HOME")
	return strings.ReplaceAll(s, e.dir, "$WORK")
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		code  int
		print string
	}{
		{"nil", nil, 0, ""},
		{"failure", errors.New("boom"), 1, "uwf: boom\n"},
		{"usage", usageErrorf("uwf cas get", "want 1 argument <hash>, got 0"), 2, "uwf: want 1 argument <hash>, got 0 (see 'uwf cas get --help')\n"},
		{"invalid hash", fmt.Errorf("get: %w", &cas.HashError{Input: "x", Reason: "short"}), 2, "uwf: get: invalid hash \"x\": short\n"},
		{"invalid ref name", fmt.Errorf("%w %q: empty", cas.ErrInvalidRefName, ""), 2, "uwf: invalid ref name \"\": empty\n"},
		{"invalid data holding a bad hash", fmt.Errorf("%w: decode node type: %w", cas.ErrInvalid, &cas.HashError{Input: "x", Reason: "short"}), 1, ""},
		{"not found", &cas.ObjectError{Op: "get", Hash: 1, Err: cas.ErrNotFound}, 3, "uwf: object 0000000000001 was not found in the store\n"},
		{"conflict", &cas.ConflictError{Name: "a", Expected: 1, Current: 2}, 4, ""},
		{"canceled", fmt.Errorf("walk: %w", context.Canceled), 130, "uwf: walk: interrupted\n"},
		{"silent", &silentError{fmt.Errorf("x: %w", cas.ErrNotFound)}, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if got := exitCode(&b, tc.err); got != tc.code {
				t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.code)
			}
			if tc.print != "" && b.String() != tc.print {
				t.Errorf("exitCode(%v) printed %q, want %q", tc.err, b.String(), tc.print)
			}
			if n := strings.Count(b.String(), "uwf: "); tc.err != nil && tc.name != "silent" && n != 1 {
				t.Errorf("exitCode(%v) printed %q: want the error once", tc.err, b.String())
			}
			if tc.name == "silent" && b.Len() != 0 {
				t.Errorf("exitCode(silent) printed %q, want nothing", b.String())
			}
		})
	}
}
