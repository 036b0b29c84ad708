package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/postgres"
)

// Open a store in PostgreSQL and use it through the typed layer. (Not run
// by go test: it needs a server.)
func ExampleOpen() {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv("UWF_STORE"), &postgres.Options{Schema: "uwf"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	repo, err := cas.Open(ctx, st, st.Refs(), nil)
	if err != nil {
		log.Fatal(err)
	}
	h, err := repo.Put(ctx, cas.ContentSchema, "hello")
	if err != nil {
		log.Fatal(err)
	}
	if err := repo.Refs().CompareAndSwap(ctx, "notes/hello", 0, h, "create"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(h)
}
