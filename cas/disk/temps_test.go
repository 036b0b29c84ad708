package disk_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

// TestGCRemovesStaleTemps: a store that stays open loses its crash
// leftovers at GC, by the fixed stale age (by inode change time), never by
// the grace period: "gc --grace 0" keeps a live writer's temporary file.
// fsck counts both kinds.
func TestGCRemovesStaleTemps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		staleAge time.Duration // 0: the default hour
		dryRun   bool
		// want after GC: the names left in tmp/
		wantLeft []string
		// want from GC: TempFilesRemoved
		wantRemoved int
	}{
		{name: "default age keeps fresh files", wantLeft: []string{".tmp-99999-1", ".tmp-99999-2"}},
		{name: "stale ones go", staleAge: 1500 * time.Millisecond, wantLeft: []string{".tmp-99999-2"}, wantRemoved: 1},
		{name: "dry run counts", staleAge: 1500 * time.Millisecond, dryRun: true, wantLeft: []string{".tmp-99999-1", ".tmp-99999-2"}, wantRemoved: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &disk.Options{Durability: disk.DurabilityNone}
			if tc.staleAge > 0 {
				disk.SetStaleTempAge(opts, tc.staleAge)
			}
			s := newStore(t, opts)
			ctx := t.Context()
			repo, err := cas.Open(ctx, s, s.Refs(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(s.Dir(), "tmp")
			write := func(name string) {
				p := filepath.Join(tmp, name)
				if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
					t.Fatal(err)
				}
				// An old modification time never makes a file stale.
				old := time.Now().Add(-48 * time.Hour)
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			write(".tmp-99999-1") // the crashed writer's
			if tc.staleAge > 0 {
				time.Sleep(tc.staleAge + 50*time.Millisecond)
			}
			write(".tmp-99999-2") // a live writer's
			rep, err := repo.Fsck(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantStale := 0
			if tc.staleAge > 0 {
				wantStale = 1
			}
			if !rep.OK() || rep.TempFiles != 2 || rep.StaleTempFiles != wantStale {
				t.Errorf("fsck: ok %v, %d temporary files, %d stale; want ok, 2, %d", rep.OK(), rep.TempFiles, rep.StaleTempFiles, wantStale)
			}
			st, err := repo.GC(ctx, &cas.GCOptions{Grace: -1, DryRun: tc.dryRun})
			if err != nil {
				t.Fatal(err)
			}
			if st.TempFilesRemoved != tc.wantRemoved {
				t.Errorf("TempFilesRemoved = %d, want %d", st.TempFilesRemoved, tc.wantRemoved)
			}
			left := tempFiles(t, s)
			slices.Sort(left)
			if !slices.Equal(left, tc.wantLeft) {
				t.Errorf("left in tmp/: %v, want %v", left, tc.wantLeft)
			}
		})
	}
}
