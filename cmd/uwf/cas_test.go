package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

const noteSchema = `# a note: a title, a body (a content node) and links to other notes
type: object
properties:
  title: {type: string}
  body: {type: string, format: cas_ref}
  links:
    type: array
    items: {type: string, format: cas_ref}
required: [title, body]
additionalProperties: false
`

// setupNotes registers the note schema and returns the hash of a content
// node "hello" and of a note whose body it is.
func setupNotes(e *env) (hello, note cas.Hash) {
	e.t.Helper()
	e.write("note.yaml", noteSchema)
	e.okHash("", "cas", "schema", "put", "note.yaml", "--name", "note")
	hello = e.okHash("", "cas", "put-text", "hello")
	e.write("n1.json", `{"title": "first", "body": "`+hello.String()+`", "links": []}`)
	note = e.okHash("", "cas", "put", "note", "n1.json")
	return hello, note
}

var (
	maskDuration   = regexp.MustCompile(`(time taken: +)\S+`)
	maskDurationMs = regexp.MustCompile(`"durationMs":\d+`)
)

// TestGolden runs the cas commands on a fresh store, with a fixed clock,
// and compares everything printed with testdata/golden/cas.txt.
func TestGolden(t *testing.T) {
	e := newEnv(t)
	tr := &transcript{e: e}
	hello := tr.run("", "cas", "put-text", "hello").stdout
	h := strings.TrimSpace(hello)
	tr.run("", "cas", "put-text", "--json", "hello")
	tr.run("hello\nworld\n", "cas", "put-text", "-")
	tr.run("", "cas", "get", h)
	tr.run("", "cas", "get", "--json", h)
	tr.run("", "cas", "get", strings.ToLower(h))
	tr.run("", "cas", "has", h)
	tr.run("", "cas", "has", "--json", h)
	tr.run("", "cas", "has", "0000000000000")
	tr.run("", "cas", "has", "--json", "0000000000000")
	tr.run("", "cas", "schema", "list")
	tr.run("", "cas", "schema", "list", "--json")
	tr.run("", "cas", "schema", "get", "content")
	tr.run("", "cas", "schema", "get", "--json", "meta")
	e.write("note.yaml", noteSchema)
	note := strings.TrimSpace(tr.run("", "cas", "schema", "put", "note.yaml", "--name", "note").stdout)
	tr.run("", "cas", "schema", "put", "note.yaml", "--name", "note", "--json")
	tr.run("", "cas", "schema", "get", "note")
	tr.run("", "cas", "schema", "get", note)
	tr.run("", "cas", "put", "--json", "note", "-")
	e.write("n1.json", `{"title": "first", "body": "`+h+`", "links": []}`)
	n1 := strings.TrimSpace(tr.run("", "cas", "put", "note", "n1.json").stdout)
	e.write("n2.yaml", "title: second\nbody: "+h+"\nlinks: ["+n1+"]\n")
	n2 := strings.TrimSpace(tr.run("", "cas", "put", note, "n2.yaml").stdout)
	tr.run(`{"title":"third","body":"`+h+`","links":["`+n1+`","`+n2+`"]}`, "cas", "put", "note", "-")
	tr.run("", "cas", "refs", n2)
	tr.run("", "cas", "refs", "--json", n2)
	tr.run("", "cas", "refs", h)
	tr.run("", "cas", "refs", note)
	tr.run("", "cas", "walk", n2)
	tr.run("", "cas", "walk", "--tree", n2)
	tr.run("", "cas", "walk", "--json", h)
	tr.run("", "cas", "walk", "--tree", "--json", n1)
	tr.run("", "cas", "ref", "list")
	tr.run("", "cas", "ref", "list", "schemas/n")
	tr.run("", "cas", "ref", "list", "--json", "schemas/note")
	tr.run("", "cas", "ref", "list", "threads/")
	e.clock.Advance(time.Minute)
	e.write("note2.yaml", noteSchema+"minProperties: 2\n")
	tr.run("", "cas", "schema", "put", "note2.yaml", "--name", "note")
	tr.run("", "cas", "ref", "log", "schemas/note")
	tr.run("", "cas", "ref", "log", "--json", "schemas/note")
	tr.run("", "cas", "fsck")
	tr.run("", "cas", "fsck", "--json")
	tr.run("", "cas", "gc", "--dry-run")
	e.clock.Advance(2 * time.Hour)
	tr.run("", "cas", "gc", "--dry-run")
	tr.run("", "cas", "gc", "--json", "--dry-run", "--grace", "3h")
	tr.run("", "cas", "gc")
	tr.run("", "cas", "has", n2)
	tr.run("", "cas", "gc", "--json", "--grace", "0", "--log-retention", "30d")
	out := tr.b.String()
	out = maskDuration.ReplaceAllString(out, "${1}DURATION")
	out = maskDurationMs.ReplaceAllString(out, `"durationMs":DURATION`)
	golden(t, "cas.txt", out)
}

// TestGetBatch checks get --batch's output byte for byte.
func TestGetBatch(t *testing.T) {
	e := newEnv(t)
	hello, note := setupNotes(e)
	helloBytes := e.ok("", "cas", "get", hello.String())
	e.corrupt(note)
	missing := cas.Hash(12345)
	in := hello.String() + "\n" +
		"nothash\n" +
		missing.String() + "\n" +
		"\n" +
		note.String() + "\r\n" +
		strings.ToLower(hello.String()) + "\n" +
		"../x\n" +
		hello.String() // no final newline
	want := fmt.Sprintf("%s %d\n%s", hello, len(helloBytes)-1, helloBytes) +
		"nothash invalid\n" +
		missing.String() + " missing\n" +
		" invalid\n" +
		note.String() + " corrupt\n" +
		fmt.Sprintf("%s %d\n%s", hello, len(helloBytes)-1, helloBytes) +
		"../x invalid\n" +
		fmt.Sprintf("%s %d\n%s", hello, len(helloBytes)-1, helloBytes)
	r := e.run(in, "cas", "get", "--batch")
	if r.code != 0 || r.stderr != "" || r.stdout != want {
		t.Errorf("get --batch: %v\nwant stdout %q", r, want)
	}
	if r := e.run("", "cas", "get", "--batch"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("get --batch with no input: %v", r)
	}
}

// TestPutBatch checks put --batch's output byte for byte, across chunks:
// a bad file fails its own line only, a file may refer to one before it.
func TestPutBatch(t *testing.T) {
	e := newEnv(t)
	hello, _ := setupNotes(e)
	defer func(n int) { batchChunkNodes = n }(batchChunkNodes)
	batchChunkNodes = 3

	var typ cas.Hash
	for line := range strings.Lines(e.ok("", "cas", "schema", "list")) {
		if name, h, _ := strings.Cut(strings.TrimSpace(line), " "); name == "note" {
			typ, _ = cas.ParseHash(h)
		}
	}
	a := `{"title":"a","body":"` + hello.String() + `"}`
	e.write("a.json", a)
	aHash, err := cas.Node{Type: typ, Payload: map[string]any{"title": "a", "body": hello.String()}}.Hash()
	if err != nil {
		t.Fatal(err)
	}
	e.write("b.yaml", "title: b\nbody: "+hello.String()+"\nlinks: ["+aHash.String()+"]\n")
	e.write("bad.json", `{"title": "x",`)
	e.write("wrong.json", `{"title": 5, "body": "`+hello.String()+`"}`)
	e.write("dangling.json", `{"title": "d", "body": "`+cas.Hash(99).String()+`"}`)
	os.Mkdir(filepath.Join(e.dir, "dir"), 0o755)
	in := "a.json\nb.yaml\nbad.json\nmissing.json\n\nwrong.json\ndangling.json\ndir\na.json"
	r := e.run(in, "cas", "put", "--batch", "note")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 1 || len(lines) != 9 || r.stderr != "uwf: put --batch: 6 of 9 files failed\n" {
		t.Fatalf("put --batch: %v", r)
	}
	bHash := e.okHash("", "cas", "put", "note", "b.yaml")
	for i, want := range []string{
		aHash.String(),
		bHash.String(),
		"error: bad.json: ",
		"error: missing.json: open: no such file or directory",
		"error: : empty path",
		"error: wrong.json: ",
		"error: dangling.json: edge payload/body -> " + cas.Hash(99).String() + " is not in the store",
		"error: dir: is a directory",
		aHash.String(),
	} {
		if !strings.HasPrefix(lines[i], want) || strings.HasSuffix(want, ": ") && len(lines[i]) <= len(want) {
			t.Errorf("put --batch line %d = %q, want %q...", i+1, lines[i], want)
		}
	}
	if !strings.Contains(lines[5], "/title") {
		t.Errorf("put --batch line 6 = %q: want the schema path", lines[5])
	}
	// All good: exit 0, one hash per line, in order.
	r = e.run("a.json\nb.yaml\na.json\nb.yaml\n", "cas", "put", "--batch", "note")
	if want := strings.Repeat(aHash.String()+"\n"+bHash.String()+"\n", 2); r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("put --batch: %v\nwant stdout %q", r, want)
	}
}

// TestBadArguments checks that an invalid hash, type, ref or schema name as
// an argument exits 2 with a message naming it, and changes nothing.
func TestBadArguments(t *testing.T) {
	e := newEnv(t)
	setupNotes(e)
	before := e.objects()
	badHashes := []string{"", "ABC", "EYHPV6X8XHTCSS", "UUUUUUUUUUUUU", "EYHPV6X8XHTCU", "../x", "EYHPV6X8XHTC\x00", "GZZZZZZZZZZZZ", " EYHPV6X8XHTC", "EYHPV6X8XHT/S"}
	badNames := []string{"", "../x", "a//b", "a b", "x\x00", "/a", "a/", ".a", "-"}
	type badArg struct {
		in   string
		args []string
	}
	var cases []badArg
	for _, h := range badHashes {
		for _, args := range [][]string{
			{"cas", "get", "--", h},
			{"cas", "has", "--", h},
			{"cas", "refs", "--", h},
			{"cas", "walk", "--", h},
			{"cas", "walk", "--tree", "--", h},
			{"cas", "ref", "set", "--", "x", h},
			{"cas", "ref", "restore", "x", "--to=" + h},
		} {
			cases = append(cases, badArg{h, args})
		}
	}
	for _, n := range badNames {
		for _, args := range [][]string{
			{"cas", "put", "--", n, "n1.json"},
			{"cas", "put", "--batch", "--", n},
			{"cas", "schema", "get", "--", n},
			{"cas", "schema", "put", "note.yaml", "--name=" + n},
			{"cas", "ref", "log", "--", n},
			{"cas", "ref", "set", "--", n, "EYHPV6X8XHTCS"},
			{"cas", "ref", "rm", "--", n},
			{"cas", "ref", "restore", "--", n},
		} {
			cases = append(cases, badArg{n, args})
		}
		if n != "" && n != "a/" {
			cases = append(cases, badArg{n, []string{"cas", "ref", "list", "--", n}})
		}
	}
	for _, args := range [][]string{{"cas", "ref", "set", "x", "0000000000000"}, {"cas", "ref", "restore", "x", "--to", "0000000000000"}} {
		cases = append(cases, badArg{"0000000000000", args})
	}
	for _, tc := range cases {
		r := e.run("", tc.args...)
		named := strings.Contains(r.stderr, strings.Trim(fmt.Sprintf("%q", tc.in), `"`))
		if tc.in == "" {
			named = strings.Contains(r.stderr, `""`)
		}
		if r.code != 2 || r.stdout != "" || !named || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("uwf %q: %v\nwant exit 2 and a message naming %q", tc.args, r, tc.in)
		}
	}
	if after := e.objects(); !slices.Equal(before, after) {
		t.Errorf("bad arguments changed the store: %d objects before, %d after", len(before), len(after))
	}
}

// infiniteReader yields 'x' forever and counts what was read.
type infiniteReader struct{ n int64 }

func (r *infiniteReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '"'
	}
	r.n += int64(len(p))
	return len(p), nil
}

// TestBadInput checks that bad input files fail with exit 1 and a message
// naming the file (and where in it), changing nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	hello, _ := setupNotes(e)
	e.write("any.json", "true")
	e.okHash("", "cas", "schema", "put", "any.json", "--name", "any")
	before := e.objects()
	for _, tc := range []struct {
		name, file, content string
		args                []string
		want                []string // in the message
	}{
		{"duplicate key", "dup.json", "{\n  \"a\": 1,\n  \"a\": 2\n}", []string{"any"}, []string{"dup.json", "duplicate", "line 3"}},
		{"bad UTF-8", "utf8.json", "{\"a\": \"\xff\"}", []string{"any"}, []string{"utf8.json", "UTF-8"}},
		{"lone surrogate", "sur.json", `{"a": "\ud800"}`, []string{"any"}, []string{"sur.json", "surrogate"}},
		{"number too big", "big.json", `[1e400]`, []string{"any"}, []string{"big.json", "1e400"}},
		{"truncated JSON", "trunc.json", "{\"a\":\n", []string{"any"}, []string{"trunc.json", "line 2"}},
		{"bad YAML", "bad.yaml", "a: [1, 2\nb: 3\n", []string{"any"}, []string{"bad.yaml", "line"}},
		{"YAML duplicate key", "dup.yaml", "a: 1\na: 2\n", []string{"any"}, []string{"dup.yaml", "line 2"}},
		{"YAML sniffed", "dup.txt", "a: 1\na: 2\n", []string{"any"}, []string{"dup.txt", "line 2"}},
		{"YAML .inf", "inf.yml", "a: .inf\n", []string{"any"}, []string{"inf.yml"}},
		{"empty", "empty.json", "", []string{"any"}, []string{"empty.json", "empty"}},
		{"schema violation", "v.json", `{"title": 5, "body": "` + hello.String() + `"}`, []string{"note"}, []string{"v.json", "/title", "5", "/properties/title/type"}},
		{"extra property", "x.json", `{"title": "t", "body": "` + hello.String() + `", "extra": true}`, []string{"note"}, []string{"x.json", "extra"}},
		{"bad hash in payload", "h.json", `{"title": "t", "body": "` + strings.ToLower(hello.String()) + `"}`, []string{"note"}, []string{"h.json", "/body", strings.ToLower(hello.String())}},
		{"missing file", "", "", []string{"note", "nope.json"}, []string{"nope.json", "no such file"}},
		{"directory", "", "", []string{"note", "."}, []string{".: is a directory"}},
		{"schema put invalid schema", "bad-schema.json", `{"type": "nonsense"}`, []string{"schema", "put", "--name", "bad"}, []string{"bad-schema.json"}},
		{"schema put ref outside", "ref.json", `{"not": {"type": "string", "format": "cas_ref"}}`, []string{"schema", "put", "--name", "bad"}, []string{"ref.json", "not"}},
		{"schema put reserved", "any.json", "", []string{"schema", "put", "--name", "content"}, []string{"reserved"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file != "" && tc.content != "" {
				e.write(tc.file, tc.content)
			}
			args := append([]string{"cas"}, tc.args...)
			if tc.args[0] != "schema" {
				args = slices.Insert(args, 1, "put")
			}
			if tc.file != "" {
				args = append(args, tc.file)
			}
			r := e.run("", args...)
			if r.code != 1 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("uwf %q: %v\nwant exit 1 and one line on stderr", args, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("uwf %q: stderr %q does not mention %q", args, r.stderr, w)
				}
			}
		})
	}
	if after := e.objects(); !slices.Equal(before, after) {
		t.Errorf("bad input changed the store: %d objects before, %d after", len(before), len(after))
	}
}

// TestTooLarge checks that input over the node size limit is refused
// before it is read whole.
func TestTooLarge(t *testing.T) {
	e := newEnv(t)
	setupNotes(e)
	e.write("any.json", "true")
	e.okHash("", "cas", "schema", "put", "any.json", "--name", "any")
	before := e.objects()
	// A sparse 1 GiB file: refused by its size, never read.
	f, err := os.Create(filepath.Join(e.dir, "huge.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	start := time.Now()
	r := e.run("", "cas", "put", "any", "huge.json")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "huge.json") || !strings.Contains(r.stderr, "too large") {
		t.Errorf("put huge.json: %v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("put huge.json took %v: it was read", d)
	}
	// Endless stdin: refused once the limit is passed.
	for _, args := range [][]string{{"cas", "put", "any", "-"}, {"cas", "put-text", "-"}, {"cas", "schema", "put", "-", "--name", "big"}} {
		in := &infiniteReader{}
		r = e.runContext(t.Context(), in, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "too large") {
			t.Errorf("uwf %q with endless stdin: %v", args, r)
		}
		if in.n > cas.DefaultMaxNodeSize+1<<20 {
			t.Errorf("uwf %q read %d bytes of stdin, limit %d", args, in.n, cas.DefaultMaxNodeSize)
		}
	}
	if after := e.objects(); !slices.Equal(before, after) {
		t.Errorf("too large input changed the store")
	}
}

// TestNotFoundAndConflict checks exit statuses 3 and 4.
func TestNotFoundAndConflict(t *testing.T) {
	e := newEnv(t)
	_, note := setupNotes(e)
	absent := cas.Hash(12345).String()
	e.write("dangling.json", `{"title": "d", "body": "`+absent+`"}`)
	for _, args := range [][]string{
		{"cas", "get", absent},
		{"cas", "get", "--json", absent},
		{"cas", "refs", absent},
		{"cas", "walk", absent},
		{"cas", "walk", "--tree", absent},
		{"cas", "schema", "get", "nope"},
		{"cas", "schema", "get", absent},
		{"cas", "put", "nope", "dangling.json"},
		{"cas", "put", "--batch", "nope"},
		{"cas", "put", "note", "dangling.json"},
		{"cas", "ref", "log", "threads/nope"},
		{"cas", "ref", "rm", "threads/nope"},
		{"cas", "ref", "restore", "threads/nope"},
		{"cas", "ref", "set", "x", absent},
	} {
		r := e.run("", args...)
		if r.code != 3 || r.stdout != "" || !strings.HasPrefix(r.stderr, "uwf: ") {
			t.Errorf("uwf %q: %v\nwant exit 3", args, r)
		}
	}
	if r := e.run("", "cas", "has", absent); r.code != 3 || r.stdout != "no\n" || r.stderr != "" {
		t.Errorf("has absent: %v", r)
	}
	if r := e.run("", "cas", "has", note.String()); r.code != 0 || r.stdout != "yes\n" || r.stderr != "" {
		t.Errorf("has present: %v", r)
	}
	// Ref names that clash with an existing one (case, folder) conflict.
	for _, name := range []string{"Note", "note/sub"} {
		r := e.run("", "cas", "schema", "put", "note.yaml", "--name", name)
		if r.code != 4 || r.stdout != "" || !strings.Contains(r.stderr, "schemas/note") {
			t.Errorf("schema put --name %s: %v\nwant exit 4 naming schemas/note", name, r)
		}
	}
}

// TestCorruptAndFsck checks get, walk and fsck on a damaged store.
func TestCorruptAndFsck(t *testing.T) {
	e := newEnv(t)
	hello, note := setupNotes(e)
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck on a good store: %q", out)
	}
	e.ok("", "cas", "ref", "list") // the store's refs are fine
	e.corrupt(hello)
	for _, args := range [][]string{{"cas", "get", hello.String()}, {"cas", "walk", note.String()}} {
		r := e.run("", args...)
		// walk streams: what it printed before the corrupt node stays.
		if r.code != 1 || (args[1] == "get") != (r.stdout == "") || !strings.Contains(r.stderr, "corrupt") {
			t.Errorf("uwf %q: %v\nwant exit 1, corrupt", args, r)
		}
	}
	r := e.run("", "cas", "fsck")
	if r.code != 1 || !strings.Contains(r.stdout, hello.String()+": corrupt") || r.stderr != "uwf: fsck: 1 problem found\n" {
		t.Errorf("fsck: %v", r)
	}
	r = e.run("", "cas", "fsck", "--json")
	var rep struct {
		OK       bool `json:"ok"`
		Problems []struct {
			Hash        *string  `json:"hash"`
			Kind        string   `json:"kind"`
			ReachedFrom []string `json:"reachedFrom"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.OK || len(rep.Problems) != 1 ||
		rep.Problems[0].Kind != "corrupt" || *rep.Problems[0].Hash != hello.String() {
		t.Errorf("fsck --json: %v (%v)", r, err)
	}
}

// TestGC checks that gc reclaims what no root reaches, and only that.
func TestGC(t *testing.T) {
	e := newEnv(t)
	hello, note := setupNotes(e)
	kept := e.okHash("", "cas", "put-text", "kept") // a node put just before GC
	e.clock.Advance(2 * time.Hour)
	fresh := e.okHash("", "cas", "put-text", "fresh")
	n := len(e.objects())
	r := e.run("", "cas", "gc", "--json", "--dry-run")
	var st struct {
		DryRun    bool     `json:"dryRun"`
		Scanned   int      `json:"scanned"`
		Reachable int      `json:"reachable"`
		Deleted   int      `json:"deleted"`
		Failures  []string `json:"failures"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 || !st.DryRun || st.Scanned != n || st.Deleted != 3 || st.Failures == nil {
		t.Errorf("gc --dry-run: %v (%v) %+v", r, err, st)
	}
	if len(e.objects()) != n {
		t.Errorf("gc --dry-run deleted objects")
	}
	e.ok("", "cas", "gc")
	for h, want := range map[cas.Hash]string{hello: "no\n", note: "no\n", kept: "no\n", fresh: "yes\n"} {
		if got := e.run("", "cas", "has", h.String()).stdout; got != want {
			t.Errorf("after gc, has %s = %q, want %q", h, got, want)
		}
	}
	e.clock.Advance(time.Millisecond)
	e.ok("", "cas", "gc", "--grace", "0")
	if got := e.run("", "cas", "has", fresh.String()).stdout; got != "no\n" {
		t.Errorf("after gc --grace 0, has %s = %q", fresh, got)
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck after gc: %q", out)
	}
}

// TestInterrupted checks that a cancelled context exits 130.
func TestInterrupted(t *testing.T) {
	e := newEnv(t)
	e.ok("", "cas", "put-text", "x")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := e.runContext(ctx, strings.NewReader("EYHPV6X8XHTCS\n"), "cas", "get", "--batch")
	if r.code != 130 {
		t.Errorf("get --batch with a cancelled context: %v", r)
	}
}

// TestStoreURL checks the --store forms: a path, file://, ?durability=,
// and the PostgreSQL placeholder.
func TestStoreURL(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "s")
	h := e.okHash("", "--store", dir, "cas", "put-text", "x")
	for _, url := range []string{dir, "file://" + dir, "file://" + dir + "?durability=none", dir + "?durability=strict"} {
		if out := e.ok("", "--store", url, "cas", "has", h.String()); out != "yes\n" {
			t.Errorf("--store %s: has = %q", url, out)
		}
	}
	if _, err := os.Stat(e.home); err == nil {
		t.Errorf("--store used %s", e.home)
	}
	// A PostgreSQL URL selects the PostgreSQL backend (nothing listens on
	// port 1): the error names the store without its password.
	for url, want := range map[string]string{
		"postgres://u:secret@127.0.0.1:1/db": "uwf: open store postgres://u:xxxxx@127.0.0.1:1/db: ",
		"postgresql://u@127.0.0.1:1/db":      "uwf: open store postgresql://u@127.0.0.1:1/db: ",
	} {
		r := e.run("", "--store", url, "cas", "has", h.String())
		if r.code != 1 || !strings.HasPrefix(r.stderr, want) || strings.Contains(r.stderr, "secret") {
			t.Errorf("--store %s: %v", url, r)
		}
	}
	t.Setenv("UWF_STORE", dir)
	if out := e.ok("", "cas", "has", h.String()); out != "yes\n" {
		t.Errorf("UWF_STORE: has = %q", out)
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0}, {"1h", time.Hour}, {"90m", 90 * time.Minute}, {"7d", 7 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour}, {"0d", 0}, {"30d", 30 * 24 * time.Hour}, {"1.5h", 90 * time.Minute},
	} {
		if got, err := parseDuration(tc.in); err != nil || got != tc.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "x", "-1h", "d", "1.5d", "-1d", "1d-1h", "1dd", "99999999999d", "1h1d", "7 d"} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}
