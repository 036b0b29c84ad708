package serve_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/serve"
	"github.com/uncaged/uwf/thread"
)

// TestShutdownCancelsSteps: a thread this server is stepping refuses
// another step (409); shutting down cancels the running background step,
// whose agent is stopped, and leaves its thread exactly as it was; Serve
// returns promptly.
func TestShutdownCancelsSteps(t *testing.T) {
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  slow:\n    command: sleep\n    args: [\"60\"]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: &clock{t: time.Now()}, root: t.TempDir()}
	e.repo, _ = openRepo(t, "memory", e.clock)
	e.eng = thread.New(e.repo, nil)
	wf := e.reviewLoop()
	srv, err := serve.New(e.repo, &serve.Options{Token: testToken, ExplicitToken: true, Root: e.root, Run: thread.RunOptions{Config: cfg}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, e.port, _ = net.SplitHostPort(ln.Addr().String())
	e.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	sub, err := e.subscribe("/api/v1/events", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	r := e.do("POST", "/api/v1/threads", `{"workflow":"`+wf.String()+`","prompt":"p","agent":"slow"}`, true)
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var started struct{ Thread, Head string }
	json.Unmarshal([]byte(r.body), &started)
	if ev, ok := sub.next("progress", 10*time.Second); !ok || !strings.Contains(ev.data, `"type":"running"`) {
		t.Fatalf("no running event: %+v", ev)
	}
	// One background step loop per thread at a time.
	if r := e.do("POST", "/api/v1/threads/"+started.Thread+"/step", `{"agent":"slow"}`, true); r.status != http.StatusConflict {
		t.Errorf("a step while the server steps the thread: %d %s, want 409", r.status, r.body)
	}
	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return 15 s after the shutdown began")
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the shutdown took %s", took)
	}
	info, err := e.eng.Show(t.Context(), started.Thread)
	if err != nil {
		t.Fatal(err)
	}
	if info.Head.String() != started.Head || info.Status != thread.StatusActive || info.LastFailure != nil {
		t.Errorf("after the shutdown the thread is %+v, want it as it was (head %s, active, no failure)", info, started.Head)
	}
}
