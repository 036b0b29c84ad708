package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// objectPath returns the file of object h in the disk store.
func (e *env) objectPath(h cas.Hash) string {
	e.t.Helper()
	s := h.String()
	return filepath.Join(e.storeDir(), "objects", s[len(s)-2:], s)
}

// refPath returns the file of ref name in the disk store.
func (e *env) refPath(name string) string {
	return filepath.Join(e.storeDir(), "refs", filepath.FromSlash(strings.ToLower(name)))
}

func (e *env) readFile(path string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) writeFile(path string, b []byte) {
	e.t.Helper()
	os.Chmod(path, 0o644)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// damage is one thing done to the store behind uwf's back, and what fsck
// must say about it: every string in want appears on some problem line.
type damage struct {
	what  string
	apply func()
	want  []string
}

// flipBits, truncate, swap and remove are the ways files get damaged.
func (e *env) flipBits(path string) {
	b := e.readFile(path)
	b[len(b)/2] ^= 0x21
	e.writeFile(path, b)
}

func (e *env) truncate(path string) {
	b := e.readFile(path)
	e.writeFile(path, b[:len(b)/3])
}

func (e *env) swap(p, q string) {
	a, b := e.readFile(p), e.readFile(q)
	e.writeFile(p, b)
	e.writeFile(q, a)
}

func (e *env) remove(path string) {
	e.t.Helper()
	if err := os.Remove(path); err != nil {
		e.t.Fatal(err)
	}
}

// schemaDamages damages schema refs and objects: a user schema's ref, and
// built-in schemas' refs and objects (flipped bits and deleted files).
// The built-ins are constants of the format: commands go on using their
// known bytes, fsck reports each once, as a builtin problem (not also as a
// bad-ref or missing-ref), and fsck --repair puts them back.
func schemaDamages(e *env, userSchema string) []damage {
	ref := "schemas/" + userSchema
	return []damage{
		{"truncate the ref of a user schema", func() { e.truncate(e.refPath(ref)) }, []string{"ref " + ref + " -> ", ": bad-ref: "}},
		{"flip bits in the ref of the built-in schema workflow", func() { e.flipBits(e.refPath("schemas/workflow")) },
			[]string{"ref schemas/workflow: builtin: the ref of the built-in schema workflow cannot be read: file " + e.refPath("schemas/workflow") + ": "}},
		{"delete the ref of the built-in schema step", func() { e.remove(e.refPath("schemas/step")) },
			[]string{"ref schemas/step: builtin: the ref of the built-in schema step is missing"}},
		{"flip bits in the built-in schema start", func() { e.flipBits(e.objectPath(cas.StartSchema)) },
			[]string{cas.StartSchema.String() + ": builtin: the built-in schema start is corrupt: "}},
		{"delete the built-in schema mark", func() { e.remove(e.objectPath(cas.MarkSchema)) },
			[]string{cas.MarkSchema.String() + ": builtin: the built-in schema mark is not in the store"}},
	}
}

// builtinRepairs is what fsck --repair prints for the built-in damage of
// schemaDamages, in order.
func builtinRepairs(e *env) string {
	return "repaired ref schemas/workflow -> " + cas.WorkflowSchema.String() + ": rewrote the unreadable ref of the built-in schema workflow (file " + e.refPath("schemas/workflow") + ")\n" +
		"repaired " + cas.StartSchema.String() + ": put back the built-in schema start\n" +
		"repaired ref schemas/step -> " + cas.StepSchema.String() + ": created the ref of the built-in schema step\n" +
		"repaired " + cas.MarkSchema.String() + ": put back the built-in schema mark\n"
}

// TestDamage damages a store of a few hundred nodes and several threads
// in every way at once (object files and ref files flipped, truncated,
// swapped, deleted, built-in schemas' included), then checks: one fsck run
// reports every damaged reachable object and every bad or missing ref, and
// exits 1; GC deletes nothing while a ref cannot be read or a reachable
// node is damaged; meanwhile threads start, step and are shown, read and
// listed, and workflows listed; fsck --repair puts the built-ins back; ref
// restore brings the other refs back with their history; after the
// objects are repaired from a backup, fsck is clean and every thread
// works.
func TestDamage(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.write("note.yaml", noteSchema)
	e.okHash("", "cas", "schema", "put", "note.yaml", "--name", "note")
	const nThreads = 8
	var threads []string
	for i := range nThreads {
		e.clock.Advance(time.Second)
		out := e.ok("", "thread", "run", "review-loop.yaml", "-p", fmt.Sprintf("task %d: add a --flag-%d", i, i), "--agent", "synth", "--cwd", "/")
		threads = append(threads, strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "thread "))
	}
	// Notes no ref reaches: GC's candidates, which it must not delete
	// while the store is damaged. One note is named by a ref made with
	// "ref set" (a creation, and nothing after it).
	var notes []cas.Hash
	for i := range 200 {
		notes = append(notes, e.okHash("", "cas", "put-text", fmt.Sprintf("note %d", i)))
	}
	hello := e.okHash("", "cas", "put-text", "hello")
	e.write("n1.json", `{"title": "first", "body": "`+hello.String()+`", "links": []}`)
	note := e.okHash("", "cas", "put", "note", "n1.json")
	e.ok("", "cas", "ref", "set", "notes/first", note.String())
	if n := len(e.objects()); n < 300 {
		t.Fatalf("the store holds %d objects, want a few hundred", n)
	}
	exp := e.run("", "cas", "export")
	if exp.code != 0 {
		t.Fatalf("export: exit %d: %s", exp.code, exp.stderr)
	}
	backup := exp.stdout
	threadList := e.ok("", "thread", "list")
	refLog := func(name string) string { return e.ok("", "cas", "ref", "log", name) }
	logsBefore := map[string]string{}
	for _, name := range []string{"threads/" + threads[5], "threads/" + threads[4], "threads/" + threads[6], "schemas/note", "notes/first"} {
		logsBefore[name] = refLog(name)
	}
	steps := make([][][]string, nThreads)
	for i, id := range threads {
		steps[i] = e.stepsOf(id)
		if len(steps[i]) < 5 {
			t.Fatalf("thread %s has %d chain nodes", id, len(steps[i]))
		}
	}
	chain := func(i, depth int) cas.Hash {
		h, err := cas.ParseHash(steps[i][depth][1])
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	th := func(i int) string { return "threads/" + threads[i] }

	// Long after: log retention and grace have passed for everything.
	e.clock.Advance(90 * 24 * time.Hour)
	damages := []damage{
		{"flip bits in a step of thread 0", func() { e.flipBits(e.objectPath(chain(0, 2))) },
			[]string{chain(0, 2).String() + ": corrupt: ", th(0)}},
		{"truncate a step of thread 1", func() { e.truncate(e.objectPath(chain(1, 3))) },
			[]string{chain(1, 3).String() + ": corrupt: ", th(1)}},
		{"swap two steps of thread 2", func() { e.swap(e.objectPath(chain(2, 1)), e.objectPath(chain(2, 2))) },
			[]string{chain(2, 1).String() + ": corrupt: ", chain(2, 2).String() + ": corrupt: "}},
		{"delete a step of thread 3", func() { e.remove(e.objectPath(chain(3, 2))) },
			[]string{chain(3, 3).String() + ": missing-edge: edge payload/prev -> " + chain(3, 2).String()}},
		{"flip bits in the ref of thread 4", func() { e.flipBits(e.refPath(th(4))) },
			[]string{"ref " + th(4) + " -> " + chain(4, len(steps[4])-1).String() + ": bad-ref: "}},
		{"delete the ref of thread 5", func() { e.remove(e.refPath(th(5))) },
			[]string{"ref " + th(5) + " -> " + chain(5, len(steps[5])-1).String() + ": missing-ref: "}},
		{"swap the refs of threads 6 and 7", func() { e.swap(e.refPath(th(6)), e.refPath(th(7))) },
			[]string{"ref " + th(6) + " -> " + chain(6, len(steps[6])-1).String() + ": bad-ref: ",
				"ref " + th(7) + " -> " + chain(7, len(steps[7])-1).String() + ": bad-ref: "}},
		{"delete a ref that was only created", func() { e.remove(e.refPath("notes/first")) },
			[]string{"ref notes/first -> " + note.String() + ": missing-ref-or-interrupted-create: "}},
	}
	damages = append(damages, schemaDamages(e, "note")...)
	for _, d := range damages {
		d.apply()
	}
	objects := e.objects()

	// fsck: every damage in one run, exit 1.
	r := e.run("", "cas", "fsck", "--dangling")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "uwf: fsck: ") {
		t.Fatalf("fsck on the damaged store: %v", r)
	}
	lines := strings.Split(r.stdout, "\n")
	for _, d := range damages {
		for _, w := range d.want {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
				t.Errorf("%s: fsck does not say %q:\n%s", d.what, w, r.stdout)
			}
		}
	}
	// Each damaged built-in is one problem, not also a bad or missing ref.
	for _, prefix := range []string{"ref schemas/workflow:", "ref schemas/step:", "ref schemas/workflow ", "ref schemas/step ",
		cas.StartSchema.String() + ":", cas.MarkSchema.String() + ":"} {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[strings.HasSuffix(prefix, ":")]; n != want {
			t.Errorf("fsck has %d lines starting with %q, want %d:\n%s", n, prefix, want, r.stdout)
		}
	}
	// The lost thread's head is not dangling: it is reported as its ref's
	// missing-ref problem (checked above), and GC keeps it.
	if nope := "dangling " + chain(5, len(steps[5])-1).String() + " "; strings.Contains(r.stdout, nope) {
		t.Errorf("fsck --dangling lists the head of thread 5, whose ref is missing (%q):\n%s", nope, r.stdout)
	}

	// thread list and ref list print the rest, name the bad refs, exit 1.
	r = e.run("", "thread", "list")
	if r.code != 1 || !strings.Contains(r.stderr, th(4)) || !strings.Contains(r.stderr, th(6)) || !strings.Contains(r.stderr, th(7)) {
		t.Errorf("thread list on the damaged store: %v", r)
	}
	for i, id := range threads {
		if listed := strings.Contains(r.stdout, id); listed != (i <= 3) {
			t.Errorf("thread list lists thread %d: %v, want %v:\n%s", i, listed, i <= 3, r.stdout)
		}
	}
	r = e.run("", "cas", "ref", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "schemas/note") || !strings.Contains(r.stderr, "schemas/workflow") ||
		!strings.Contains(r.stdout, th(0)) || strings.Contains(r.stdout, "schemas/note") {
		t.Errorf("ref list on the damaged store: %v", r)
	}

	// GC refuses, names only the bad refs, deletes nothing.
	r = e.run("", "cas", "gc", "--grace", "0", "--log-retention", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "nothing deleted") {
		t.Errorf("gc on the damaged store: %v", r)
	}
	for _, name := range []string{th(4), th(6), th(7), "schemas/note", "schemas/workflow"} {
		if !strings.Contains(r.stderr, name) {
			t.Errorf("gc does not name bad ref %s: %s", name, r.stderr)
		}
	}
	for _, name := range []string{th(0), th(5), "notes/first", "schemas/step"} {
		if strings.Contains(r.stderr, name) {
			t.Errorf("gc names %s, which is not a bad ref: %s", name, r.stderr)
		}
	}
	if got := e.objects(); !slices.Equal(got, objects) {
		t.Fatalf("gc deleted %d objects from a damaged store", len(objects)-len(got))
	}

	// Meanwhile the other commands work, the built-ins' damage
	// notwithstanding (they use their known bytes): a new thread starts
	// (a start node, whose schema object is corrupt) and steps, and is
	// shown, read and listed; the workflows are listed and shown.
	e.clock.Advance(time.Second)
	fresh := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "task 8: while the built-ins are damaged", "--cwd", "/"))
	e.ok("", "thread", "step", fresh, "--agent", "synth")
	if st := e.stepsOf(fresh); len(st) != 2 || st[1][2] != "step" {
		t.Errorf("thread steps of the new thread: %v, want a start and a step", st)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"thread", "show", fresh}, fresh},
		{[]string{"thread", "read", fresh}, "task 8: while the built-ins are damaged"},
		{[]string{"workflow", "list"}, "review-loop "},
		{[]string{"workflow", "show", "review-loop"}, "workflow:    review-loop"},
		{[]string{"cas", "schema", "get", "start"}, `"type":"object"`},
	} {
		if out := e.ok("", tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("uwf %q with damaged built-ins printed:\n%s\nwant %q in it", tc.args, out, tc.want)
		}
	}
	if r := e.run("", "thread", "list"); r.code != 1 || !strings.HasPrefix(r.stdout, fresh+" active ") {
		t.Errorf("thread list does not list the new thread first: %v", r)
	}
	objects = e.objects()

	// A plain set or rm of a bad or missing ref is refused; restore
	// brings each back with its history.
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"cas", "ref", "set", th(4), chain(4, 1).String()}, 1}, // cannot be read
		{[]string{"cas", "ref", "rm", th(5)}, 4},                        // missing: the ref and its log disagree
		{[]string{"cas", "ref", "set", "notes/first", hello.String()}, 4},
	} {
		if r := e.run("", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, "--force") || !strings.Contains(r.stderr, "ref restore") {
			t.Errorf("uwf %q: %v; want exit %d and a refusal pointing at restore and --force", tc.args, r, tc.code)
		}
	}
	// fsck --repair puts the built-ins back, and only them: the rest of
	// the damage is still reported.
	r = e.run("", "cas", "fsck", "--repair")
	if r.code != 1 || !strings.HasPrefix(r.stdout, builtinRepairs(e)) || strings.Contains(r.stdout, ": builtin: ") ||
		!strings.Contains(r.stdout, ": bad-ref: ") {
		t.Errorf("fsck --repair on the damaged store: %v\nwant exit 1 and first:\n%s", r, builtinRepairs(e))
	}
	if got, want := e.objects(), slices.Sorted(slices.Values(append(slices.Clone(objects), cas.MarkSchema))); !slices.Equal(got, want) {
		t.Errorf("fsck --repair changed the objects other than putting back the mark schema: %d objects, want %d", len(got), len(want))
	}
	objects = e.objects()
	for _, name := range []string{"schemas/workflow", "schemas/step"} {
		if log := refLog(name); !strings.HasSuffix(log, " restore built-in schema "+strings.TrimPrefix(name, "schemas/")+"\n") {
			t.Errorf("log of %s after fsck --repair:\n%s\nwant a restore entry last", name, log)
		}
	}
	for _, name := range []string{th(4), th(5), th(6), th(7), "schemas/note", "notes/first"} {
		e.ok("", "cas", "ref", "restore", name)
	}
	for name, before := range logsBefore {
		after := refLog(name)
		if !strings.HasPrefix(after, before) || strings.Count(after, "\n") != strings.Count(before, "\n")+1 ||
			!strings.Contains(after[len(before):], "restore from log") {
			t.Errorf("log of %s after restore:\n%s\nwant the old log:\n%s\nand one restore entry", name, after, before)
		}
	}

	// The refs are back, but reachable nodes are still damaged: GC still
	// refuses and deletes nothing.
	r = e.run("", "cas", "gc", "--grace", "0", "--log-retention", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "nothing deleted") {
		t.Errorf("gc with damaged reachable nodes: %v", r)
	}
	if got := e.objects(); !slices.Equal(got, objects) {
		t.Fatalf("gc deleted %d objects while reachable nodes are damaged", len(objects)-len(got))
	}

	// Repair the objects from the backup: fsck is clean, every thread is
	// listed again and moves on, and GC collects the unreachable notes.
	if r := e.run(backup, "cas", "import"); r.code != 0 {
		t.Fatalf("import of the backup: exit %d: %s", r.code, r.stderr)
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Fatalf("fsck after repair: %q", out)
	}
	if got := e.ok("", "thread", "list"); !strings.HasSuffix(got, threadList) || !strings.HasPrefix(got, fresh+" ") ||
		strings.Count(got, "\n") != strings.Count(threadList, "\n")+1 {
		t.Errorf("thread list after repair:\n%s\nwant the new thread, then:\n%s", got, threadList)
	}
	e.clock.Advance(time.Millisecond) // the import refreshed every object
	e.ok("", "cas", "gc", "--grace", "0", "--log-retention", "0")
	for _, h := range notes[:3] {
		if got := e.run("", "cas", "has", h.String()).stdout; got != "no\n" {
			t.Errorf("after gc, has %s = %q, want no", h, got)
		}
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Fatalf("fsck after gc: %q", out)
	}
}

// TestRefSetRmRestore: ref set creates and moves a ref, rm deletes it,
// restore brings it back from its log, to its newest value or --to.
func TestRefSetRmRestore(t *testing.T) {
	e := newEnv(t)
	a := e.okHash("", "cas", "put-text", "a")
	b := e.okHash("", "cas", "put-text", "b")
	e.ok("", "cas", "ref", "set", "my/ref", a.String())
	e.ok("", "cas", "ref", "set", "my/ref", b.String())
	if got := e.ok("", "cas", "ref", "list", "my/"); got != b.String()+" my/ref\n" {
		t.Errorf("ref list = %q", got)
	}
	e.ok("", "cas", "ref", "rm", "my/ref")
	if got := e.ok("", "cas", "ref", "list", "my/"); got != "" {
		t.Errorf("ref list after rm = %q", got)
	}
	if got := e.ok("", "cas", "ref", "restore", "my/ref"); got != b.String()+" my/ref\n" {
		t.Errorf("restore = %q", got)
	}
	if got := e.ok("", "cas", "ref", "restore", "--json", "my/ref", "--to", a.String()); got != `{"name":"my/ref","hash":"`+a.String()+`"}`+"\n" {
		t.Errorf("restore --to --json = %q", got)
	}
	log := e.ok("", "cas", "ref", "log", "my/ref")
	for _, want := range []string{
		"0000000000000 -> " + a.String() + " set\n",
		a.String() + " -> " + b.String() + " set\n",
		b.String() + " -> 0000000000000 rm\n",
		"0000000000000 -> " + b.String() + " restore from log to " + b.String() + "\n",
		b.String() + " -> " + a.String() + " restore from log to " + a.String() + "\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("ref log lacks %q:\n%s", want, log)
		}
	}
	if r := e.run("", "cas", "ref", "restore", "my/ref", "--to", cas.Sum([]byte("x")).String()); r.code != 3 {
		t.Errorf("restore --to a value not in the log: %v, want exit 3", r)
	}
	// --force on a healthy ref is a plain change.
	e.ok("", "cas", "ref", "rm", "--force", "my/ref")
	if r := e.run("", "cas", "ref", "rm", "my/ref"); r.code != 3 {
		t.Errorf("rm of a deleted ref: %v, want exit 3", r)
	}
}

// TestRefRepairGolden records, with a fixed clock and thread IDs, what the
// damaged-ref commands print: fsck's ref problems and dangling heads, ref
// list, thread list and gc past a bad ref, the refusals of a plain set or
// rm, restore and the forced changes, in testdata/golden/refs.txt.
func TestRefRepairGolden(t *testing.T) {
	e := newEnv(t)
	tr := &transcript{e: e}
	e.write("review-loop.yaml", reviewLoop)
	t1 := strings.TrimSpace(tr.run("", "thread", "start", "review-loop.yaml", "-p", "Add a --verbose flag", "--cwd", "/").stdout)
	e.clock.Advance(time.Second)
	t2 := strings.TrimSpace(tr.run("", "thread", "start", "review-loop", "-p", "Add a --json flag", "--cwd", "/").stdout)
	a := strings.TrimSpace(tr.run("", "cas", "put-text", "a").stdout)
	b := strings.TrimSpace(tr.run("", "cas", "put-text", "b").stdout)
	tr.run("", "cas", "ref", "set", "notes/x", a)
	e.clock.Advance(time.Second)
	tr.run("", "cas", "ref", "set", "notes/x", b)
	tr.run("", "cas", "ref", "set", "notes/y", a)
	// A thread deleted through uwf: its head is dangling (a missing ref's
	// is not: it is reported as missing-ref, and GC keeps it).
	t3 := strings.TrimSpace(tr.run("", "thread", "start", "review-loop", "-p", "Drop the -q flag", "--cwd", "/").stdout)
	tr.run("", "cas", "ref", "rm", "threads/"+t3)

	// Behind uwf's back: a ref file overwritten, two deleted.
	e.writeFile(e.refPath("notes/x"), []byte("garbage\n"))
	e.remove(e.refPath("threads/" + t1))
	e.remove(e.refPath("notes/y"))
	e.clock.Advance(time.Second)
	tr.run("", "cas", "fsck", "--dangling")
	tr.run("", "cas", "fsck", "--json", "--dangling")
	tr.run("", "cas", "ref", "list", "notes/")
	tr.run("", "thread", "show", t1)
	e.writeFile(e.refPath("threads/"+t2), []byte("0000000000000 threads/"+t2+"\n"))
	tr.run("", "thread", "list")
	tr.run("", "cas", "gc", "--dry-run")

	// Repair.
	tr.run("", "cas", "ref", "set", "notes/x", a)
	tr.run("", "cas", "ref", "rm", "threads/"+t1)
	tr.run("", "cas", "ref", "restore", "threads/"+t1)
	tr.run("", "cas", "ref", "log", "threads/"+t1)
	tr.run("", "cas", "ref", "restore", "threads/"+t2)
	tr.run("", "cas", "ref", "set", "--force", "notes/x", a)
	tr.run("", "cas", "ref", "log", "notes/x")
	tr.run("", "cas", "ref", "rm", "--force", "notes/y")
	tr.run("", "cas", "ref", "log", "notes/y")
	tr.run("", "cas", "ref", "restore", "--json", "notes/y", "--to", a)
	tr.run("", "thread", "list")
	tr.run("", "cas", "fsck")
	golden(t, "refs.txt", strings.ReplaceAll(tr.b.String(), e.storeDir(), "$STORE"))
}

// TestThreadListMissingHead: a thread whose head node is missing is
// damage, not an answer "not found": thread list prints the others, names
// it on stderr and exits 1, as docs/CLI.md says.
func TestThreadListMissingHead(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	lost := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "x", "--cwd", "/"))
	e.clock.Advance(time.Second)
	kept := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "y", "--cwd", "/"))
	steps := e.stepsOf(lost)
	head, err := cas.ParseHash(steps[len(steps)-1][1])
	if err != nil {
		t.Fatal(err)
	}
	e.remove(e.objectPath(head))
	r := e.run("", "thread", "list")
	if r.code != 1 || !strings.Contains(r.stdout, kept) || strings.Contains(r.stdout, lost) ||
		!strings.Contains(r.stderr, lost) || !strings.Contains(r.stderr, "not found") {
		t.Errorf("thread list with a missing head: %v; want exit 1, %s listed and %s named on stderr", r, kept, lost)
	}
}
