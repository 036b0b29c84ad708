package disk_test

import (
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
			// Every temporary file is synced (or the filesystem is) before
			// the first publish, and none after.
			syncfs := indexOf(ops, "syncfs", "tmp")
			synced := map[string]bool{}
			for i, op := range ops {
				if op.Kind == "sync" || op.Kind == "syncfs" {
					if i > firstPub {
						t.Fatalf("%s after the first publish:%s", op, dump(ops))
					}
					synced[op.Path] = true
				}
			}
			for _, op := range ops {
				if op.Kind == "publish" && !synced[op.Path] && syncfs < 0 {
					t.Errorf("%s was never synced", op.Path)
				}
			}
			if pool && syncfs >= 0 {
				t.Errorf("pool mode called syncfs")
			}
			if tc.portable && (syncfs >= 0 || len(synced) < 200) {
				// Without syncfs (macOS), the batch falls back to
				// syncing each file.
				t.Errorf("portable path: syncfs succeeded or %d of 200 files synced:%s", len(synced), dump(ops))
			}
			if !pool && syncfs < 0 && len(synced) < 200 {
				t.Errorf("neither syncfs nor every file synced:%s", dump(ops))
			}
			// Each touched folder is synced exactly once, after the last
			// publish; objects/ too if shard folders were created.
			touched := map[string]int{}
			for _, p := range pubOrder {
				touched[filepath.ToSlash(filepath.Dir(p))] = 0
			}
			for i, op := range ops {
				if op.Kind != "syncdir" {
					continue
				}
				if op.Path == "objects" {
					continue // made durable as shard folders are created
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
		})
	}
}

func TestDurabilityRefChange(t *testing.T) {
	s, rec := recorded(t, disk.DurabilityStrict, false)
	r := s.Refs()
	a, b := hashOf("a"), hashOf("b")
	check := func(what string, ops []atomicfiletest.Op, deleted bool) {
		t.Helper()
		log := "logs/threads/x" + disk.LogSuffix
		ref := "refs/threads/x"
		w, sy := indexOf(ops, "write", log), indexOf(ops, "sync", log)
		if w < 0 || sy < w {
			t.Fatalf("%s: the log line is not written then synced:%s", what, dump(ops))
		}
		// The watch journal's record is written and synced beside it.
		seg := "journal/0000000000000001"
		jw, jsy := indexOf(ops, "write", seg), indexOf(ops, "sync", seg)
		if jw < 0 || jsy < jw {
			t.Fatalf("%s: the journal record is not written then synced:%s", what, dump(ops))
		}
		for i, op := range ops {
			if (op.Path == ref || op.To == ref) && (i < sy || i < jsy) {
				t.Fatalf("%s: %s before the log line and journal record are synced:%s", what, op, dump(ops))
			}
		}
		if deleted {
			rm := indexOf(ops, "remove", ref)
			if sd := indexOf(ops, "syncdir", "refs/threads"); rm < 0 || sd < rm {
				t.Fatalf("%s: want remove, then syncdir refs/threads:%s", what, dump(ops))
			}
			return
		}
		ren := -1
		for i, op := range ops {
			if op.Kind == "rename" && op.To == ref {
				ren = i
			}
		}
		if ren < 0 {
			t.Fatalf("%s: no rename to %s:%s", what, ref, dump(ops))
		}
		tmp := ops[ren].Path
		if tsy := indexOf(ops, "sync", tmp); tsy < 0 || tsy > ren {
			t.Fatalf("%s: the new ref file is not synced before its rename:%s", what, dump(ops))
		}
		sd := -1
		for i, op := range ops {
			if op.Kind == "syncdir" && op.Path == "refs/threads" {
				sd = i
			}
		}
		if sd < ren {
			t.Fatalf("%s: refs/threads is not synced after the rename:%s", what, dump(ops))
		}
	}
	mustCAS(t, r, "threads/x", 0, a, "create")
	ops := rec.Ops()
	check("create", ops, false)
	// A new log file's folder and the new ref folder are made durable.
	if indexOf(ops, "syncdir", "logs/threads") < 0 || indexOf(ops, "syncdir", "logs") < 0 || indexOf(ops, "syncdir", "refs") < 0 {
		t.Errorf("create: new folders not synced:%s", dump(ops))
	}
	rec.Reset()
	mustCAS(t, r, "threads/x", a, b, "move")
	check("move", rec.Ops(), false)
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
