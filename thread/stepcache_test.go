package thread_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/thread"
)

// countingRefs counts the ref-log entries read through Log.
type countingRefs struct {
	*cas.MemRefs
	logEntries atomic.Int64
}

func (r *countingRefs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	es, err := r.MemRefs.Log(ctx, name)
	r.logEntries.Add(int64(len(es)))
	return es, err
}

// loopWith is loopWorkflow with the step limit maxSteps.
func loopWith(maxSteps int) string {
	return "name: loop\nmaxSteps: " + strconv.Itoa(maxSteps) + loopWorkflow[len("name: loop\nmaxSteps: 20"):]
}

// deepThread builds a thread of wf, a loop workflow, with n worker steps
// (each answering "again") straight into the store, as an older build
// would have left it: no derived-cache entry. Its ref is moved once per
// step, so its log holds n+1 entries. It returns the id and the node at
// every depth.
func (te *tenv) deepThread(wf cas.Hash, n int) (string, []cas.Hash) {
	te.t.Helper()
	ctx := te.ctx
	stored, err := te.e.Registry().LoadStored(ctx, wf)
	if err != nil {
		te.t.Fatal(err)
	}
	out := te.put(stored.Schemas["worker"], map[string]any{"status": "again"})
	startHash := te.put(cas.StartSchema, (&thread.Start{Workflow: wf, Prompt: "deep", Cwd: te.t.TempDir()}).Payload())
	tid := thread.ThreadPrefix + ulid.MustNew(uint64(te.clock.Now().UnixMilli())+te.ids.Add(1), nil).String()
	if err := te.refs.CompareAndSwap(ctx, tid, 0, startHash, "start"); err != nil {
		te.t.Fatal(err)
	}
	hs := make([]cas.Hash, n+1)
	hs[0] = startHash
	for d := 1; d <= n; d++ {
		c := thread.Chain{Start: startHash, Depth: d}
		if d > 1 {
			c.Prev = hs[d-1]
		}
		for k := 1; k <= thread.MaxSkip && d-(1<<k) >= 1; k++ {
			c.Skip = append(c.Skip, hs[d-(1<<k)])
		}
		s := &thread.Step{Chain: c, Role: "worker", Output: out, Detail: te.det, Agent: "synth", StartedAt: int64(d), CompletedAt: int64(d) + 1}
		data, err := cas.Node{Type: cas.StepSchema, Payload: s.Payload()}.Encode()
		if err != nil {
			te.t.Fatal(err)
		}
		if hs[d], err = te.st.Put(ctx, data); err != nil {
			te.t.Fatal(err)
		}
		if err := te.refs.CompareAndSwap(ctx, tid, hs[d-1], hs[d], "step worker"); err != nil {
			te.t.Fatal(err)
		}
	}
	return tid[len(thread.ThreadPrefix):], hs
}

// bigDepth is the depth of the deep thread in TestStepCostBounded:
// 100,000, or UWF_TEST_DEPTH.
func bigDepth(t *testing.T) int {
	if s := os.Getenv("UWF_TEST_DEPTH"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 200 {
			t.Fatalf("UWF_TEST_DEPTH=%q: want a number of at least 200", s)
		}
		return n
	}
	return 100_000
}

// cost is what one operation read: nodes from the store, entries of ref
// logs.
type cost struct{ nodes, logEntries int64 }

// measure runs op on a fresh engine (cold in-process caches, as a new CLI
// process) and returns what it read.
func (te *tenv) measure(cr *countingRefs, op func(e *thread.Engine) error) cost {
	te.t.Helper()
	e := te.engine()
	n0, l0 := te.cnt.gets.Load(), cr.logEntries.Load()
	if err := op(e); err != nil {
		te.t.Fatal(err)
	}
	return cost{te.cnt.gets.Load() - n0, cr.logEntries.Load() - l0}
}

// TestStepCostBounded: on a thread 100 and 100,000 steps deep whose ref
// log is as long, once the derived cache is filled (lazily, by the first
// show and step of a store an older build wrote), `thread show` and the
// next step (synth, under a step limit below the depth, so the limit is
// checked) read a small number of nodes, the same at any depth but for
// the new node's skip pointers (log2 of the depth, at most MaxSkip), and
// no log entry, whatever the depth (the thread so far in the prompt reads what fits the quota:
// here one entry). Two threads are measured at each depth: the deep thread
// itself, resumed (the limit counts from the resume), and a fork of it 10
// steps below its head (the limit counts from the fork point, which is
// then looked up).
func TestStepCostBounded(t *testing.T) {
	const maxReads = 40 // nodes for one show or one step, at any depth
	deep := bigDepth(t)
	var costs [2][4]cost // [depth][show, step of the thread; show, step of the fork]
	for i, depth := range []int{100, deep} {
		c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
		mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
		cr := &countingRefs{MemRefs: mem.Refs()}
		te := newTEnvOn(t, c, mem, cr)
		wf := te.putWorkflow(loopWith(50))
		built := time.Now()
		id, hs := te.deepThread(wf, depth)
		t.Logf("depth %d: built in %s", depth, time.Since(built).Round(time.Millisecond))
		// A quota of one character renders only the newest entry: what
		// the prompt's rendering reads is bounded by the quota alone.
		opts := &thread.RunOptions{Agent: "synth", Quota: 1}
		show := func(id string, wantDepth, originDepth int) func(e *thread.Engine) error {
			return func(e *thread.Engine) error {
				info, err := e.Show(te.ctx, id)
				if err == nil && (info.Depth != wantDepth || info.Origin.Node != hs[originDepth] || info.Origin.Depth != originDepth || info.Origin.Forked != (originDepth > 0)) {
					t.Errorf("depth %d: show %s = depth %d, origin %+v", depth, id, info.Depth, info.Origin)
				}
				return err
			}
		}
		step := func(id string, wantDepth int) func(e *thread.Engine) error {
			return func(e *thread.Engine) error {
				r, err := e.Step(te.ctx, id, opts)
				if err == nil && (r.Depth != wantDepth || r.Kind != thread.EventStep) {
					t.Errorf("depth %d: step of %s = %s at depth %d, want a step at %d", depth, id, r.Kind, r.Depth, wantDepth)
				}
				return err
			}
		}
		// The first show and the resume fill the cache from the log and
		// the nodes.
		first := te.measure(cr, show(id, depth, 0))
		resume := te.measure(cr, func(e *thread.Engine) error { _, err := e.Resume(te.ctx, id, "go on"); return err })
		t.Logf("depth %d: first show read %+v, the resume (filling the cache) %+v", depth, first, resume)
		te.measure(cr, step(id, depth+2))
		var fork string
		te.measure(cr, func(e *thread.Engine) (err error) { fork, _, err = e.ForkAt(te.ctx, id, depth-10); return err })
		te.measure(cr, show(fork, depth-10, depth-10))
		te.measure(cr, step(fork, depth-9))

		costs[i][0] = te.measure(cr, show(id, depth+2, 0))
		costs[i][1] = te.measure(cr, step(id, depth+3))
		costs[i][2] = te.measure(cr, show(fork, depth-9, depth-10))
		costs[i][3] = te.measure(cr, step(fork, depth-8))
		t.Logf("depth %d: thread show, step; fork show, step: %+v", depth, costs[i])
		for j, what := range []string{"show", "step", "fork show", "fork step"} {
			if c := costs[i][j]; c.nodes > maxReads || c.logEntries != 0 {
				t.Errorf("depth %d: %s read %d nodes and %d log entries, want at most %d and none", depth, what, c.nodes, c.logEntries, maxReads)
			}
		}
	}
	// The only reads that grow with depth are the new node's skip
	// pointers: log2(depth) of them, at most MaxSkip.
	for j := range costs[0] {
		if d := costs[1][j].nodes - costs[0][j].nodes; d < 0 || d > thread.MaxSkip {
			t.Errorf("operation %d read %d nodes at depth 100 and %d at depth %d: more than the skip pointers apart", j, costs[0][j].nodes, costs[1][j].nodes, deep)
		}
	}
}

// pingWorkflow loops on one role: synth, taking the statuses in turn,
// reaches stop at the 20th run only.
const pingWorkflow = `name: ping
maxSteps: 4
roles:
  worker:
    frontmatter:
      type: object
      properties: {status: {enum: [s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s18, s19, stop]}}
      required: [status]
graph:
  $START: {new: {role: worker, prompt: "Start."}}
  worker:
    s1: {role: worker, prompt: "Again 1."}
    s2: {role: worker, prompt: "Again 2."}
    s3: {role: worker, prompt: "Again 3."}
    s4: {role: worker, prompt: "Again 4."}
    s5: {role: worker, prompt: "Again 5."}
    s6: {role: worker, prompt: "Again 6."}
    s7: {role: worker, prompt: "Again 7."}
    s8: {role: worker, prompt: "Again 8."}
    s9: {role: worker, prompt: "Again 9."}
    s10: {role: worker, prompt: "Again 10."}
    s11: {role: worker, prompt: "Again 11."}
    s12: {role: worker, prompt: "Again 12."}
    s13: {role: worker, prompt: "Again 13."}
    s14: {role: worker, prompt: "Again 14."}
    s15: {role: worker, prompt: "Again 15."}
    s16: {role: worker, prompt: "Again 16."}
    s17: {role: worker, prompt: "Again 17."}
    s18: {role: worker, prompt: "Again 18."}
    s19: {role: worker, prompt: "Again 19."}
    stop: {role: $END, prompt: "Stop."}
`

// poisoner damages the derived-cache entries at keys before an operation.
type poisoner func(t *testing.T, d cas.Derived, keys []string, rng *rand.Rand)

var poisoners = map[string]poisoner{
	"none": func(*testing.T, cas.Derived, []string, *rand.Rand) {},
	"dropped": func(t *testing.T, d cas.Derived, keys []string, _ *rand.Rand) {
		for _, k := range keys {
			if err := d.DropDerived(t.Context(), k); err != nil {
				t.Fatal(err)
			}
		}
	},
	"garbage": func(t *testing.T, d cas.Derived, keys []string, rng *rand.Rand) {
		for _, k := range keys {
			put(t, d, k, [][]byte{[]byte("{"), []byte(""), []byte("null"), []byte(`{"v":1}`), []byte("\x00\xff")}[rng.IntN(5)])
		}
	},
	// Each entry goes to another key: a foreign entry.
	"shuffled": func(t *testing.T, d cas.Derived, keys []string, rng *rand.Rand) {
		var vals [][]byte
		for _, k := range keys {
			v, _, err := d.GetDerived(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals, v)
		}
		rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		for i, k := range keys {
			put(t, d, k, vals[i])
		}
	},
	// Each entry gets a plausible change of its own: a count moved, a
	// field naming another node; a ref entry names another node or
	// thread, the wrong depth, or flips whether the thread was forked,
	// keeping its old checksum (as damage would).
	"poisoned": func(t *testing.T, d cas.Derived, keys []string, rng *rand.Rand) {
		var nodes []any
		for _, k := range keys {
			if h, ok := strings.CutPrefix(k, "chain/"); ok {
				nodes = append(nodes, h)
			}
		}
		for _, k := range keys {
			v, ok, err := d.GetDerived(t.Context(), k)
			if err != nil || !ok {
				continue
			}
			var m map[string]any
			sum, body, isRef := bytes.Cut(v, []byte{'\n'}) // a ref entry: checksum, JSON
			if !isRef {
				body = v
			}
			if json.Unmarshal(body, &m) != nil {
				continue
			}
			if strings.HasPrefix(k, "chain/") {
				switch f := []string{"steps", "sinceResume", "resumeDepth", "depth", "roles", "from", "node"}[rng.IntN(7)]; f {
				case "roles":
					m[f] = map[string]any{"worker": float64(rng.IntN(50))}
				case "from", "node":
					m[f] = nodes[rng.IntN(len(nodes))]
				default:
					x, _ := m[f].(float64)
					m[f] = x + float64(1+rng.IntN(3))
				}
			} else {
				switch rng.IntN(4) {
				case 0:
					m["depth"] = m["depth"].(float64) + 1
				case 1:
					m["forked"] = !m["forked"].(bool)
					m["forkThread"] = ""
				case 2:
					m["node"] = nodes[rng.IntN(len(nodes))]
				case 3:
					m["ref"] = "threads/01JGJFGR490000000000000000"
				}
			}
			data, _ := json.Marshal(m)
			if isRef {
				data = append(append(sum, '\n'), data...) // the old checksum
			}
			put(t, d, k, data)
		}
	},
}

func put(t *testing.T, d cas.Derived, k string, v []byte) {
	t.Helper()
	if err := d.PutDerived(t.Context(), k, v); err != nil {
		t.Fatal(err)
	}
}

// cacheScenario runs steps, limits, resumes, forks and shows of the ping
// workflow (synth: each output names its step index and role run, so the
// counts show in every node hash), with fresh engines (as separate CLI
// processes) and poison applied to every derived-cache entry of its
// threads before each operation. It returns a transcript of the results.
func cacheScenario(t *testing.T, te *tenv, poison poisoner) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	wf := te.putWorkflow(pingWorkflow)
	var out, ids []string
	keys := func() []string {
		var ks []string
		for _, id := range ids {
			ks = append(ks, cas.RefDerivedKey(thread.ThreadPrefix+id))
			h, err := te.e.Head(te.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for n, err := range te.e.OldestFirst(te.ctx, h) {
				if err != nil {
					t.Fatal(err)
				}
				ks = append(ks, "chain/"+n.Hash.String())
			}
		}
		return ks
	}
	op := func(what string, f func(e *thread.Engine) (any, error)) {
		t.Helper()
		poison(t, te.repo.Derived(), keys(), rng)
		te.clock.Advance(time.Second)
		r, err := f(te.engine())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, _ := json.Marshal(r)
		out = append(out, what+": "+string(b))
	}
	opts := &thread.RunOptions{Agent: "synth"}
	show := func(id *string) func(e *thread.Engine) (any, error) {
		return func(e *thread.Engine) (any, error) {
			info, err := e.Show(te.ctx, *id)
			if err != nil {
				return nil, err
			}
			return []any{info.Head, info.Status, info.Depth, info.Origin}, nil
		}
	}
	steps := func(id *string, n int) func(e *thread.Engine) (any, error) {
		return func(e *thread.Engine) (any, error) {
			rs, err := e.StepN(te.ctx, *id, n, opts)
			var short []any
			for _, r := range rs {
				short = append(short, []any{r.Kind, r.Head, r.Depth, r.Status, r.Reason})
			}
			return short, err
		}
	}
	var a, b, c string
	op("start a", func(e *thread.Engine) (any, error) {
		var err error
		a, _, err = e.Start(te.ctx, wf, "task", "/tmp")
		ids = append(ids, a)
		return a, err
	})
	for i := range 5 {
		op("step a "+strconv.Itoa(i), steps(&a, 1)) // the fifth meets the limit
	}
	op("show a", show(&a))
	op("resume a", func(e *thread.Engine) (any, error) { return e.Resume(te.ctx, a, "go on") })
	op("steps a", steps(&a, 2))
	op("fork b at 3", func(e *thread.Engine) (any, error) {
		var err error
		b, _, err = e.ForkAt(te.ctx, a, 3)
		ids = append(ids, b)
		return b, err
	})
	op("show b", show(&b))
	op("run b", steps(&b, 0)) // to the limit, counted from the fork point
	op("show b again", show(&b))
	op("note a", func(e *thread.Engine) (any, error) { return e.Resume(te.ctx, a, "a note") })
	op("run a", steps(&a, 0))
	op("fork c at a's head", func(e *thread.Engine) (any, error) {
		h, err := e.Head(te.ctx, a)
		if err != nil {
			return nil, err
		}
		c, err = e.Fork(te.ctx, h, a)
		ids = append(ids, c)
		return c, err
	})
	op("resume c", func(e *thread.Engine) (any, error) { return e.Resume(te.ctx, c, "") })
	op("run c", steps(&c, 0))
	op("show c", show(&c))
	// Removed and restored, b begins a new incarnation at its head.
	op("remove and restore b", func(e *thread.Engine) (any, error) {
		if err := e.Remove(te.ctx, b); err != nil {
			return nil, err
		}
		return e.Repo().RestoreRef(te.ctx, thread.ThreadPrefix+b, 0)
	})
	op("show b restored", show(&b))
	op("resume b", func(e *thread.Engine) (any, error) { return e.Resume(te.ctx, b, "") })
	op("run b restored", steps(&b, 0))
	return out
}

// TestStepCacheDamaged: dropped, garbage, foreign (shuffled) and poisoned
// derived-cache entries change no result of steps, limits, resumes, forks
// and shows, on the memory store, the disk store and PostgreSQL.
func TestStepCacheDamaged(t *testing.T) {
	stores := map[string]func(t *testing.T, c *clock) (cas.Store, cas.Refs){
		"memory": func(t *testing.T, c *clock) (cas.Store, cas.Refs) {
			mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
			return mem, mem.Refs()
		},
		"disk": func(t *testing.T, c *clock) (cas.Store, cas.Refs) {
			st, err := disk.Create(filepath.Join(t.TempDir(), "store"), &disk.Options{Durability: disk.DurabilityNone, Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st, st.Refs()
		},
	}
	stores["postgres"] = func(t *testing.T, c *clock) (cas.Store, cas.Refs) {
		st, err := postgres.Open(t.Context(), pgtest.URL(t), &postgres.Options{Schema: pgtest.Schema(t, "uwf_stepcache_")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st, st.Refs()
	}
	for _, backend := range []string{"memory", "disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			run := func(t *testing.T, p poisoner) []string {
				c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
				st, refs := stores[backend](t, c)
				return cacheScenario(t, newTEnvOn(t, c, st, refs), p)
			}
			want := run(t, poisoners["none"])
			for _, name := range []string{"dropped", "garbage", "shuffled", "poisoned"} {
				t.Run(name, func(t *testing.T) {
					got := run(t, poisoners[name])
					if !slices.Equal(got, want) {
						for i := range min(len(got), len(want)) {
							if got[i] != want[i] {
								t.Fatalf("with the cache %s, %s\nwant %s", name, got[i], want[i])
							}
						}
						t.Fatalf("with the cache %s: %d results, want %d", name, len(got), len(want))
					}
				})
			}
		})
	}
}

// TestStepCacheCheckpoints: filling the cache for a thread an older build
// wrote stores two entries per 1,024 nodes (and the head's), not one per
// node; once the newest entries are lost, a step recomputes them from at
// most 1,024 nodes back.
func TestStepCacheCheckpoints(t *testing.T) {
	const depth = 3000
	te := newTEnv(t)
	mem := te.st.(*cas.MemStore)
	wf := te.putWorkflow(loopWith(50))
	id, hs := te.deepThread(wf, depth)
	if _, err := te.engine().Resume(te.ctx, id, "go on"); err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, h := range hs[1:] {
		if _, ok, _ := mem.GetDerived(te.ctx, "chain/"+h.String()); ok {
			stored++
		}
	}
	t.Logf("the first fill stored %d chain entries for %d nodes", stored, depth)
	if want := 2 + 2*depth/1024; stored > want+1 {
		t.Errorf("the first fill stored %d chain entries of %d nodes, want about %d", stored, depth, want)
	}
	for _, h := range hs[depth-10:] {
		if err := mem.DropDerived(te.ctx, "chain/"+h.String()); err != nil {
			t.Fatal(err)
		}
	}
	before := te.cnt.gets.Load()
	r, err := te.engine().Step(te.ctx, id, &thread.RunOptions{Agent: "synth", Quota: 1})
	if err != nil || r.Kind != thread.EventStep {
		t.Fatalf("step = %+v, %v", r, err)
	}
	reads := te.cnt.gets.Load() - before
	t.Logf("with the newest 10 entries lost, the step read %d nodes", reads)
	if reads > 1024+40 || reads < 10 {
		t.Errorf("the step read %d nodes with the newest entries lost, want 10 to 1,024 + 40", reads)
	}
}
