package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
