package cas_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// TestMemWatch follows a memory store's refs: changes before and after the
// watch starts, a prefix filter, resuming from a cursor, a bad cursor.
func TestMemWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := cas.NewMemStore(nil)
	refs := st.Refs()
	var zero cas.Hash
	h1, _ := st.Put(ctx, []byte("one"))
	h2, _ := st.Put(ctx, []byte("two"))
	if err := refs.CompareAndSwap(ctx, "a/x", zero, h1, "create"); err != nil {
		t.Fatal(err)
	}
	head, err := refs.WatchHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = refs.CompareAndSwap(ctx, "b/y", zero, h2, "other")
		_ = refs.CompareAndSwap(ctx, "a/x", h1, h2, "move")
	}()
	var got []cas.Event
	for e, err := range refs.Watch(ctx, "a/", "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
		if len(got) == 2 {
			break
		}
	}
	if got[0].Message != "create" || got[1].Message != "move" || got[1].Old != h1 || got[1].New != h2 {
		t.Fatalf("events = %+v", got)
	}
	// From the head taken after "create": only the two later changes.
	var after []string
	for e, err := range refs.Watch(ctx, "", head) {
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, e.Ref)
		if len(after) == 2 {
			break
		}
	}
	if after[0] != "b/y" || after[1] != "a/x" {
		t.Fatalf("after head: %v", after)
	}
	for _, err := range refs.Watch(ctx, "", "x1") {
		if !errors.Is(err, cas.ErrInvalidCursor) {
			t.Fatalf("bad cursor: %v", err)
		}
		break
	}
}
