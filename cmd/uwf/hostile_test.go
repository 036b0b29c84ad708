package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// tree is a snapshot of a folder: each path (relative, "/" for folders)
// and a digest of each file's bytes.
type tree map[string]string

func snapshot(t *testing.T, root string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// diff lists what differs between two snapshots, skipping paths for which
// skip is true.
func (a tree) diff(b tree, skip func(string) bool) []string {
	var out []string
	for p, h := range a {
		if skip != nil && skip(p) {
			continue
		}
		if g, ok := b[p]; !ok {
			out = append(out, "removed "+p)
		} else if g != h {
			out = append(out, "changed "+p)
		}
	}
	for p := range b {
		if skip != nil && skip(p) {
			continue
		}
		if _, ok := a[p]; !ok {
			out = append(out, "added "+p)
		}
	}
	return out
}

// hostileCase is one hostile command: it must exit with code, say what is
// wrong (every string in msg, on stderr), and leave the home (the store
// included) and everything around it as they were.
type hostileCase struct {
	name  string
	stdin string
	args  []string
	code  int
	msg   []string
	// objectsMayStay: the command may store verified objects before it
	// finds the problem (a tar cut short); refs and logs stay as they
	// were.
	objectsMayStay bool
}

func runHostile(t *testing.T, e *env, cases []hostileCase) {
	t.Helper()
	outside := filepath.Dir(e.home) // the temporary folder that holds the home
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, around, cwd := snapshot(t, e.home), snapshot(t, outside), snapshot(t, e.dir)
			r := e.run(tc.stdin, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%v", r.code, tc.code, r)
			}
			if !strings.HasPrefix(r.stderr, "uwf: ") || strings.Count(r.stderr, "\n") > 3 {
				t.Errorf("stderr %q, want one clear error", r.stderr)
			}
			for _, m := range tc.msg {
				if !strings.Contains(r.stderr, m) {
					t.Errorf("stderr %q lacks %q", r.stderr, m)
				}
			}
			var skip func(string) bool
			if tc.objectsMayStay {
				skip = func(p string) bool { return strings.HasPrefix(p, filepath.Join("store", "objects")) }
			}
			if d := home.diff(snapshot(t, e.home), skip); len(d) > 0 {
				t.Errorf("the home changed: %q", d)
			}
			if d := around.diff(snapshot(t, outside), func(p string) bool { return strings.HasPrefix(p, "home") }); len(d) > 0 {
				t.Errorf("something was written beside the home: %q", d)
			}
			if d := cwd.diff(snapshot(t, e.dir), nil); len(d) > 0 {
				t.Errorf("something was written in the working folder: %q", d)
			}
		})
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck after the hostile commands: %q", out)
	}
}

// nested returns a JSON (or YAML flow) value nested depth levels deep.
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// rawTar writes entries with the given headers, each followed by data.
func rawTar(t *testing.T, close bool, entries ...struct {
	hdr  tar.Header
	data string
}) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, en := range entries {
		h := en.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if en.data != "" {
			if _, err := tw.Write([]byte(en.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if close {
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
	} // else: only the headers, as a hand-made tar that lies about sizes
	return buf.String()
}

type tarEntry = struct {
	hdr  tar.Header
	data string
}

// TestHostileInput feeds the CLI hostile input: deep and huge JSON and
// YAML, alias bombs, invalid UTF-8 and lone surrogates, hashes and names
// with "..", "/", NUL and absolute paths, truncated and hand-crafted tars.
// Each gets a clear error and the right exit code, and leaves the store as
// it was and nothing written outside the home.
func TestHostileInput(t *testing.T) {
	e := newEnv(t)
	hello, note := setupNotes(e)
	e.write("any.json", `{}`)
	e.ok("", "cas", "schema", "put", "any.json", "--name", "any")

	e.write("deep.json", nested(1001))
	e.write("deep.yaml", "a: "+nested(1000)+"\n")
	e.write("huge.json", `"`+strings.Repeat("a", 16<<20)+`"`)
	var bomb strings.Builder
	bomb.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 'b'; i <= 'j'; i++ {
		p := string(i - 1)
		bomb.WriteString(string(i) + ": &" + string(i) + " [*" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + "]\n")
	}
	e.write("bomb.yaml", bomb.String())
	e.write("utf8.json", "\"\xff\xfe\"")
	e.write("surrogate.json", `"\ud800"`)
	e.write("lowsurrogate.yaml", "\"\\udc00\"\n")
	e.write("dup.json", `{"title":"a","title":"b","body":"`+hello.String()+`"}`)
	e.write("s.json", `{}`)

	// Another store's export: a note this store lacks, then cut.
	e.write("n9.json", `{"title": "elsewhere", "body": "`+hello.String()+`"}`)
	e.ok("", "--store", "other", "cas", "schema", "put", "note.yaml", "--name", "note")
	e.ok("", "--store", "other", "cas", "put-text", "hello")
	n9 := e.okHash("", "--store", "other", "cas", "put", "note", "n9.json")
	e.ok("", "--store", "other", "cas", "ref", "list") // the store exists
	full := e.run("", "--store", "other", "cas", "export")
	if full.code != 0 {
		t.Fatalf("export: %v", full)
	}
	cutAtEntry := cutBeforeEntry(t, full.stdout, "refs/")
	if err := os.RemoveAll(filepath.Join(e.dir, "other")); err != nil {
		t.Fatal(err)
	}

	obj := "objects/" + hello.String()
	helloBytes := `{"payload":"hello","type":"` + cas.ContentSchema.String() + `"}`
	_ = n9
	cases := []hostileCase{
		{name: "JSON nested too deep", args: []string{"cas", "put", "any", "deep.json"}, code: 1, msg: []string{"deep.json", "nesting deeper than 1000 levels"}},
		{name: "YAML nested too deep", args: []string{"cas", "put", "any", "deep.yaml"}, code: 1, msg: []string{"deep.yaml", "nesting deeper than 1000 levels"}},
		{name: "JSON on stdin nested too deep", stdin: nested(5000), args: []string{"cas", "put", "any", "-"}, code: 1, msg: []string{"nesting deeper than 1000 levels"}},
		{name: "huge JSON", args: []string{"cas", "put", "content", "huge.json"}, code: 1, msg: []string{"limit"}},
		{name: "huge text", stdin: strings.Repeat("a", 17<<20), args: []string{"cas", "put-text", "-"}, code: 1, msg: []string{"limit"}},
		{name: "YAML alias bomb", args: []string{"cas", "put", "any", "bomb.yaml"}, code: 1, msg: []string{"bomb.yaml", "alias"}},
		{name: "invalid UTF-8", args: []string{"cas", "put", "content", "utf8.json"}, code: 1, msg: []string{"utf8.json", "UTF-8"}},
		{name: "lone surrogate", args: []string{"cas", "put", "content", "surrogate.json"}, code: 1, msg: []string{"surrogate.json", "surrogate"}},
		{name: "lone low surrogate in YAML", args: []string{"cas", "put", "content", "lowsurrogate.yaml"}, code: 1, msg: []string{"lowsurrogate.yaml"}},
		{name: "invalid UTF-8 argument", args: []string{"cas", "put-text", "a\xffb"}, code: 1, msg: []string{"UTF-8"}},
		{name: "duplicate key", args: []string{"cas", "put", "note", "dup.json"}, code: 1, msg: []string{"dup.json", `duplicate key "title"`}},
		{name: "hash with ..", args: []string{"cas", "get", "../../../etc/pa"}, code: 2, msg: []string{"../../../etc/pa"}},
		{name: "hash with /", args: []string{"cas", "has", "ABCDEF/GHJKMN"}, code: 2, msg: []string{"ABCDEF/GHJKMN"}},
		{name: "absolute path as hash", args: []string{"cas", "walk", "/etc/passwd"}, code: 2, msg: []string{"/etc/passwd"}},
		{name: "hash with NUL", args: []string{"cas", "refs", "ABCDEF\x00GHJKMN"}, code: 2, msg: []string{"hash"}},
		{name: "hash of the wrong length", args: []string{"cas", "get", hello.String() + "0"}, code: 2, msg: []string{hello.String() + "0"}},
		{name: "type with ..", args: []string{"cas", "put", "../note", "s.json"}, code: 2, msg: []string{"../note"}},
		{name: "schema name with ..", args: []string{"cas", "schema", "put", "s.json", "--name", "../../evil"}, code: 2, msg: []string{"../../evil"}},
		{name: "schema name absolute", args: []string{"cas", "schema", "put", "s.json", "--name", "/tmp/evil"}, code: 2, msg: []string{"/tmp/evil"}},
		{name: "schema name with NUL", args: []string{"cas", "schema", "put", "s.json", "--name", "a\x00b"}, code: 2, msg: []string{"name"}},
		{name: "ref log of ..", args: []string{"cas", "ref", "log", "../../etc/passwd"}, code: 2, msg: []string{"../../etc/passwd"}},
		{name: "export root with ..", args: []string{"cas", "export", "../x"}, code: 2, msg: []string{"../x"}},
		{name: "thread with ..", args: []string{"thread", "show", "../../x"}, code: 2, msg: []string{"../../x"}},
		{name: "file outside as input is read, not written", args: []string{"cas", "put", "note", "/nonexistent/x.json"}, code: 1, msg: []string{"/nonexistent/x.json"}},
		{name: "tar cut at an entry boundary", stdin: cutAtEntry, args: []string{"cas", "import"}, code: 1, msg: []string{"cut short"}, objectsMayStay: true},
		{name: "tar cut inside an entry", stdin: full.stdout[:len(full.stdout)/2+7], args: []string{"cas", "import"}, code: 1, msg: []string{"cut short"}, objectsMayStay: true},
		{name: "tar entry with ..", stdin: rawTar(t, true, tarEntry{tar.Header{Name: "objects/../../../evil", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}, "x"}),
			args: []string{"cas", "import"}, code: 1, msg: []string{"objects/../../../evil", "unsafe path"}},
		{name: "tar entry absolute", stdin: rawTar(t, true, tarEntry{tar.Header{Name: "/etc/evil", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}, "x"}),
			args: []string{"cas", "import"}, code: 1, msg: []string{"/etc/evil", "unsafe path"}},
		{name: "tar symlink", stdin: rawTar(t, true, tarEntry{tar.Header{Name: obj, Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}, ""}),
			args: []string{"cas", "import"}, code: 1, msg: []string{obj, "only regular files"}},
		{name: "tar hard link", stdin: rawTar(t, true, tarEntry{tar.Header{Name: "refs/x", Linkname: "../../etc/passwd", Typeflag: tar.TypeLink}, ""}),
			args: []string{"cas", "import"}, code: 1, msg: []string{"refs/x", "only regular files"}},
		{name: "tar entry claiming a huge size", stdin: rawTar(t, false, tarEntry{tar.Header{Name: obj, Mode: 0o644, Size: 1 << 40, Typeflag: tar.TypeReg}, ""}),
			args: []string{"cas", "import"}, code: 1, msg: []string{obj, "limit"}},
		{name: "tar ref claiming a huge size", stdin: rawTar(t, false, tarEntry{tar.Header{Name: "refs/big", Mode: 0o644, Size: 1 << 33, Typeflag: tar.TypeReg}, ""}),
			args: []string{"cas", "import"}, code: 1, msg: []string{"refs/big", "limit"}},
		{name: "tar object under another name", stdin: rawTar(t, true, tarEntry{tar.Header{Name: "objects/" + note.String(), Mode: 0o644, Size: int64(len(helloBytes)), Typeflag: tar.TypeReg}, helloBytes}),
			args: []string{"cas", "import"}, code: 1, msg: []string{note.String(), "corrupt"}},
		{name: "tar ref to nothing", stdin: rawTar(t, true, tarEntry{tar.Header{Name: "refs/x", Mode: 0o644, Size: 14, Typeflag: tar.TypeReg}, "0000000000001\n"}),
			args: []string{"cas", "import"}, code: 3, msg: []string{"refs/x", "0000000000001"}},
		{name: "tar ref with a bad name", stdin: rawTar(t, true, tarEntry{tar.Header{Name: "refs/.hidden", Mode: 0o644, Size: 14, Typeflag: tar.TypeReg}, hello.String() + "\n"}),
			args: []string{"cas", "import"}, code: 1, msg: []string{"refs/.hidden"}},
		{name: "not a tar", stdin: strings.Repeat("\x00garbage", 200), args: []string{"cas", "import"}, code: 1, msg: []string{"tar"}},
	}
	runHostile(t, e, cases)
}

// cutBeforeEntry returns the tar data up to (not including) the first
// entry whose name starts with prefix: a tar cut at an entry boundary.
func cutBeforeEntry(t *testing.T, data, prefix string) string {
	t.Helper()
	for off := 0; off+512 <= len(data); off += 512 {
		block := data[off : off+512]
		name := strings.TrimRight(block[:100], "\x00")
		if strings.HasPrefix(name, prefix) && tarChecksumOK(block) {
			return data[:off]
		}
	}
	t.Fatalf("no entry %s* in the tar", prefix)
	return ""
}

// tarChecksumOK reports whether block is a tar header: its checksum field
// matches.
func tarChecksumOK(block string) bool {
	sum := 0
	for i := range 512 {
		if i >= 148 && i < 156 {
			sum += ' '
		} else {
			sum += int(block[i])
		}
	}
	field := strings.Trim(block[148:156], " \x00")
	n := 0
	for _, c := range field {
		if c < '0' || c > '7' {
			return false
		}
		n = n*8 + int(c-'0')
	}
	return n == sum && field != ""
}

// TestDeepestPayloadThroughCLI: a payload as deep as put accepts (JSON and
// YAML) is read back by every command: get, refs, walk, fsck, export,
// import into another store, and gc.
func TestDeepestPayloadThroughCLI(t *testing.T) {
	e := newEnv(t)
	e.write("any.json", `{}`)
	e.ok("", "cas", "schema", "put", "any.json", "--name", "any")
	e.write("deep.json", nested(1000))
	e.write("deep.yaml", "["+nested(999)+", -0, 1e21, 5e-324]\n")
	for _, file := range []string{"deep.json", "deep.yaml"} {
		h := e.okHash("", "cas", "put", "any", file).String()
		if got := e.ok("", "cas", "get", h); !strings.Contains(got, nested(999)) {
			t.Errorf("cas get %s: %.80q..., want the payload", h, got)
		}
		e.ok("", "cas", "refs", h)
		if walk := e.ok("", "cas", "walk", h); !strings.HasPrefix(walk, h+" ") {
			t.Errorf("cas walk %s = %q", h, walk)
		}
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck: %q", out)
	}
	tarData := e.run("", "cas", "export")
	if tarData.code != 0 {
		t.Fatalf("export: %v", tarData)
	}
	if r := e.run(tarData.stdout, "--store", "other", "cas", "import"); r.code != 0 {
		t.Fatalf("import: %v", r)
	}
	if out := e.ok("", "--store", "other", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck of the imported store: %q", out)
	}
	e.ok("", "cas", "gc", "--grace", "0")
	e.ok("", "--store", "other", "cas", "gc", "--dry-run")
}

// TestHostileAgentOutput runs agents whose output is nested too deep, or
// as deep as allowed, or full of control characters: the first fails the
// step with a clear error and moves nothing; the others are stored and
// read back (thread read, step show, fsck, export, gc).
func TestHostileAgentOutput(t *testing.T) {
	e := newEnv(t)
	e.write("deep.yaml", `name: deep
roles:
  worker:
    goal: Work.
    frontmatter:
      type: object
      properties:
        status: { const: done }
        data: {}
        note: { type: string }
      required: [status]
graph:
  $START: { new: { role: worker, prompt: "Work." } }
  worker:
    done: { role: $END, prompt: "" }
`)
	e.ok("", "workflow", "put", "deep.yaml")
	// The frontmatter's data is nested 999 levels (the payload 1000) or
	// 1000 (the payload 1001: too deep).
	e.write("ok.out", "---\nstatus: done\ndata: "+nested(999)+"\n---\nbody\n")
	e.write("deep.out", "---\nstatus: done\ndata: "+nested(1000)+"\n---\nbody\n")
	e.write("ctrl.out", "---\nstatus: done\nnote: \"bell \\a esc \\e[31m nul \\0 del \\x7f\"\n---\nbody \x1b[31mred\x1b[0m \x07 \x7f\n")
	var cfg strings.Builder
	cfg.WriteString("agents:\n")
	for _, name := range []string{"ok", "deep", "ctrl"} {
		path := e.script(name+".sh", "cat >/dev/null\ncat "+filepath.Join(e.dir, name+".out")+"\n")
		cfg.WriteString("  " + name + ": {command: " + path + "}\n")
	}
	e.writeConfig(cfg.String())

	// Too deep: the step fails, naming the problem; the thread stays.
	id := strings.TrimSpace(e.ok("", "thread", "start", "deep", "-p", "go", "--cwd", "/"))
	before := e.ok("", "thread", "show", id)
	r := e.run("", "thread", "step", id, "--agent", "deep")
	if r.code != 1 || !strings.Contains(r.stderr, "nesting deeper than 1000 levels") {
		t.Errorf("thread step with too deep output: %v", r)
	}
	if after := e.ok("", "thread", "show", id); !strings.HasPrefix(after, before) {
		t.Errorf("the thread moved:\n%s\nwant it at\n%s", after, before)
	}

	for _, agent := range []string{"ok", "ctrl"} {
		id := strings.TrimSpace(e.ok("", "thread", "start", "deep", "-p", "go "+agent, "--cwd", "/"))
		if r := e.run("", "thread", "step", id, "--agent", agent); r.code != 0 {
			t.Fatalf("thread step --agent %s: %v", agent, r)
		}
		read := e.ok("", "thread", "read", id)
		if !strings.Contains(read, "body") {
			t.Errorf("thread read %s lacks the body:\n%s", id, read)
		}
		steps := e.stepsOf(id)
		var st stepJSON
		e.okJSON(&st, "step", "show", steps[1][1])
		if agent == "ctrl" && !strings.Contains(st.Value["note"].(string), "\x1b[31m") {
			t.Errorf("the note lost its control characters: %q", st.Value["note"])
		}
		if agent == "ok" && st.Value["data"] == nil {
			t.Errorf("step show: no data in %+v", st.Value)
		}
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck: %q", out)
	}
	if r := e.run("", "cas", "export"); r.code != 0 {
		t.Errorf("export: %v", r)
	}
	e.ok("", "cas", "gc", "--grace", "0")
}
