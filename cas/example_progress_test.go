package cas_test

import (
	"context"
	"fmt"

	"github.com/uncaged/uwf/cas"
)

// ExampleWithProgress shows a long operation reporting its progress: each
// phase's first report, then (for longer work) one at most every
// ProgressInterval, then a Final one. A phase with a Total has an ETA.
func ExampleWithProgress() {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	for i := range 3 {
		repo.Put(ctx, cas.ContentSchema, fmt.Sprintf("text %d", i))
	}
	ctx = cas.WithProgress(ctx, func(p cas.Progress) {
		if p.Final {
			fmt.Printf("%s %s: %d of %d %s\n", p.Op, p.Phase, p.Done, p.Total, p.Unit)
		}
	})
	if _, err := repo.Fsck(ctx, nil); err != nil {
		panic(err)
	}
	// The built-in schemas and their refs count too.

	// Output:
	// fsck list: 11 of 0 objects
	// fsck objects: 11 of 11 objects
	// fsck refs: 8 of 0 refs
}
