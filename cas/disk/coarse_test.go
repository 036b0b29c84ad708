package disk_test

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// coarseFS is a filesystem that records modification times truncated to
// step, as FAT (2 s) or ext3 (1 s) do, or rounded to the nearest step.
type coarseFS struct {
	atomicfile.FS
	step    time.Duration
	nearest bool
}

func (c coarseFS) round(t time.Time) time.Time {
	if c.nearest {
		return t.Round(c.step)
	}
	return t.Truncate(c.step)
}

func (c coarseFS) Chtimes(path string, t time.Time) error { return c.FS.Chtimes(path, c.round(t)) }

func (c coarseFS) CreateTemp(dir string, perm fs.FileMode) (atomicfile.File, error) {
	f, err := c.FS.CreateTemp(dir, perm)
	if err != nil {
		return nil, err
	}
	return coarseFile{f, c}, nil
}

func (c coarseFS) OpenFile(path string, flag int, perm fs.FileMode) (atomicfile.File, error) {
	f, err := c.FS.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return coarseFile{f, c}, nil
}

func (c coarseFS) CreateUnnamed(dir string, perm fs.FileMode) (atomicfile.File, error) {
	f, err := c.FS.CreateUnnamed(dir, perm)
	if err != nil {
		return nil, err
	}
	return coarseFile{f, c}, nil
}

func (c coarseFS) Link(f atomicfile.File, path string) error {
	if cf, ok := f.(coarseFile); ok {
		f = cf.File
	}
	return c.FS.Link(f, path)
}

type coarseFile struct {
	atomicfile.File
	fs coarseFS
}

func (f coarseFile) SetModTime(t time.Time) error { return f.File.SetModTime(f.fs.round(t)) }

func newCoarseStore(t *testing.T, step time.Duration, c *clock) *disk.Store {
	t.Helper()
	opts := &disk.Options{Durability: disk.DurabilityNone, Now: c.Now}
	disk.SetFS(opts, coarseFS{FS: atomicfile.OS, step: step})
	return newStore(t, opts)
}

var coarseSteps = []time.Duration{time.Microsecond, 10 * time.Millisecond, time.Second, 2 * time.Second, time.Minute}

// TestDeleteIfOlderCoarseMtimes: on a filesystem that truncates mtimes, an
// object put at or after cutoff is kept although its recorded mtime is
// earlier; one certainly older is deleted.
func TestDeleteIfOlderCoarseMtimes(t *testing.T) {
	for _, step := range coarseSteps {
		t.Run(step.String(), func(t *testing.T) {
			c := &clock{t: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).Add(step - time.Nanosecond)}
			s := newCoarseStore(t, step, c)
			ctx := t.Context()
			put := c.Now()
			h, err := s.Put(ctx, []byte("object"))
			if err != nil {
				t.Fatal(err)
			}
			var mtime time.Time
			for o, err := range s.All(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				mtime = o.Time
			}
			if !mtime.Before(put) {
				t.Fatalf("the coarse filesystem recorded %v for a put at %v: not truncated", mtime, put)
			}
			for _, cutoff := range []time.Time{put, put.Add(-time.Nanosecond), mtime.Add(time.Nanosecond)} {
				if ok, err := s.DeleteIfOlder(ctx, h, cutoff); ok || err != nil {
					t.Fatalf("DeleteIfOlder(cutoff %v) of an object put at %v (mtime %v) = %v, %v; want kept", cutoff, put, mtime, ok, err)
				}
			}
			if ok, err := s.DeleteIfOlder(ctx, h, mtime.Add(step)); !ok || err != nil {
				t.Errorf("DeleteIfOlder(cutoff %v) of an object put at %v = %v, %v; want deleted", mtime.Add(step), put, ok, err)
			}
		})
	}
}

// TestDeleteIfOlderRoundedMtimes: a filesystem that rounds mtimes to the
// nearest step (rather than truncating) cannot be measured by the probe, so
// the store allows the coarsest common step, 2 s: an object put at or after
// cutoff is kept although its mtime was rounded down.
func TestDeleteIfOlderRoundedMtimes(t *testing.T) {
	c := &clock{t: time.Date(2024, 5, 1, 12, 0, 0, 400_000_000, time.UTC)}
	opts := &disk.Options{Durability: disk.DurabilityNone, Now: c.Now}
	disk.SetFS(opts, coarseFS{FS: atomicfile.OS, step: time.Second, nearest: true})
	s := newStore(t, opts)
	ctx := t.Context()
	put := c.Now()
	h, err := s.Put(ctx, []byte("object"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cutoff time.Time
		want   bool
	}{
		{put, false},
		{put.Add(time.Second), false}, // within the assumed 2 s of the rounded mtime
		{put.Truncate(time.Second).Add(2*time.Second + time.Nanosecond), true},
	} {
		if ok, err := s.DeleteIfOlder(ctx, h, tc.cutoff); ok != tc.want || err != nil {
			t.Errorf("DeleteIfOlder(cutoff %v) of an object put at %v = %v, %v; want %v", tc.cutoff, put, ok, err, tc.want)
		}
	}
}

// hookStore calls before() before every exclusive Lock after the first
// (GC's barrier): a writer acting just before a sweep batch.
type hookStore struct {
	cas.Store
	n      int
	before func()
}

func (s *hookStore) Lock(ctx context.Context, exclusive bool) (func(), error) {
	if exclusive {
		if s.n++; s.n > 1 && s.before != nil {
			s.before()
		}
	}
	return s.Store.Lock(ctx, exclusive)
}

// TestGCCoarseMtimes: with no grace at all, on a filesystem that truncates
// mtimes, a node a writer touches after GC's mark began (by linking it from
// a new node, or moving a ref onto it) is kept with its subgraph, although
// its recorded mtime is before the mark began.
func TestGCCoarseMtimes(t *testing.T) {
	for _, step := range coarseSteps {
		for _, how := range []string{"link", "ref"} {
			t.Run(step.String()+" "+how, func(t *testing.T) {
				c := &clock{t: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
				s := newCoarseStore(t, step, c)
				ctx := t.Context()
				hs := &hookStore{Store: s}
				repo, err := cas.Open(ctx, hs, s.Refs(), nil)
				if err != nil {
					t.Fatal(err)
				}
				body, err := repo.Put(ctx, cas.ContentSchema, "old body")
				if err != nil {
					t.Fatal(err)
				}
				note, err := repo.Put(ctx, cas.MetaSchema, map[string]any{"type": "object", "properties": map[string]any{
					"body": map[string]any{"type": "string", "format": "cas_ref"}}})
				if err != nil {
					t.Fatal(err)
				}
				if err := repo.Refs().CompareAndSwap(ctx, "schemas/note", 0, note, "note"); err != nil {
					t.Fatal(err)
				}
				// GC's mark begins just before a step boundary; the writer
				// acts a little later, still before the boundary, so its
				// touch is recorded as the step's start: before markStart.
				c.Add(time.Hour + step - c.Now().Sub(c.Now().Truncate(step)) - step/10)
				var made cas.Hash
				var writeErr error
				hs.before = func() {
					hs.before = nil
					c.Add(step / 20)
					if how == "link" {
						made, writeErr = repo.Put(ctx, note, map[string]any{"body": body.String()})
					} else {
						writeErr = repo.Refs().CompareAndSwap(ctx, "saved", 0, body, "save")
					}
				}
				st, err := repo.GC(ctx, &cas.GCOptions{Grace: -1, BatchSize: 1})
				if err != nil {
					t.Fatal(err)
				}
				if writeErr != nil {
					t.Fatalf("the writer: %v", writeErr)
				}
				if ok, err := s.Has(ctx, body); !ok || err != nil {
					t.Errorf("the node the writer touched after the mark began was deleted (stats %+v)", st)
				}
				if !made.IsZero() {
					if err := repo.Walk(ctx, []cas.Hash{made}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil }); err != nil {
						t.Errorf("the writer's node lost its subgraph: %v", err)
					}
				}
				rep, err := repo.Fsck(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range rep.Problems {
					t.Errorf("fsck: %s", p)
				}
			})
		}
	}
}
