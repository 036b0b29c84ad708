package cas_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/uncaged/uwf/cas"
)

// Export a store as a tar and import it into another.
func ExampleExport() {
	ctx := context.Background()
	src := cas.NewMemStore(nil)
	from, err := cas.Open(ctx, src, src.Refs(), nil)
	if err != nil {
		panic(err)
	}
	h, err := from.Put(ctx, cas.ContentSchema, "hello")
	if err != nil {
		panic(err)
	}
	if err := from.Refs().CompareAndSwap(ctx, "notes/hello", 0, h, "create"); err != nil {
		panic(err)
	}

	var tar bytes.Buffer
	st, err := cas.Export(ctx, from, &tar, []string{"notes/hello"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("exported %d objects, %d ref, %d log\n", st.Objects, st.Refs, st.Logs)

	dst := cas.NewMemStore(nil)
	to, err := cas.Open(ctx, dst, dst.Refs(), nil)
	if err != nil {
		panic(err)
	}
	rep, err := cas.Import(ctx, to, &tar, nil)
	if err != nil {
		panic(err)
	}
	got, _ := to.Refs().Get(ctx, "notes/hello")
	fmt.Println("created", rep.Created, "at the same node:", got == h)
	// Output:
	// exported 3 objects, 1 ref, 1 log
	// created [notes/hello] at the same node: true
}
