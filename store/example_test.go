package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/store"
)

// An agent that uwf runs is handed the store in UWF_STORE; it opens it
// exactly as uwf does, whatever the backend (a folder, file://...,
// postgres://...), and reads or writes through the typed layer.
func ExampleOpen() {
	// uwf sets UWF_STORE for the agent; here a fresh folder stands in.
	tmp, err := os.MkdirTemp("", "uwf-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	os.Setenv("UWF_STORE", filepath.Join(tmp, "store")+"?durability=none")
	defer os.Unsetenv("UWF_STORE")

	ctx := context.Background()
	repo, release, err := store.Open(ctx, os.Getenv("UWF_STORE"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer release()
	h, err := repo.Put(ctx, cas.ContentSchema, "hello")
	if err != nil {
		log.Fatal(err)
	}
	n, err := repo.Get(ctx, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h, n.Payload)
	// Output: AGQZR3QB24MV2 hello
}

// Parse shows which backend a URL names without opening anything.
func ExampleParse() {
	for _, url := range []string{"/srv/uwf/store?durability=none", "file:///srv/uwf%20store", "postgres://uwf@db/uwf"} {
		loc, err := store.Parse(url)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("dir=%q durability=%q postgres=%q\n", loc.Dir, loc.Durability, loc.Postgres)
	}
	// Output:
	// dir="/srv/uwf/store" durability="none" postgres=""
	// dir="/srv/uwf store" durability="" postgres=""
	// dir="" durability="" postgres="postgres://uwf@db/uwf"
}
