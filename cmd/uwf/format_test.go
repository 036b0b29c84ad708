package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/thread"
)

// The version-1 fixtures (testdata/format-v1, written by commit fe9658e):
// every later build opens them, fscks them clean, reads and steps their
// threads, and leaves them at format version 1. Opening, fsck and reading
// add no ref, object or log line, and create nothing (no addition table,
// cache or journal folder).

// fixtureDir is absolute: tests change the working directory.
var fixtureDir = func() string {
	d, err := filepath.Abs("testdata/format-v1")
	if err != nil {
		panic(err)
	}
	return d
}()

// fixtureThreads is how many threads the fixtures hold, and how many of
// them are active (see testdata/format-v1/README.md).
const (
	fixtureThreads = 8
	fixtureActive  = 4
)

// gunzip reads a gzipped fixture whole.
func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// untar extracts a tar archive into dir (regular files and folders only).
func untar(t *testing.T, data []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			t.Fatalf("fixture entry %q leaves the folder", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, 0o644)
			}
		default:
			t.Fatalf("fixture entry %q: unexpected type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// storeState is what reading must not change: objects, refs, every ref's
// log, the format version, and what else the store holds (the top-level
// files and folders of a disk store, the relations of a PostgreSQL
// store's schema): reading creates no addition, cache or journal.
type storeState struct {
	objects []cas.Hash
	refs    []cas.Ref
	logs    map[string][]cas.LogEntry
	version int
	parts   []string
}

// readState opens the store at url directly (not through the CLI) and
// reads its state.
func readState(t *testing.T, url string) storeState {
	t.Helper()
	ctx := t.Context()
	var st cas.Store
	var refs interface {
		cas.Refs
		cas.FormatVersioner
	}
	// What the store holds, read before this Open.
	out := storeState{logs: map[string][]cas.LogEntry{}, parts: storeParts(t, url)}
	if strings.HasPrefix(url, "postgres") {
		s, err := postgres.Open(ctx, url, &postgres.Options{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		st, refs = s, s.Refs()
	} else {
		s, err := disk.Open(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		st, refs = s, s.Refs()
	}
	for o, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		out.objects = append(out.objects, o.Hash)
	}
	slices.Sort(out.objects)
	for r, err := range refs.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		out.refs = append(out.refs, r)
		if out.logs[r.Name], err = refs.Log(ctx, r.Name); err != nil {
			t.Fatal(err)
		}
	}
	v, err := refs.FormatVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out.version = v
	return out
}

func (s storeState) diff(o storeState) []string {
	var d []string
	if !slices.Equal(s.objects, o.objects) {
		d = append(d, fmt.Sprintf("objects: %d before, %d after", len(s.objects), len(o.objects)))
	}
	if !slices.Equal(s.refs, o.refs) {
		d = append(d, fmt.Sprintf("refs: %v before, %v after", s.refs, o.refs))
	}
	for name, log := range o.logs {
		if !slices.Equal(s.logs[name], log) {
			d = append(d, fmt.Sprintf("log of %s: %d entries before, %d after", name, len(s.logs[name]), len(log)))
		}
	}
	if s.version != o.version {
		d = append(d, fmt.Sprintf("format version %d before, %d after", s.version, o.version))
	}
	if !slices.Equal(s.parts, o.parts) {
		d = append(d, fmt.Sprintf("files or relations: %v before, %v after", s.parts, o.parts))
	}
	return d
}

// storeParts lists the top-level files and folders of the disk store at
// url, or the relations (tables, indexes, sequences) of the PostgreSQL
// store's schema (its URL's schema parameter, uwf's, not PostgreSQL's).
func storeParts(t *testing.T, url string) []string {
	t.Helper()
	if !strings.HasPrefix(url, "postgres") {
		es, err := os.ReadDir(url)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	schema := q.Get("schema")
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	q.Del("schema")
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 ORDER BY c.relname`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestFixtureV1Disk(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	untar(t, gunzip(t, "store.tar.gz"), dir)
	checkFixture(t, e, filepath.Join(dir, "store"))
}

func TestFixtureV1Export(t *testing.T) {
	e := newEnv(t)
	r := e.runContext(t.Context(), bytes.NewReader(gunzip(t, "export.tar.gz")), "cas", "import")
	if r.code != 0 {
		t.Fatalf("import of the version-1 export: %v", r)
	}
	checkFixture(t, e, e.storeDir())
}

func TestFixtureV1Postgres(t *testing.T) {
	url := pgtest.URL(t)
	psql, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("psql is needed to restore the version-1 PostgreSQL fixture: %v", err)
		}
		t.Skipf("psql is needed to restore the version-1 PostgreSQL fixture: %v", err)
	}
	schema := fmt.Sprintf("uwf_v1fx_%d", time.Now().UnixNano())
	dump := strings.ReplaceAll(string(gunzip(t, "postgres.sql.gz")), "uwf_fixture_v1", schema)
	restore := exec.Command(psql, "-q", "-X", "-v", "ON_ERROR_STOP=1", url)
	restore.Stdin = strings.NewReader(dump)
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restore the fixture with psql: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		drop := exec.CommandContext(ctx, psql, "-q", "-X", "-v", "ON_ERROR_STOP=1", url, "-c", "DROP SCHEMA "+schema+" CASCADE")
		if out, err := drop.CombinedOutput(); err != nil {
			t.Errorf("drop schema %s: %v\n%s", schema, err, out)
		}
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	checkFixture(t, newEnv(t), url+sep+"schema="+schema)
}

// checkFixture runs the reading commands on the store at url, checks they
// change nothing, then steps every active thread and checks the store
// stays at version 1 and fscks clean.
func checkFixture(t *testing.T, e *env, url string) {
	t.Helper()
	before := readState(t, url)
	if before.version != cas.FormatV1 {
		t.Fatalf("the fixture is at format version %d, want 1", before.version)
	}
	run := func(args ...string) string {
		t.Helper()
		r := e.run("", append([]string{"--store", url}, args...)...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("uwf %s: %v", strings.Join(args, " "), r)
		}
		return r.stdout
	}
	if out := run("cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck of the fixture: %s", out)
	}
	var list []thread.InfoJSON
	if err := json.Unmarshal([]byte(run("thread", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != fixtureThreads {
		t.Fatalf("thread list: %d threads, want %d", len(list), fixtureThreads)
	}
	statuses := map[string]int{}
	var active []string
	for _, th := range list {
		statuses[th.Status]++
		if th.Status == "active" {
			active = append(active, th.ID)
		}
		run("thread", "show", th.ID)
		run("thread", "steps", th.ID)
		run("thread", "log", th.ID)
		if out := run("thread", "read", th.ID); !strings.Contains(out, "#") {
			t.Errorf("thread read %s printed %q", th.ID, out)
		}
	}
	want := map[string]int{"active": fixtureActive, "done": 1, "suspended": 2, "killed": 1}
	for s, n := range want {
		if statuses[s] != n {
			t.Errorf("threads %s: %d, want %d (all: %v)", s, statuses[s], n, statuses)
		}
	}
	if out := run("workflow", "history", "review-loop"); strings.Count(out, "\n") != 2 {
		t.Errorf("workflow history review-loop:\n%s\nwant two versions", out)
	}
	run("workflow", "list")
	run("cas", "schema", "list")
	run("cas", "ref", "list")
	if d := before.diff(readState(t, url)); len(d) > 0 {
		t.Fatalf("reading the version-1 fixture changed it:\n%s", strings.Join(d, "\n"))
	}

	for _, id := range active {
		run("thread", "step", id, "--agent", "synth")
	}
	after := readState(t, url)
	if after.version != cas.FormatV1 {
		t.Errorf("after stepping, the fixture is at format version %d, want 1", after.version)
	}
	if len(after.objects) <= len(before.objects) {
		t.Errorf("stepping %d threads stored no node", len(active))
	}
	if out := run("cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck after stepping: %s", out)
	}
}

// diskRefs opens the env's disk store directly, to damage it as a crash,
// a bad disk or a hand edit would.
func diskRefs(t *testing.T, e *env) *disk.Refs {
	t.Helper()
	st, err := disk.Open(e.storeDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.Refs()
}

// TestDamagedBuiltinsCLI: damage to built-in schemas blocks no command;
// fsck reports it and fsck --repair puts the known values back, logged.
func TestDamagedBuiltinsCLI(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	e.ok("", "thread", "run", "review-loop", "-p", "first", "--agent", "synth", "--cwd", "/")
	x := e.okHash("", "cas", "put-text", "x")

	e.corrupt(cas.StepSchema)
	refs := diskRefs(t, e)
	if err := refs.CompareAndSwap(t.Context(), "schemas/mark", cas.MarkSchema, x, "vandal"); err != nil {
		t.Fatal(err)
	}

	// Commands go on with the known schemas.
	out := e.ok("", "thread", "run", "review-loop", "-p", "second", "--agent", "synth", "--cwd", "/")
	if !strings.Contains(out, "done") {
		t.Errorf("thread run with damaged built-ins:\n%s", out)
	}
	e.ok("", "cas", "schema", "get", "step")
	e.ok("", "thread", "list")
	e.ok("", "cas", "gc", "--dry-run")
	if r := e.run("", "cas", "export"); r.code != 0 || !strings.Contains(r.stdout, "objects/"+cas.StepSchema.String()) {
		t.Errorf("cas export with a corrupt built-in: exit %d, stderr %q", r.code, r.stderr)
	}

	r := e.run("", "cas", "fsck")
	if r.code != 1 {
		t.Fatalf("fsck of damaged built-ins: %v, want exit 1", r)
	}
	for _, want := range []string{
		cas.StepSchema.String() + ": builtin: the built-in schema step is corrupt",
		"ref schemas/mark -> " + x.String() + ": builtin: the ref of the built-in schema mark must point at " + cas.MarkSchema.String(),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fsck output lacks %q:\n%s", want, r.stdout)
		}
	}

	// The disk store warns that it healed the corrupt object: that is
	// stderr's, not the transcript's.
	out = e.ok("", "--log-level", "error", "cas", "fsck", "--repair")
	var transcript strings.Builder
	transcript.WriteString("$ uwf cas fsck --repair\nstdout:\n")
	for line := range strings.Lines(out) {
		transcript.WriteString("  | " + line)
	}
	transcript.WriteString("exit 0\n")
	golden(t, "fsck-repair.txt", transcript.String())
	for _, want := range []string{
		"repaired " + cas.StepSchema.String() + ": put back the built-in schema step\n",
		"repaired ref schemas/mark -> " + cas.MarkSchema.String() + ": moved the ref of the built-in schema mark back from " + x.String() + "\n",
		": 0 problems\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("fsck --repair output lacks %q:\n%s", want, out)
		}
	}
	log, err := refs.Log(t.Context(), "schemas/mark")
	if err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1]; last.New != cas.MarkSchema || last.Message != "restore built-in schema mark" {
		t.Errorf("the newest log entry of schemas/mark is %+v, want the restore", last)
	}
	if out := e.ok("", "cas", "fsck", "--repair", "--json"); !strings.Contains(out, `"ok":true`) || !strings.Contains(out, `"repaired":[]`) {
		t.Errorf("a second fsck --repair --json: %s", out)
	}
}

// TestMalformedBuiltinRef: a built-in ref whose file is garbage blocks no
// command that needs the schema (commands use the pinned hashes).
func TestMalformedBuiltinRef(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	for _, name := range []string{"step", "meta"} {
		if err := os.WriteFile(filepath.Join(e.storeDir(), "refs", "schemas", name), []byte("garbage\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := e.ok("", "thread", "run", "review-loop", "-p", "go", "--agent", "synth", "--cwd", "/")
	if !strings.Contains(out, "done") {
		t.Errorf("thread run with a malformed built-in ref:\n%s", out)
	}
	e.ok(`"a JSON string"`, "cas", "put", "content", "-")
	if h := e.okHash("", "cas", "put-text", "hello"); h.IsZero() {
		t.Error("put-text gave the zero hash")
	}
}

// TestThreadListUnknownKind: a thread whose head is a node of a kind this
// build does not read is named on stderr, and the others are listed.
func TestThreadListUnknownKind(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	good := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "go", "--cwd", "/"))
	e.write("later.json", `{"type":"object","properties":{"kind":{"const":"call"}},"required":["kind"]}`)
	e.ok("", "cas", "schema", "put", "later.json", "--name", "later")
	e.write("node.json", `{"kind":"call"}`)
	odd := e.okHash("", "cas", "put", "later", "node.json")
	const bad = "01JGJFGR4E00000000000000ZZ"
	if err := diskRefs(t, e).CompareAndSwap(t.Context(), "threads/"+bad, 0, odd, "a newer kind"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"thread", "list"}, {"thread", "list", "--json"}, {"thread", "list", "--status", "active"}} {
		r := e.run("", args...)
		if r.code != 0 || !strings.Contains(r.stdout, good) || strings.Contains(r.stdout, bad) {
			t.Errorf("uwf %s: %v\nwant exit 0 listing %s only", strings.Join(args, " "), r, good)
		}
		want := "uwf: thread " + bad + " skipped: "
		if !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "not a start, step, mark, call or join node") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("uwf %s: stderr %q, want one line %q naming why", strings.Join(args, " "), r.stderr, want+"...")
		}
	}
}
