package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

// TestTempFilesReported: fsck counts the disk store's temporary files
// without calling them problems, and "gc --grace 0" keeps a fresh one (a
// live writer's), reporting none removed.
func TestTempFilesReported(t *testing.T) {
	e := newEnv(t)
	e.ok("", "cas", "put-text", "hello")
	tmp := filepath.Join(e.storeDir(), "tmp", ".tmp-99999-1")
	if err := os.WriteFile(tmp, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.ok("", "cas", "fsck")
	if want := "temporary files: 1 (0 over an hour old: left by crashed writers; gc removes them)\n"; !strings.Contains(out, want) {
		t.Errorf("fsck printed %q, want a line %q", out, want)
	}
	out = e.ok("", "cas", "fsck", "--json")
	if !strings.Contains(out, `"tempFiles":1,"staleTempFiles":0`) {
		t.Errorf("fsck --json printed %q, want tempFiles 1, staleTempFiles 0", out)
	}
	out = e.ok("", "cas", "gc", "--grace", "0")
	if !strings.Contains(out, "temp files removed: 0\n") {
		t.Errorf("gc printed %q, want no temporary file removed", out)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("gc --grace 0 removed a live writer's temporary file: %v", err)
	}
}

// TestGCUnknownEdges: an unreachable object whose edges cannot be known
// (bytes that are not a node) stops "uwf cas gc" before anything is
// deleted: exit 1, the object named on stderr, the garbage still there.
func TestGCUnknownEdges(t *testing.T) {
	e := newEnv(t)
	garbage := e.okHash("", "cas", "put-text", "garbage")
	data := []byte("not a node")
	h := cas.Sum(data)
	name := h.String()
	path := filepath.Join(e.storeDir(), "objects", name[len(name)-2:], name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, e.clock.Now(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	for _, args := range [][]string{{"cas", "gc", "--dry-run"}, {"cas", "gc"}} {
		r := e.run("", args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "unreachable object "+name) || !strings.HasSuffix(r.stderr, ": nothing deleted\n") {
			t.Errorf("uwf %q: %v; want exit 1 naming %s, \"nothing deleted\"", args, r, name)
		}
	}
	if out := e.ok("", "cas", "has", garbage.String()); out != "yes\n" {
		t.Errorf("the garbage is gone after a GC that deleted nothing: has = %q", out)
	}
}

// TestGCLogRetentionPrefix: runs/ keeps its log an hour by default, the
// rest 30 days; "--log-retention PREFIX=D" changes a prefix's, so a value
// only an old log entry names goes or stays accordingly.
func TestGCLogRetentionPrefix(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		runGone  bool // runs/x's middle value collected
		laneGone bool // lanes/x's middle value collected
	}{
		{"defaults", nil, true, false},
		{"runs/ kept a day", []string{"--log-retention", "runs/=1d"}, false, false},
		{"none for lanes/", []string{"--log-retention", "lanes/=0", "--log-retention", "runs/=3h"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			set := func(ref string, vals ...string) []cas.Hash {
				var hs []cas.Hash
				for _, v := range vals {
					h := e.okHash("", "cas", "put-text", v)
					e.ok("", "cas", "ref", "set", ref, h.String())
					hs = append(hs, h)
				}
				return hs
			}
			run := set("runs/x", "run 1", "run 2", "run 3")
			lane := set("lanes/x", "lane 1", "lane 2", "lane 3")
			e.clock.Advance(2 * time.Hour)
			e.ok("", append([]string{"cas", "gc"}, tc.args...)...)
			has := func(h cas.Hash) bool { return e.run("", "cas", "has", h.String()).stdout == "yes\n" }
			if has(run[1]) == tc.runGone {
				t.Errorf("runs/x's middle value present = %v, want %v", tc.runGone, !tc.runGone)
			}
			if has(lane[1]) == tc.laneGone {
				t.Errorf("lanes/x's middle value present = %v, want %v", tc.laneGone, !tc.laneGone)
			}
			if !has(run[2]) || !has(lane[2]) {
				t.Error("a ref's target was collected")
			}
			// runs/x holds text, not a run record: fsck would name it.
			e.ok("", "cas", "ref", "rm", "runs/x")
			e.ok("", "cas", "fsck")
		})
	}
}

// TestGCDropsCacheEntries: once a thread's ref is removed and GC sweeps
// its nodes, "uwf cas gc" drops their derived-cache entries and says how
// many; a dry run says the same and drops nothing.
func TestGCDropsCacheEntries(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "cache me", "--cwd", "/"))
	e.ok("", "thread", "step", id, "-n", "3", "--agent", "synth")
	e.ok("", "thread", "show", id)
	cacheFiles := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(e.storeDir(), "cache"), func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	before := cacheFiles()
	if before == 0 {
		t.Fatal("the thread left no derived-cache entry: nothing to test")
	}
	e.ok("", "cas", "ref", "rm", "threads/"+id)
	e.clock.Advance(time.Minute)
	kept := cacheFiles() // the ref's entry went with the ref
	dropped := func(out, label string) int {
		t.Helper()
		for _, line := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(line, label+":"); ok {
				n, err := strconv.Atoi(strings.TrimSpace(rest))
				if err != nil {
					t.Fatalf("gc printed %q: %v", line, err)
				}
				return n
			}
		}
		t.Fatalf("gc printed %q, want a line %q", out, label+":")
		return 0
	}
	// fsck names them only once GC collected their nodes: now they are
	// only unreachable.
	if out := e.ok("", "cas", "fsck"); strings.Contains(out, "warning: derived cache") {
		t.Errorf("fsck before gc printed %q, want no warning about the cache", out)
	}
	out := e.ok("", "cas", "gc", "--dry-run", "--grace", "0", "--log-retention", "0")
	if n := dropped(out, "would drop cache"); n != kept || cacheFiles() != kept {
		t.Errorf("gc --dry-run: would drop %d of %d entries, %d left; want all %d, none dropped", n, kept, cacheFiles(), kept)
	}
	out = e.ok("", "cas", "gc", "--grace", "0", "--log-retention", "0")
	if n := dropped(out, "cache dropped"); n != kept || cacheFiles() != 0 {
		t.Errorf("gc: dropped %d of %d entries, %d left; want all dropped", n, kept, cacheFiles())
	}
	out = e.ok("", "cas", "gc", "--json")
	if !strings.Contains(out, `"cacheEntriesDropped":0,`) {
		t.Errorf("a second gc --json printed %q, want cacheEntriesDropped 0", out)
	}
	// An entry of a node that is gone (an older build's GC left it): fsck
	// warns and exits 0; the next gc drops it.
	d, err := disk.Open(e.storeDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = d.PutDerived(t.Context(), "chain/"+cas.Sum([]byte("gone")).String(), []byte("{}"))
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out := e.ok("", "cas", "fsck"); !strings.Contains(out, "warning: derived cache: 1 entry of nodes or refs that are gone (not a problem: gc drops them)\n") {
		t.Errorf("fsck printed %q, want a warning about one orphan cache entry", out)
	}
	if out := e.ok("", "cas", "fsck", "--json"); !strings.Contains(out, `"orphanCacheEntries":1,`) {
		t.Errorf("fsck --json printed %q, want orphanCacheEntries 1", out)
	}
	if out := e.ok("", "cas", "gc"); dropped(out, "cache dropped") != 1 {
		t.Errorf("gc printed %q, want one cache entry dropped", out)
	}
}
