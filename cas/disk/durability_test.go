package disk_test

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
	"github.com/uncaged/uwf/internal/atomicfile/atomicfiletest"
)

// recorded creates a store that writes through a recorder, with durability
// d; the recorder is reset after creation.
func recorded(t *testing.T, d disk.Durability, pool bool) (*disk.Store, *atomicfiletest.Recorder) {
	t.Helper()
	return recordedOn(t, d, pool, atomicfile.OS)
}

// recordedOn is recorded, the recorder writing through fsys.
func recordedOn(t *testing.T, d disk.Durability, pool bool, fsys atomicfile.FS) (*disk.Store, *atomicfiletest.Recorder) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	rec := &atomicfiletest.Recorder{FS: fsys, Root: dir}
	opts := &disk.Options{Durability: d}
	disk.SetFS(opts, rec)
	disk.SetBatchSyncPool(opts, pool)
	s, err := disk.Create(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec.Reset()
	return s, rec
}

// indexOf returns the index of the first op of kind on path (with to, if
// given), or -1.
func indexOf(ops []atomicfiletest.Op, kind, path string) int {
	for i, op := range ops {
		if op.Kind == kind && op.Path == path && !op.Err {
			return i
		}
	}
	return -1
}

func dump(ops []atomicfiletest.Op) string {
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "\n  %2d %s", i, op)
	}
	return b.String()
}

// dataDurable reports whether, at ops[i], the last write (or truncate) of
// path before it was made durable: followed, still before i, by a syncfs or
// an fsync of path. A path never written is durable.
func dataDurable(ops []atomicfiletest.Op, i int, path string) bool {
	w := -1
	for k, op := range ops[:i] {
		if (op.Kind == "write" || op.Kind == "truncate") && op.Path == path && !op.Err {
			w = k
		}
	}
	return w < 0 || flushedAfter(ops, w, i, "sync", path)
}

// entryDurable reports whether, at ops[i], the last change of path's entry
// in its folder before it (created, published or renamed there, made a
// folder, removed, or opened: a log file is created by opening it) was
// made durable: followed, still before i, by a syncfs or an fsync of the
// folder.
func entryDurable(ops []atomicfiletest.Op, i int, path string) bool {
	c := -1
	for k, op := range ops[:i] {
		if op.Err {
			continue
		}
		switch op.Kind {
		case "create", "mkdir", "remove", "open":
			if op.Path == path {
				c = k
			}
		case "publish", "rename":
			if op.To == path {
				c = k
			}
		}
	}
	return c < 0 || flushedAfter(ops, c, i, "syncdir", filepath.ToSlash(filepath.Dir(path)))
}

// flushedAfter reports whether ops(from, to) hold a successful syncfs, or
// an op of kind on path.
func flushedAfter(ops []atomicfiletest.Op, from, to int, kind, path string) bool {
	for _, op := range ops[from+1 : to] {
		if !op.Err && (op.Kind == "syncfs" || op.Kind == kind && op.Path == path) {
			return true
		}
	}
	return false
}

// flushes counts the successful flushes among ops: fsyncs of files and
// folders, and syncfs calls.
func flushes(ops []atomicfiletest.Op) int {
	n := 0
	for _, op := range ops {
		switch op.Kind {
		case "sync", "syncdir", "syncfs":
			if !op.Err {
				n++
			}
		}
	}
	return n
}

func objRel(h cas.Hash) (file, dir string) {
	x := h.String()
	return "objects/" + x[11:] + "/" + x, "objects/" + x[11:]
}

func TestDurabilityPut(t *testing.T) {
	s, rec := recorded(t, disk.DurabilityStrict, false)
	data := []byte("durable object")
	h := mustPut(t, s, data)
	ops := rec.Ops()
	file, dir := objRel(h)
	pub := -1
	for i, op := range ops {
		if op.Kind == "publish" && op.To == file && !op.Err {
			pub = i
		}
	}
	if pub < 0 {
		t.Fatalf("no publish of %s:%s", file, dump(ops))
	}
	tmp := ops[pub].Path
	if !strings.HasPrefix(tmp, "tmp/") {
		t.Errorf("temporary file %s is not in tmp/", tmp)
	}
	w, sy, cl := indexOf(ops, "write", tmp), indexOf(ops, "sync", tmp), indexOf(ops, "close", tmp)
	if !(w >= 0 && w < sy && sy < cl && cl < pub) {
		t.Errorf("want write < sync < close < publish of the temporary file:%s", dump(ops))
	}
	// The new shard folder is made durable in objects/ before the object
	// is published into it.
	if mk := indexOf(ops, "mkdir", dir); mk >= 0 {
		if sd := indexOf(ops, "syncdir", "objects"); !(mk < sd && sd < pub) {
			t.Errorf("want mkdir %s < syncdir objects < publish:%s", dir, dump(ops))
		}
	}
	if last := ops[len(ops)-1]; last.Kind != "syncdir" || last.Path != dir {
		t.Errorf("the last operation is %s, want syncdir %s:%s", last, dir, dump(ops))
	}

	// A second object in the same folder: no mkdir, same order.
	rec.Reset()
	mustPut(t, s, []byte("durable object")) // present: touched, nothing synced
	for _, op := range rec.Ops() {
		if op.Kind != "chtimes" {
			t.Errorf("re-put did %s", op)
		}
	}
}

func TestDurabilityHeal(t *testing.T) {
	s, rec := recorded(t, disk.DurabilityStrict, false)
	data := []byte("to be healed")
	h := mustPut(t, s, data)
	file, dir := objRel(h)
	if err := os.WriteFile(filepath.Join(s.Dir(), file), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.Reset()
	mustPut(t, s, data)
	ops := rec.Ops()
	ren := -1
	for i, op := range ops {
		if op.Kind == "rename" && op.To == file {
			ren = i
		}
	}
	if ren < 0 {
		t.Fatalf("no rename over %s:%s", file, dump(ops))
	}
	tmp := ops[ren].Path
	if sy := indexOf(ops, "sync", tmp); sy < 0 || sy > ren {
		t.Errorf("the healing file is not synced before its rename:%s", dump(ops))
	}
	if sd := indexOf(ops, "syncdir", dir); sd < ren {
		t.Errorf("the folder is not synced after the rename:%s", dump(ops))
	}
}

func TestDurabilityBatch(t *testing.T) {
	for _, tc := range []struct {
		pool, portable bool
	}{{false, false}, {true, false}, {false, true}} {
		pool := tc.pool
		t.Run(fmt.Sprintf("pool=%v/portable=%v", pool, tc.portable), func(t *testing.T) {
			fsys := atomicfile.OS
			if tc.portable {
				fsys = atomicfile.Portable
			}
			s, rec := recordedOn(t, disk.DurabilityStrict, pool, fsys)
			mustPut(t, s, []byte("present"))
			rec.Reset()
			var data [][]byte
			for i := range 200 {
				data = append(data, []byte(fmt.Sprintf("batch %d", i)))
			}
			data = append(data, []byte("present"))
			hs, err := s.PutBatch(t.Context(), data)
			if err != nil {
				t.Fatal(err)
			}
			ops := rec.Ops()
			firstPub, lastPub := -1, -1
			var pubOrder []string
			for i, op := range ops {
				if op.Kind == "publish" && !op.Err {
					if firstPub < 0 {
						firstPub = i
					}
					lastPub = i
					pubOrder = append(pubOrder, op.To)
				}
			}
			// Published in input order (the present object is not
			// rewritten).
			for i := range 200 {
				if file, _ := objRel(hs[i]); i >= len(pubOrder) || pubOrder[i] != file {
					t.Fatalf("publish %d is not input %d:%s", i, i, dump(ops))
				}
			}
			if len(pubOrder) != 200 {
				t.Fatalf("%d publishes, want 200", len(pubOrder))
			}
			// Every temporary file is durable before it is published, and
			// every published name (and every shard folder created on the
			// way) by the end.
			synced := map[string]bool{}
			syncfs := 0
			for i, op := range ops {
				switch op.Kind {
				case "sync":
					synced[op.Path] = true
				case "syncfs":
					if !op.Err {
						syncfs++
					}
				case "publish", "mkdir":
					// A folder of unnamed files (tmp/new-*) need not
					// survive a crash: nothing is ever named in it.
					if op.Err || op.Kind == "mkdir" && strings.HasPrefix(op.Path, "tmp/new-") {
						continue
					}
					if op.Kind == "publish" && !dataDurable(ops, i, op.Path) {
						t.Errorf("%s: the temporary file is not durable before its publish:%s", op, dump(ops))
					}
					to := cmp.Or(op.To, op.Path)
					if !entryDurable(ops, len(ops), to) {
						t.Errorf("%s: %s is not durable when PutBatch returns:%s", op, to, dump(ops))
					}
				}
			}
			switch {
			case pool || tc.portable:
				if syncfs > 0 {
					t.Errorf("pool mode or the portable path called syncfs:%s", dump(ops))
				}
				if len(synced) < 200 {
					t.Errorf("without syncfs, %d of 200 files synced:%s", len(synced), dump(ops))
				}
				// Each touched folder is synced exactly once, after the
				// last publish.
				touched := map[string]int{}
				for _, p := range pubOrder {
					touched[filepath.ToSlash(filepath.Dir(p))] = 0
				}
				for i, op := range ops {
					if op.Kind != "syncdir" || op.Path == "objects" {
						continue
					}
					if i < lastPub {
						t.Errorf("%s before the last publish", op)
					}
					if _, ok := touched[op.Path]; !ok {
						t.Errorf("%s: not a touched folder", op)
					}
					touched[op.Path]++
				}
				for d, n := range touched {
					if n != 1 {
						t.Errorf("folder %s synced %d times, want 1", d, n)
					}
				}
			default:
				// Two flush points: one syncfs before the first
				// publish, one after the last.
				if n := flushes(ops); n != 2 || syncfs != 2 {
					t.Errorf("%d flushes (%d syncfs), want 2 syncfs:%s", n, syncfs, dump(ops))
				}
				if i := indexOf(ops, "syncfs", "tmp"); i > firstPub {
					t.Errorf("the first syncfs is not before the first publish:%s", dump(ops))
				}
				if last := ops[len(ops)-1]; last.Kind != "syncfs" {
					t.Errorf("the last operation is %s, want syncfs:%s", last, dump(ops))
				}
			}
		})
	}
}

// TestDurabilityRefChange: every ref change makes its log line durable
// before the ref moves, the new ref file's content durable before it is
// renamed into place, and the move itself durable before it returns; with
// syncfs, all the writes before the move share one flush, so a move makes
// two flushes in all.
func TestDurabilityRefChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys atomicfile.FS
	}{{"syncfs", atomicfile.OS}, {"portable", atomicfile.Portable}} {
		t.Run(tc.name, func(t *testing.T) {
			testDurabilityRefChange(t, tc.fsys, tc.fsys == atomicfile.OS)
		})
	}
}

func testDurabilityRefChange(t *testing.T, fsys atomicfile.FS, syncfs bool) {
	s, rec := recordedOn(t, disk.DurabilityStrict, false, fsys)
	r := s.Refs()
	a, b := hashOf("a"), hashOf("b")
	const log, ref = "logs/threads/x" + disk.LogSuffix, "refs/threads/x"
	check := func(what string, ops []atomicfiletest.Op, deleted bool) {
		t.Helper()
		if indexOf(ops, "write", log) < 0 {
			t.Fatalf("%s: no log line written:%s", what, dump(ops))
		}
		move := -1
		for i, op := range ops {
			if !op.Err && (op.Kind == "rename" && op.To == ref || op.Kind == "remove" && op.Path == ref) {
				move = i
			}
		}
		if move < 0 {
			t.Fatalf("%s: the ref file is neither renamed over nor removed:%s", what, dump(ops))
		}
		if deleted != (ops[move].Kind == "remove") {
			t.Fatalf("%s: %s:%s", what, ops[move], dump(ops))
		}
		if !dataDurable(ops, move, log) {
			t.Fatalf("%s: the log line is not durable before the ref moves:%s", what, dump(ops))
		}
		// The watch journal's record is written beside it, and durable
		// by the same flush point.
		const seg = "journal/0000000000000001"
		if indexOf(ops, "write", seg) < 0 || !dataDurable(ops, move, seg) {
			t.Fatalf("%s: the journal record is not durable before the ref moves:%s", what, dump(ops))
		}
		if !deleted && !dataDurable(ops, move, ops[move].Path) {
			t.Fatalf("%s: the new ref file is not durable before its rename:%s", what, dump(ops))
		}
		if !entryDurable(ops, len(ops), ref) {
			t.Fatalf("%s: the move is not durable when it returns:%s", what, dump(ops))
		}
		for i, op := range ops[:move] {
			if !op.Err && (op.To == ref || op.Path == ref) {
				t.Fatalf("%s: %s before the move at %d:%s", what, op, i, dump(ops))
			}
		}
	}
	mustCAS(t, r, "threads/x", 0, a, "create")
	ops := rec.Ops()
	check("create", ops, false)
	// A new log file, its new folder and the new ref folder are made
	// durable.
	for _, p := range []string{log, "logs/threads", "refs/threads"} {
		if !entryDurable(ops, len(ops), p) {
			t.Errorf("create: %s is not durable:%s", p, dump(ops))
		}
	}
	rec.Reset()
	mustCAS(t, r, "threads/x", a, b, "move")
	ops = rec.Ops()
	check("move", ops, false)
	// A move of an existing ref: the log line, the journal record and the
	// new ref file at one flush point, then the ref's folder: two flushes
	// (one more per written file without syncfs).
	want := 2
	if !syncfs {
		want = 4
	}
	if n := flushes(ops); n != want {
		t.Errorf("move: %d flushes, want %d:%s", n, want, dump(ops))
	}
	rec.Reset()
	mustCAS(t, r, "threads/x", b, 0, "delete")
	check("delete", rec.Ops(), true)
	// Replace (restore, set --force, rm --force) writes in the same order.
	rec.Reset()
	if err := r.Replace(t.Context(), "threads/x", a, "restore"); err != nil {
		t.Fatal(err)
	}
	check("replace", rec.Ops(), false)
	if err := os.WriteFile(filepath.Join(s.Dir(), "refs", "threads", "x"), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.Reset()
	if err := r.Replace(t.Context(), "threads/x", b, "set --force"); err != nil {
		t.Fatal(err)
	}
	check("replace a damaged ref", rec.Ops(), false)
	rec.Reset()
	if err := r.Replace(t.Context(), "threads/x", 0, "rm --force"); err != nil {
		t.Fatal(err)
	}
	check("replace by none", rec.Ops(), true)
}

func TestDurabilityNone(t *testing.T) {
	s, rec := recorded(t, disk.DurabilityNone, false)
	ctx := t.Context()
	r := s.Refs()
	h := mustPut(t, s, []byte("one"))
	file, _ := objRel(h)
	if _, err := s.PutBatch(ctx, [][]byte{[]byte("two"), []byte("three")}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.Dir(), file), []byte("bad"), 0o644)
	mustPut(t, s, []byte("one")) // heal
	mustCAS(t, r, "a/b", 0, h, "")
	mustCAS(t, r, "a/b", h, hashOf("x"), "")
	mustCAS(t, r, "a/b", hashOf("x"), 0, "")
	if err := r.ImportLog(ctx, "c", []cas.LogEntry{{New: h, Time: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PruneLog(ctx, s2time()); err != nil {
		t.Fatal(err)
	}
	opts := &disk.Options{Durability: disk.DurabilityNone}
	disk.SetFS(opts, rec)
	if _, err := disk.Create(filepath.Join(t.TempDir(), "other"), opts); err != nil {
		t.Fatal(err)
	}
	ops := rec.Ops()
	if len(ops) < 20 {
		t.Fatalf("only %d operations recorded:%s", len(ops), dump(ops))
	}
	for _, op := range ops {
		switch op.Kind {
		case "sync", "syncdir", "syncfs":
			t.Errorf("DurabilityNone did %s", op)
		}
	}
}

// s2time is a time after every log entry the tests write.
func s2time() time.Time { return time.Now().Add(time.Hour) }
