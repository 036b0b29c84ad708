package cas_test

import (
	"context"
	"fmt"

	"github.com/uncaged/uwf/cas"
)

// ExampleRepo shows the main path: register a schema, put typed nodes that
// refer to each other, name the top one with a ref, and walk the graph.
func ExampleRepo() {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	note, err := repo.PutSchema(ctx, "note", map[string]any{
		"type":       "object",
		"properties": map[string]any{"title": map[string]any{"type": "string"}, "body": map[string]any{"type": "string", "format": "cas_ref"}},
		"required":   []any{"title", "body"},
	})
	if err != nil {
		panic(err)
	}
	body, _ := repo.Put(ctx, cas.ContentSchema, "hello")
	n, err := repo.Put(ctx, note, map[string]any{"title": "first", "body": body.String()})
	if err != nil {
		panic(err)
	}
	if err := repo.Refs().CompareAndSwap(ctx, "notes/first", 0, n, "create"); err != nil {
		panic(err)
	}
	data, _ := repo.Store().Get(ctx, body)
	fmt.Printf("%s\n", data)
	repo.Walk(ctx, []cas.Hash{n}, func(h cas.Hash, node cas.Node, edges []cas.Hash) error {
		fmt.Println(h == n, h == note, h == body, len(edges))
		return nil
	})
	// Output:
	// {"payload":"hello","type":"54YMEB1H6FVZG"}
	// true false false 2
	// false true false 1
	// false false true 1
	// false false false 0
	// false false false 1
}
