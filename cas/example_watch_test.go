package cas_test

import (
	"context"
	"fmt"

	"github.com/uncaged/uwf/cas"
)

// ExampleRepo_Watch follows a store's ref changes: take the head, read
// state, then watch from the head, so nothing committed after the read is
// missed; resume later from an event's cursor.
func ExampleRepo_Watch() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	head, err := repo.WatchHead(ctx)
	if err != nil {
		panic(err)
	}
	a, _ := repo.Put(ctx, cas.ContentSchema, "a")
	b, _ := repo.Put(ctx, cas.ContentSchema, "b")
	refs := repo.Refs()
	_ = refs.CompareAndSwap(ctx, "threads/x", 0, a, "start")
	_ = refs.CompareAndSwap(ctx, "workflows/y", 0, b, "register")
	_ = refs.CompareAndSwap(ctx, "threads/x", a, b, "step")
	var resume cas.Cursor
	n := 0
	for e, err := range repo.Watch(ctx, "threads/", head) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Ref, e.Message, e.Old == 0, e.New == a || e.New == b)
		if n++; n == 1 {
			resume = e.Cursor
		}
		if n == 2 {
			break
		}
	}
	// From the first event's cursor: only what came after it.
	for e, err := range repo.Watch(ctx, "threads/", resume) {
		if err != nil {
			panic(err)
		}
		fmt.Println("resumed:", e.Message)
		break
	}
	// Output:
	// threads/x start true true
	// threads/x step false true
	// resumed: step
}
