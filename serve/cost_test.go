package serve_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/serve"
	"github.com/uncaged/uwf/thread"
)

// countingNodes counts node reads (Get) and keeps the memory store's
// derived cache visible through the wrapper.
type countingNodes struct {
	*cas.MemStore
	gets atomic.Int64
}

func (s *countingNodes) Get(ctx context.Context, h cas.Hash) ([]byte, error) {
	s.gets.Add(1)
	return s.MemStore.Get(ctx, h)
}

// countingLogs counts the ref-log entries read through Log.
type countingLogs struct {
	*cas.MemRefs
	entries atomic.Int64
}

func (r *countingLogs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	es, err := r.MemRefs.Log(ctx, name)
	r.entries.Add(int64(len(es)))
	return es, err
}

// costDepth is the depth of the deep thread of TestPageCostBounded: 20,000,
// or UWF_TEST_DEPTH (100,000 is the size).
func costDepth(t *testing.T) int {
	if s := os.Getenv("UWF_TEST_DEPTH"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 200 {
			t.Fatalf("UWF_TEST_DEPTH=%q: want a number of at least 200", s)
		}
		return n
	}
	return 20_000
}

// deepRepo is a memory store holding a thread of n steps written straight
// into it, as an older build would have left it (no derived-cache entry),
// with a ref log of n+1 entries, and a fork of it 10 steps below its head.
type deepRepo struct {
	repo        *cas.Repo
	nodes       *countingNodes
	logs        *countingLogs
	id, fork    string
	depth, fdep int
}

func newDeepRepo(t *testing.T, n int) *deepRepo {
	t.Helper()
	ctx := t.Context()
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	d := &deepRepo{nodes: &countingNodes{MemStore: mem}, logs: &countingLogs{MemRefs: mem.Refs()}, depth: n}
	repo, err := cas.Open(ctx, d.nodes, d.logs, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.repo = repo
	put := func(typ cas.Hash, payload any) cas.Hash {
		h, err := repo.Put(ctx, typ, payload)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	wf := put(cas.WorkflowSchema, map[string]any{"name": "deep", "roles": map[string]any{}, "graph": map[string]any{}})
	out := put(cas.ContentSchema, "---\nstatus: again\n---\nthe body")
	det := put(cas.DetailSchema, (&thread.Detail{Prompt: put(cas.ContentSchema, "prompt"), Raw: out, EdgePrompt: "go on", DurationMs: 5, Attempts: []cas.Hash{}}).Payload())
	hs := make([]cas.Hash, n+1)
	hs[0] = put(cas.StartSchema, (&thread.Start{Workflow: wf, Prompt: "deep", Cwd: t.TempDir()}).Payload())
	d.id = ulid.MustNew(uint64(c.t.UnixMilli()), nil).String()
	ref := thread.ThreadPrefix + d.id
	if err := d.logs.CompareAndSwap(ctx, ref, 0, hs[0], "start"); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= n; k++ {
		ch := thread.Chain{Start: hs[0], Depth: k}
		if k > 1 {
			ch.Prev = hs[k-1]
		}
		for j := 1; j <= thread.MaxSkip && k-(1<<j) >= 1; j++ {
			ch.Skip = append(ch.Skip, hs[k-(1<<j)])
		}
		s := &thread.Step{Chain: ch, Role: "worker", Output: out, Detail: det, Agent: "synth", StartedAt: int64(k), CompletedAt: int64(k) + 1}
		hs[k] = put(cas.StepSchema, s.Payload())
		if err := d.logs.CompareAndSwap(ctx, ref, hs[k-1], hs[k], "step worker"); err != nil {
			t.Fatal(err)
		}
	}
	d.fdep = n - 10
	if d.fork, _, err = thread.New(repo, nil).ForkAt(ctx, d.id, d.fdep); err != nil {
		t.Fatal(err)
	}
	return d
}

// get answers one GET from a server new for it (cold in-process caches,
// as after a restart) and returns what it read: nodes and log entries.
func (d *deepRepo) get(t *testing.T, path string) (body string, c cost) {
	t.Helper()
	srv, err := serve.New(d.repo, &serve.Options{Token: testToken, ExplicitToken: true, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	n0, l0 := d.nodes.gets.Load(), d.logs.entries.Load()
	resp, err := http.Get("http://" + ln.Addr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	return string(b), cost{d.nodes.gets.Load() - n0, d.logs.entries.Load() - l0}
}

// cost is what one request read.
type cost struct{ nodes, logEntries int64 }

// TestPageCostBounded: through the server, the API's thread page (the
// thread, its newest 50 steps), the viewer's thread page and the fork tree
// of a thread 100 and 20,000 steps deep (UWF_TEST_DEPTH), whose ref log is
// as long, and of a fork of it, read no ref-log entry once the step cache
// holds the threads' origins and chain entries (the first show of a thread
// an older build wrote fills them, walking its chain back to the start or
// the nearest checkpoint once), and a number of nodes that does not grow with the depth
// but for the skip pointers that check a fork point (log2 of the distance,
// at most MaxSkip per thread).
func TestPageCostBounded(t *testing.T) {
	const maxReads = 400 // a page of 50 steps reads each step and its output, the viewer's its detail too
	deep := costDepth(t)
	type page struct{ name, path, want string }
	var costs [2][]cost
	for i, depth := range []int{100, deep} {
		d := newDeepRepo(t, depth)
		pages := []page{
			{"API thread", "/api/v1/threads/" + d.id, `"depth":` + strconv.Itoa(depth)},
			{"API steps", "/api/v1/threads/" + d.id + "/steps?limit=50", `"more":true`},
			{"API fork", "/api/v1/threads/" + d.fork, `"forked":true,"thread":"` + d.id + `"`},
			{"API fork steps", "/api/v1/threads/" + d.fork + "/steps?limit=50", `"more":true`},
			{"viewer thread", "/threads/" + d.id, "#" + strconv.Itoa(depth)},
			{"viewer fork", "/threads/" + d.fork, "forked from"},
			{"fork tree", "/threads/" + d.id + "/forks", "forked at depth " + strconv.Itoa(d.fdep)},
		}
		// The first show of the deep thread fills its origin from the log
		// and its chain entries from its nodes; the fork's its own.
		_, first := d.get(t, "/api/v1/threads/"+d.id)
		_, firstFork := d.get(t, "/api/v1/threads/"+d.fork)
		t.Logf("depth %d: the first show read %+v, of the fork %+v", depth, first, firstFork)
		for _, p := range pages {
			body, c := d.get(t, p.path)
			if !strings.Contains(body, p.want) {
				t.Errorf("depth %d: %s (%s) lacks %q", depth, p.name, p.path, p.want)
			}
			if c.logEntries != 0 || c.nodes > maxReads {
				t.Errorf("depth %d: %s read %d nodes and %d log entries, want at most %d and none", depth, p.name, c.nodes, c.logEntries, maxReads)
			}
			costs[i] = append(costs[i], c)
		}
		t.Logf("depth %d: %+v", depth, costs[i])
	}
	for j := range costs[0] {
		if g := costs[1][j].nodes - costs[0][j].nodes; g < 0 || g > 2*thread.MaxSkip {
			t.Errorf("request %d read %d nodes at depth 100 and %d at depth %d: more than the skip pointers apart", j, costs[0][j].nodes, costs[1][j].nodes, deep)
		}
	}
}
