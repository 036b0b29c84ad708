package atomicfile_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/internal/atomicfile"
	"github.com/uncaged/uwf/internal/atomicfile/atomicfiletest"
)

func newRecorder(t *testing.T) (*atomicfiletest.Recorder, string) {
	dir := t.TempDir()
	return &atomicfiletest.Recorder{Root: dir}, dir
}

func ops(r *atomicfiletest.Recorder) []string {
	var out []string
	for _, op := range r.Ops() {
		s := op.String()
		// Temporary names vary: ".tmp-<pid>-<n>" -> ".tmp".
		for _, f := range strings.Fields(s) {
			if i := strings.Index(f, ".tmp-"); i >= 0 {
				s = strings.Replace(s, f, f[:i]+".tmp", 1)
			}
		}
		out = append(out, s)
	}
	return out
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPublish(t *testing.T) {
	rec, dir := newRecorder(t)
	os.Mkdir(filepath.Join(dir, "tmp"), 0o755)
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	target := filepath.Join(dir, "a", "b", "obj")
	if err := atomicfile.Publish(rec, filepath.Join(dir, "tmp"), target, []byte("one"), mtime, true); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create tmp/.tmp", "write tmp/.tmp", "mtime tmp/.tmp", "sync tmp/.tmp", "close tmp/.tmp",
		"publish tmp/.tmp -> a/b/obj (failed)", // the folders do not exist yet
		"mkdir a/b (failed)", "mkdir a", "syncdir .", "mkdir a/b", "syncdir a",
		"publish tmp/.tmp -> a/b/obj", "syncdir a/b",
	}
	if got := ops(rec); !slices.Equal(got, want) {
		t.Fatalf("ops =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := readFile(t, target); got != "one" {
		t.Fatalf("content = %q", got)
	}
	if fi, _ := os.Stat(target); !fi.ModTime().Equal(mtime) {
		t.Errorf("mtime = %v, want %v", fi.ModTime(), mtime)
	}

	// A taken name: fs.ErrExist, nothing overwritten, no temporary left.
	rec.Reset()
	err := atomicfile.Publish(rec, filepath.Join(dir, "tmp"), target, []byte("two"), time.Time{}, false)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Publish over an existing file: %v, want fs.ErrExist", err)
	}
	if got := readFile(t, target); got != "one" {
		t.Fatalf("Publish overwrote: %q", got)
	}
	if es, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(es) != 0 {
		t.Errorf("temporary files left: %v", es)
	}
	for _, op := range ops(rec) {
		if strings.HasPrefix(op, "sync") || strings.HasPrefix(op, "mtime") {
			t.Errorf("unsynced Publish did %s", op)
		}
	}
}

func TestPublishTempLeavesTempOnConflict(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "obj")
	os.WriteFile(target, []byte("old"), 0o644)
	tmp, err := atomicfile.WriteTemp(atomicfile.OS, dir, []byte("new"), time.Time{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.PublishTemp(atomicfile.OS, tmp, target, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("PublishTemp = %v, want fs.ErrExist", err)
	}
	if got := readFile(t, tmp); got != "new" {
		t.Fatalf("the temporary file is gone or changed: %q", got)
	}
	if err := atomicfile.ReplaceTemp(atomicfile.OS, tmp, target, true); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, target); got != "new" {
		t.Fatalf("ReplaceTemp: %q", got)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary file remains: %v", err)
	}
}

func TestReplace(t *testing.T) {
	rec, dir := newRecorder(t)
	target := filepath.Join(dir, "ref")
	for _, content := range []string{"first", "second"} {
		rec.Reset()
		if err := atomicfile.Replace(rec, "", target, []byte(content), true); err != nil {
			t.Fatal(err)
		}
		want := []string{"create .tmp", "write .tmp", "sync .tmp", "close .tmp", "rename .tmp -> ref", "syncdir ."}
		if got := ops(rec); !slices.Equal(got, want) {
			t.Fatalf("ops = %q, want %q", got, want)
		}
		if got := readFile(t, target); got != content {
			t.Fatalf("content = %q, want %q", got, content)
		}
	}
	rec.Reset()
	if err := atomicfile.Replace(rec, "", filepath.Join(dir, "new", "ref"), []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops(rec) {
		if strings.HasPrefix(op, "sync") {
			t.Errorf("unsynced Replace did %s", op)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("files left: %v", es)
	}
}

func TestMkdirAll(t *testing.T) {
	rec, dir := newRecorder(t)
	if err := atomicfile.MkdirAll(rec, filepath.Join(dir, "x", "y"), true); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.MkdirAll(rec, filepath.Join(dir, "x", "y"), true); err != nil {
		t.Fatal("existing folder:", err)
	}
	want := []string{"mkdir x/y (failed)", "mkdir x", "syncdir .", "mkdir x/y", "syncdir x", "mkdir x/y (failed)"}
	if got := ops(rec); !slices.Equal(got, want) {
		t.Fatalf("ops = %q, want %q", got, want)
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	if err := atomicfile.MkdirAll(atomicfile.OS, filepath.Join(dir, "file", "sub"), false); err == nil {
		t.Error("MkdirAll under a file succeeded")
	}
}

func TestOSFile(t *testing.T) {
	dir := t.TempDir()
	fsys := atomicfile.OS
	f, err := fsys.OpenFile(filepath.Join(dir, "log"), os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("hello\n"))
	f.Write([]byte("world\n"))
	if n, err := f.Size(); n != 12 || err != nil {
		t.Fatalf("Size = %d, %v", n, err)
	}
	buf := make([]byte, 8)
	if n, err := f.ReadAt(buf, 6); n != 6 || err != io.EOF || string(buf[:n]) != "world\n" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, buf[:n])
	}
	if err := f.Truncate(6); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("there\n")) // O_APPEND: after the truncation point
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "log")); got != "hello\nthere\n" {
		t.Fatalf("content = %q", got)
	}
	if _, err := fsys.OpenFile(filepath.Join(dir, "log"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL open of an existing file: %v", err)
	}
	if err := fsys.SyncFS(dir); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("SyncFS: %v", err)
	}
	if err := fsys.Remove(filepath.Join(dir, "log")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	if err := fsys.Remove(filepath.Join(dir, "d")); err != nil {
		t.Fatalf("Remove(empty folder): %v", err)
	}
	if err := fsys.Remove(filepath.Join(dir, "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove(absent) = %v", err)
	}
	mt := time.Unix(1000, 5)
	os.WriteFile(filepath.Join(dir, "t"), nil, 0o644)
	if err := fsys.Chtimes(filepath.Join(dir, "t"), mt); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "t")); !fi.ModTime().Equal(mt) {
		t.Errorf("Chtimes: mtime %v", fi.ModTime())
	}
	if err := fsys.Chtimes(filepath.Join(dir, "absent"), mt); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Chtimes(absent) = %v", err)
	}
}
