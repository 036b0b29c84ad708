package dirnotify_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/uncaged/uwf/internal/dirnotify"
)

// TestStart: the creation of the folder, then a write in it, each wake
// the caller; after stop, nothing does.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	woken := make(chan struct{}, 100)
	stop, err := dirnotify.Start(dir, "journal", func() { woken <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	wait := func(what string) {
		t.Helper()
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatalf("no wake-up within 5s of %s", what)
		}
		for len(woken) > 0 {
			<-woken
		}
	}
	sub := filepath.Join(dir, "journal")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	wait("the folder's creation")
	if err := os.WriteFile(filepath.Join(sub, "1"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait("a file's creation in it")
	f, err := os.OpenFile(filepath.Join(sub, "1"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("more"); err != nil {
		t.Fatal(err)
	}
	wait("an append")
	stop()
	// Wake-ups made before stop returned (a late event of the append) are
	// not the point; none may come after it.
	for len(woken) > 0 {
		<-woken
	}
	if _, err := f.WriteString("after"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
		t.Error("woken after stop")
	case <-time.After(100 * time.Millisecond):
	}
}
