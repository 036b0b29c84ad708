package disk_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/uncaged/uwf/cas/disk"
)

func Example() {
	dir, err := os.MkdirTemp("", "uwf-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	clock := func() time.Time { return time.UnixMilli(1700000000000) }

	s, err := disk.OpenOrCreate(filepath.Join(dir, "store"), &disk.Options{Now: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	h, err := s.Put(ctx, []byte("hello"))
	if err != nil {
		log.Fatal(err)
	}
	data, err := s.Get(ctx, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h, string(data))

	refs := s.Refs()
	if err := refs.CompareAndSwap(ctx, "greetings/hello", 0, h, "first greeting"); err != nil {
		log.Fatal(err)
	}
	entries, err := refs.Log(ctx, "greetings/hello")
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Println(e.Old, "->", e.New, e.Time, e.Message)
	}
	// Output:
	// 2DHW2FP49YVD3 hello
	// 0000000000000 -> 2DHW2FP49YVD3 1700000000000 first greeting
}
