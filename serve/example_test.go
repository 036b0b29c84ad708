package serve_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/serve"
)

// Serve a store on loopback, read a route without a token, and see a
// mutation without one refused.
func ExampleServer_Serve() {
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(context.Background(), mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	srv, err := serve.New(repo, nil) // a generated token; the current directory as the root
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	resp, err := http.Get(base + "/api/v1/threads")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, strings.TrimSpace(string(body)))

	resp, err = http.Post(base+"/api/v1/threads/01JGJFGS3P0000000000000000/kill", "application/json", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	stop()
	fmt.Println(<-done)
	// Output:
	// 200 OK {"threads":[],"next":null,"leftOut":[]}
	// 401 Unauthorized
	// <nil>
}
