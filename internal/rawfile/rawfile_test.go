//go:build unix

package rawfile_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/uncaged/uwf/internal/rawfile"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		limit      int64
		data       string
		size       int64
		nilData    bool
		err        error
	}{
		{name: "small", path: small, limit: 5, data: "hello", size: 5},
		{name: "empty", path: empty, limit: 5, data: "", size: 0},
		{name: "too large", path: small, limit: 4, size: 5, nilData: true},
		{name: "missing", path: filepath.Join(dir, "none"), limit: 5, err: fs.ErrNotExist},
		{name: "folder", path: dir, limit: 5, err: syscall.EISDIR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, size, f, err := rawfile.ReadFile(tc.path, tc.limit)
			if f != nil {
				f.Close()
				t.Fatalf("ReadFile(%q) returned an open file", tc.path)
			}
			if tc.err != nil {
				var pe *fs.PathError
				if !errors.Is(err, tc.err) || !errors.As(err, &pe) {
					t.Fatalf("ReadFile(%q) error = %v, want a *fs.PathError wrapping %v", tc.path, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadFile(%q): %v", tc.path, err)
			}
			if string(data) != tc.data || size != tc.size || (data == nil) != tc.nilData {
				t.Errorf("ReadFile(%q, %d) = %q (nil %v), %d; want %q (nil %v), %d", tc.path, tc.limit, data, data == nil, size, tc.data, tc.nilData, tc.size)
			}
		})
	}
}

func TestReadFileFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.WriteString("through a pipe")
		w.Close()
	}()
	data, _, f, err := rawfile.ReadFile(p, 100)
	if err != nil || data != nil || f == nil {
		t.Fatalf("ReadFile(fifo) = %q, %v, %v; want an open file", data, f, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "through a pipe" {
		t.Errorf("reading the FIFO = %q, %v", b, err)
	}
}

func TestReadAllAndExists(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		data       string
		exists     bool
		err        error
		pathErr    bool
	}{
		{name: "file", path: small, data: "hello", exists: true},
		{name: "missing", path: filepath.Join(dir, "none"), err: syscall.ENOENT},
		{name: "under a file", path: filepath.Join(small, "x"), err: syscall.ENOTDIR, pathErr: true},
		{name: "folder", path: dir, exists: true, err: syscall.EISDIR, pathErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := rawfile.ReadAll(tc.path)
			var pe *fs.PathError
			switch {
			case tc.err == nil && (err != nil || string(data) != tc.data):
				t.Errorf("ReadAll = %q, %v; want %q", data, err, tc.data)
			case tc.err != nil && (!errors.Is(err, tc.err) || errors.As(err, &pe) != tc.pathErr):
				t.Errorf("ReadAll error = %#v, want %v (a *fs.PathError: %v)", err, tc.err, tc.pathErr)
			}
			ok, err := rawfile.Exists(tc.path)
			if ok != tc.exists || err != nil {
				t.Errorf("Exists = %v, %v; want %v", ok, err, tc.exists)
			}
		})
	}
}

func TestIgnoringEINTR(t *testing.T) {
	calls := 0
	err := rawfile.IgnoringEINTR(func() error {
		if calls++; calls < 3 {
			return syscall.EINTR
		}
		return syscall.EIO
	})
	if err != syscall.EIO || calls != 3 {
		t.Errorf("IgnoringEINTR = %v after %d calls, want EIO after 3", err, calls)
	}
}
