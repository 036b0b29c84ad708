package disk_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

// clock is a settable fake clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newStore creates a store in a new temporary folder. Unless the test calls
// allowCorrupt, every object is re-hashed when the test ends.
func newStore(t *testing.T, opts *disk.Options) *disk.Store {
	t.Helper()
	s, err := disk.Create(filepath.Join(t.TempDir(), "store"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, skip := corruptOK.Load(t); t.Failed() || skip {
			return
		}
		s.Close()
		again, err := disk.Open(s.Dir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		verifyObjects(t, again)
	})
	return s
}

var corruptOK sync.Map // *testing.T -> true

// allowCorrupt skips the end-of-test object check of the current test.
func allowCorrupt(t *testing.T) {
	corruptOK.Store(t, true) // kept: cleanups run last-in first-out
}

// verifyObjects re-hashes every object of s.
func verifyObjects(t *testing.T, s *disk.Store) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for o, err := range s.All(ctx) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		if _, err := s.Get(ctx, o.Hash); err != nil {
			t.Errorf("object %s does not verify: %v", o.Hash, err)
		}
		n++
	}
	return n
}

func mustPut(t *testing.T, s cas.Store, data []byte) cas.Hash {
	t.Helper()
	h, err := s.Put(t.Context(), data)
	if err != nil {
		t.Fatalf("Put(%q): %v", data, err)
	}
	if h != cas.Sum(data) {
		t.Fatalf("Put(%q) = %s, want %s", data, h, cas.Sum(data))
	}
	return h
}

func mustGet(t *testing.T, s cas.Store, h cas.Hash, want []byte) {
	t.Helper()
	got, err := s.Get(t.Context(), h)
	if err != nil {
		t.Fatalf("Get(%s): %v", h, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) = %q, want %q", h, got, want)
	}
}

func mustCAS(t *testing.T, r cas.Refs, name string, old, new cas.Hash, msg string) {
	t.Helper()
	if err := r.CompareAndSwap(t.Context(), name, old, new, msg); err != nil {
		t.Fatalf("CompareAndSwap(%q, %s, %s): %v", name, old, new, err)
	}
}

func mustLog(t *testing.T, r cas.Refs, name string) []cas.LogEntry {
	t.Helper()
	l, err := r.Log(t.Context(), name)
	if err != nil {
		t.Fatalf("Log(%q): %v", name, err)
	}
	return l
}

// objects returns every object of s, by hash.
func objects(t *testing.T, s *disk.Store) map[cas.Hash]cas.Object {
	t.Helper()
	m := map[cas.Hash]cas.Object{}
	for o, err := range s.All(t.Context()) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		m[o.Hash] = o
	}
	return m
}

// objectFile returns the path of object h in s.
func objectFile(s *disk.Store, h cas.Hash) string {
	x := h.String()
	return filepath.Join(s.Dir(), "objects", x[11:], x)
}

// logFile returns the path of the log of ref name in s.
func logFile(s *disk.Store, name string) string {
	return filepath.Join(s.Dir(), "logs", filepath.FromSlash(strings.ToLower(name))+disk.LogSuffix)
}

// tempFiles lists what the store's tmp folder holds, but for the folders
// tmp/new-* (where batches make their unnamed files), whose entries it
// lists instead, as "new-*/<name>".
func tempFiles(t *testing.T, s *disk.Store) []string {
	t.Helper()
	tmp := filepath.Join(s.Dir(), "tmp")
	es, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), "new-") || !e.IsDir() {
			names = append(names, e.Name())
			continue
		}
		sub, err := os.ReadDir(filepath.Join(tmp, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range sub {
			names = append(names, e.Name()+"/"+f.Name())
		}
	}
	return names
}

func wantConflict(t *testing.T, err error, current cas.Hash, clash string) *cas.ConflictError {
	t.Helper()
	var ce *cas.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, cas.ErrConflict) {
		t.Fatalf("error = %v, want a *cas.ConflictError", err)
	}
	if ce.Current != current || ce.Clash != clash {
		t.Fatalf("conflict = %+v, want Current %s, Clash %q", *ce, current, clash)
	}
	return ce
}
