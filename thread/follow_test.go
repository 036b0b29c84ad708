package thread_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// TestFollow: Follow yields the chain from a depth, then every node as it
// lands, in order, once each, whoever moves the thread; a removal ends it
// with ErrNotFound.
func TestFollow(t *testing.T) {
	te := newTEnv(t)
	id := te.start()
	for range 3 {
		if _, err := te.e.Resume(te.ctx, id, "before"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(te.ctx, 20*time.Second)
	defer cancel()
	got := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		for en, err := range te.engine().Follow(ctx, id, 2) {
			if err != nil {
				done <- err
				return
			}
			got <- fmt.Sprintf("%d %s %s", en.Depth(), en.Kind, en.Mark.Reason)
		}
		done <- nil
	}()
	want := []string{"2 mark before", "3 mark before"}
	for i := range 4 {
		if _, err := te.e.Resume(te.ctx, id, fmt.Sprint("after ", i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%d mark after %d", 4+i, i))
	}
	for i, w := range want {
		select {
		case g := <-got:
			if g != w {
				t.Errorf("node %d: %q, want %q", i, g, w)
			}
		case <-ctx.Done():
			t.Fatalf("node %d: nothing in 20 s, want %q", i, w)
		}
	}
	if err := te.e.Remove(te.ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("after removal: %v, want ErrNotFound", err)
	}
	if len(got) != 0 {
		t.Errorf("more nodes than landed: %q", <-got)
	}
}
