package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/serve"
	"github.com/uncaged/uwf/store"
	"github.com/uncaged/uwf/thread"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testToken is the servers' token in tests.
const testToken = "test-token-0123456789abcdef"

// clock is a test clock that moves a millisecond at every reading, so
// times are fixed but distinct.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// env is a server over one backend, listening on loopback.
type env struct {
	t     *testing.T
	repo  *cas.Repo
	srv   *serve.Server
	eng   *thread.Engine // the test's own engine, with the same clock and IDs
	base  string         // http://127.0.0.1:PORT
	port  string
	clock *clock
	ids   atomic.Uint64
	root  string
	url   string // the store URL ("" for memory)
}

var backends = []string{"memory", "disk", "postgres"}

// openRepo opens a store of the backend for t.
func openRepo(t testing.TB, backend string, c *clock) (*cas.Repo, string) {
	t.Helper()
	switch backend {
	case "memory":
		mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
		repo, err := cas.Open(t.Context(), mem, mem.Refs(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return repo, ""
	case "disk":
		url := filepath.Join(t.TempDir(), "store") + "?durability=none"
		repo, release, err := store.Open(t.Context(), url, &store.Options{Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		return repo, url
	case "postgres":
		base := pgtest.URL(t)
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		url := base + sep + "schema=" + pgtest.Schema(t, "uwf_serve_")
		repo, release, err := store.Open(t.Context(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		return repo, url
	}
	t.Fatalf("unknown backend %s", backend)
	return nil, ""
}

func newEnv(t *testing.T, backend string) *env {
	return newEnvWith(t, backend, "127.0.0.1:0", nil)
}

// newEnvWith starts a server on addr; edit may change its options.
func newEnvWith(t *testing.T, backend, addr string, edit func(*serve.Options)) *env {
	t.Helper()
	e := &env{t: t, clock: &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}, root: t.TempDir()}
	// The store has its own clock: the backends read theirs a different
	// number of times, and the engine's times must not depend on it.
	e.repo, e.url = openRepo(t, backend, &clock{t: e.clock.t})
	topts := &thread.Options{Now: e.clock.Now, NewID: func() ulid.ULID {
		return ulid.MustNew(uint64(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()), &seqReader{n: e.ids.Add(1)})
	}}
	e.eng = thread.New(e.repo, topts)
	opts := &serve.Options{Token: testToken, ExplicitToken: true, Root: e.root, Engine: topts,
		Run: thread.RunOptions{Store: e.url}}
	if edit != nil {
		edit(opts)
	}
	srv, err := serve.New(e.repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, e.port, _ = net.SplitHostPort(ln.Addr().String())
	e.base = "http://127.0.0.1:" + e.port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// seqReader makes a ULID's entropy from a counter, so IDs are fixed and
// ordered.
type seqReader struct{ n uint64 }

func (r *seqReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	for i := 0; i < 8 && i < len(p); i++ {
		p[len(p)-1-i] = byte(r.n >> (8 * i))
	}
	return len(p), nil
}

// reviewLoop registers the bundled review-loop workflow.
func (e *env) reviewLoop() cas.Hash {
	e.t.Helper()
	data, err := examples.FS.ReadFile("review-loop.yaml")
	if err != nil {
		e.t.Fatal(err)
	}
	wf, err := registry.Parse("review-loop.yaml", data)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.eng.Registry().Put(e.t.Context(), wf)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Hash
}

// run starts a thread of wf and runs it with the synth agent to its end.
func (e *env) run(wf cas.Hash, prompt string, seed int64) string {
	e.t.Helper()
	id, _, err := e.eng.Run(e.t.Context(), wf, prompt, e.root, &thread.RunOptions{Agent: "synth", Seed: seed})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// response is an answer read whole.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request; auth adds the bearer token. Headers are "Key: value".
func (e *env) do(method, path, body string, auth bool, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+testToken)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

// getJSON gets path and decodes a 200 answer into v.
func (e *env) getJSON(path string, v any) {
	e.t.Helper()
	r := e.do("GET", path, "", false)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		e.t.Fatalf("GET %s: %v\n%s", path, err, r.body)
	}
}

// sseEvent is one event of an events stream.
type sseEvent struct {
	id, event, data string
}

// stream is an open events stream.
type stream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// subscribe opens GET path (an events URL) with Last-Event-ID lastID if
// not "", and waits for its ready event.
func (e *env) subscribe(path, lastID string) (*stream, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.base+path, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, &statusError{resp.StatusCode, string(b)}
	}
	s := &stream{resp: resp, events: make(chan sseEvent, 1024), cancel: cancel}
	go readSSE(resp.Body, s.events)
	select {
	case ev := <-s.events:
		if ev.event != "ready" {
			s.close()
			return nil, errors.New("first event is " + ev.event + ", not ready")
		}
	case <-time.After(10 * time.Second):
		s.close()
		return nil, errors.New("no ready event in 10 s")
	}
	return s, nil
}

type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return http.StatusText(e.status) + ": " + e.body }

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next event named name (others are skipped), waiting up
// to d.
func (s *stream) next(name string, d time.Duration) (sseEvent, bool) {
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return sseEvent{}, false
			}
			if ev.event == name {
				return ev, true
			}
		case <-timeout:
			return sseEvent{}, false
		}
	}
}

// readSSE parses Server-Sent Events from r into out, closing it at the
// end.
func readSSE(r io.Reader, out chan<- sseEvent) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.event != "" || ev.data != "" {
				if ev.event == "" {
					ev.event = "message"
				}
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
		default:
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.event = v
			case "data":
				ev.data += v
			}
		}
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d (go test -update rewrites it):\nwant %s\n got %s", path, i+1, w, g)
			}
		}
	}
}

func storeOpen(t *testing.T, url string) (*cas.Repo, func(), error) {
	return store.Open(t.Context(), url, nil)
}
