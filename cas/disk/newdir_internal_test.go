package disk

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"
)

// fakeDirs is a newDirs whose folders are names, with a creation cost per
// folder given by cost (by the order they were made: 0, 1, ...).
type fakeDirs struct {
	newDirs
	made    []string
	removed []string
	failAt  int // make fails from this folder on (0: never)
}

func newFakeDirs() *fakeDirs {
	f := &fakeDirs{}
	f.make = func() (string, error) {
		if f.failAt > 0 && len(f.made)+1 >= f.failAt {
			return "", errors.New("no space")
		}
		p := fmt.Sprintf("new-%d", len(f.made))
		f.made = append(f.made, p)
		return p, nil
	}
	f.remove = func(p string) { f.removed = append(f.removed, p) }
	f.log = slog.New(slog.DiscardHandler)
	return f
}

// run makes n creations, each costing cost(folder), and counts where they
// went.
func (f *fakeDirs) run(t *testing.T, n int, cost func(path string) time.Duration) map[string]int {
	t.Helper()
	where := map[string]int{}
	for range n {
		d, err := f.pick()
		if err != nil {
			t.Fatal(err)
		}
		where[d.path]++
		f.done(d, cost(d.path))
	}
	return where
}

// TestNewDirsChoose: two folders, each warmed up; then the cheaper one
// takes all but every 16th file, which keeps the other's cost known; at a
// review, a folder over twice as dear as the other is replaced by a fresh
// one, and one within twice is kept.
func TestNewDirsChoose(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cost        map[string]time.Duration // by folder; others 20µs
		wantRemoved []string
	}{
		{"one far dearer is replaced", map[string]time.Duration{"new-0": 500 * time.Microsecond, "new-1": 20 * time.Microsecond}, []string{"new-0"}},
		{"within twice is kept", map[string]time.Duration{"new-0": 30 * time.Microsecond, "new-1": 20 * time.Microsecond}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDirs()
			cost := func(p string) time.Duration {
				if c, ok := tc.cost[p]; ok {
					return c
				}
				return 20 * time.Microsecond
			}
			where := f.run(t, newDirReview-1, cost)
			if !slices.Equal(f.made, []string{"new-0", "new-1"}) {
				t.Fatalf("made %v, want two folders", f.made)
			}
			dear, cheap := "new-0", "new-1"
			// Warm-up, then one in newDirExplore to the dearer.
			want := newDirWarm + (newDirReview-1-2*newDirWarm)/newDirExplore
			if got := where[dear]; got < want-2 || got > want+2 {
				t.Errorf("the dearer folder got %d of %d files, want about %d (%v)", got, newDirReview-1, want, where)
			}
			if where[cheap] < newDirReview-1-want-2 {
				t.Errorf("the cheaper folder got %d files (%v)", where[cheap], where)
			}
			f.run(t, 1, cost) // the review
			if !slices.Equal(f.removed, tc.wantRemoved) {
				t.Errorf("removed %v, want %v", f.removed, tc.wantRemoved)
			}
			if tc.wantRemoved != nil && !slices.Equal(f.made, []string{"new-0", "new-1", "new-2"}) {
				t.Errorf("made %v, want a fresh folder in place of the dear one", f.made)
			}
			f.close()
			if len(f.removed) != len(tc.wantRemoved)+2 {
				t.Errorf("close removed %v: want both folders gone", f.removed)
			}
		})
	}
}

// TestNewDirsAdapt: a folder that turns dear mid-run loses the files to
// the other within a few dozen creations.
func TestNewDirsAdapt(t *testing.T) {
	f := newFakeDirs()
	slow := ""
	cost := func(p string) time.Duration {
		if p == slow {
			return 1 * time.Millisecond
		}
		return 20 * time.Microsecond
	}
	where := f.run(t, 200, cost)
	best := "new-0"
	if where["new-1"] > where["new-0"] {
		best = "new-1"
	}
	slow = best // its group turns busy
	f.run(t, 48, cost)
	where = f.run(t, 100, cost)
	if where[slow] > 100/newDirExplore+1 {
		t.Errorf("the folder that turned dear still got %d of 100 files (%v)", where[slow], where)
	}
}

// TestNewDirsOutlier: one creation delayed (the thread descheduled)
// moves the cost by at most 3/8 of it.
func TestNewDirsOutlier(t *testing.T) {
	f := newFakeDirs()
	d, err := f.pick()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		f.done(d, 20*time.Microsecond)
	}
	f.done(d, time.Second)
	if want := 20 * time.Microsecond * 11 / 8; time.Duration(d.cost) > want {
		t.Errorf("cost after an outlier = %v, want at most %v", time.Duration(d.cost), want)
	}
}

// TestNewDirsGoneAndFailing: a folder removed meanwhile is replaced; when
// no folder can be made, one will do, and none is an error.
func TestNewDirsGoneAndFailing(t *testing.T) {
	f := newFakeDirs()
	d, err := f.pick()
	if err != nil {
		t.Fatal(err)
	}
	f.gone(d)
	if _, err := f.pick(); err != nil {
		t.Fatal(err)
	}
	if len(f.made) != 3 || len(f.dirs) != 2 || slices.ContainsFunc(f.dirs, func(e *newDir) bool { return e == d }) {
		t.Errorf("made %v, keeping %d: want the gone folder replaced", f.made, len(f.dirs))
	}

	f = newFakeDirs()
	f.failAt = 2
	if d, err := f.pick(); err != nil || d.path != "new-0" {
		t.Errorf("pick with only one folder made = %v, %v; want new-0", d, err)
	}
	f = newFakeDirs()
	f.failAt = 1
	if _, err := f.pick(); err == nil {
		t.Error("pick with no folder made: no error")
	}
}
