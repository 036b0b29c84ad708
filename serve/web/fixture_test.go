package web_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/serve/web"
	"github.com/uncaged/uwf/thread"
)

// payloads are hostile texts: each, if it ran, would set window.pwned or
// navigate away. The tests put them everywhere store text shows.
var payloads = []string{
	`<script>window.pwned = 1</script>`,
	`<img src=x onerror="window.pwned = 2">`,
	`[click me](javascript:window.pwned=3)`,
	`<a href="javascript:window.pwned=4">link</a>`,
	`"><svg onload="window.pwned=5">`,
	`<iframe src="javascript:parent.pwned=6"></iframe>`,
	`<meta http-equiv="refresh" content="0;url=javascript:window.pwned=7">`,
}

var hostile = strings.Join(payloads, "\n\n")

// env is a store with the review-loop workflow, a thread run by synth and
// a thread of hostile nodes, and an engine over it.
type env struct {
	t       testing.TB
	ctx     context.Context
	repo    *cas.Repo
	eng     *thread.Engine
	wf      cas.Hash
	synth   string // a review-loop thread run by synth to its end
	evil    string // a thread whose every text is hostile
	evilWF  cas.Hash
	clockMs atomic.Int64
	ids     atomic.Uint64 // the thread IDs made so far (see newID)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(t.Context(), mem, mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: t.Context(), repo: repo}
	e.clockMs.Store(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC).UnixMilli())
	e.eng = e.engine()
	data, err := examples.FS.ReadFile("review-loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e.wf = e.putWorkflow("review-loop.yaml", data)
	if e.synth, _, err = e.eng.Run(e.ctx, e.wf, "Add a --json flag to the list command", t.TempDir(), &thread.RunOptions{Agent: "synth"}); err != nil {
		t.Fatal(err)
	}
	e.evil = e.hostileThread()
	return e
}

// engine returns a new engine over the same store: another handle, as
// another process would have.
func (e *env) engine() *thread.Engine {
	return thread.New(e.repo, &thread.Options{NewID: e.newID})
}

// newID makes the env's thread IDs: fixed, so what the synth agent makes
// up (it depends on the thread's ID) is the same in every run, and a
// fork's outputs differ from its origin's in every run or in none.
func (e *env) newID() ulid.ULID {
	n := e.ids.Add(1)
	var entropy [10]byte
	binary.BigEndian.PutUint64(entropy[2:], n)
	return ulid.MustNew(uint64(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC).UnixMilli()), bytes.NewReader(entropy[:]))
}

func (e *env) putWorkflow(file string, data []byte) cas.Hash {
	e.t.Helper()
	w, err := registry.Parse(file, data)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := registry.New(e.repo).Put(e.ctx, w)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Hash
}

func (e *env) put(typ cas.Hash, payload any) cas.Hash {
	e.t.Helper()
	h, err := e.repo.Put(e.ctx, typ, payload)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// hostileWorkflow has payloads in its description, its edge prompt and
// its statuses' neighbourhood (role names must be safe names, so those
// cannot carry markup).
const hostileWorkflow = `name: evil
description: "<script>window.pwned = 10</script> described"
roles:
  writer:
    goal: "<img src=x onerror=\"window.pwned=11\">"
    frontmatter:
      type: object
      properties:
        status: { const: done }
        text: { type: string }
      required: [status, text]
graph:
  $START: { new: { role: writer, prompt: "<script>window.pwned=12</script> write" } }
  writer: { done: { role: $END, prompt: "<img src=x onerror=window.pwned=13> bye" } }
`

// hostileThread starts a thread with a hostile prompt and commits a step
// whose output, body, edge prompt, agent name, prompt and stderr are all
// hostile, then a suspended mark with a hostile reason.
func (e *env) hostileThread() string {
	e.t.Helper()
	e.evilWF = e.putWorkflow("evil.yaml", []byte(hostileWorkflow))
	id, head, err := e.eng.Start(e.ctx, e.evilWF, "prompt: "+hostile, e.t.TempDir())
	if err != nil {
		e.t.Fatal(err)
	}
	e.addHostileStep(id, head, "first")
	return id
}

// addHostileStep commits one hostile step after head; tag marks it.
func (e *env) addHostileStep(id string, head cas.Hash, tag string) cas.Hash {
	e.t.Helper()
	st, err := registry.New(e.repo).LoadStored(e.ctx, e.evilWF)
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.eng.Next(e.ctx, head)
	if err != nil {
		e.t.Fatal(err)
	}
	raw := "---\nstatus: done\ntext: |\n  " + strings.ReplaceAll(hostile, "\n", "\n  ") + "\n---\n# " + tag + "\n\n" + hostile + "\n"
	d := &thread.Detail{
		Prompt:     e.put(cas.ContentSchema, "assembled: "+hostile),
		Raw:        e.put(cas.ContentSchema, raw),
		Stderr:     e.put(cas.ContentSchema, "stderr: "+hostile),
		EdgePrompt: "edge: " + hostile,
		DurationMs: 1234,
	}
	now := e.clockMs.Add(1000)
	s := &thread.Step{
		Chain: c, Role: "writer", Agent: `<img src=x onerror="window.pwned=20">`,
		Output:    e.put(st.Schemas["writer"], map[string]any{"status": "done", "text": "field: " + hostile}),
		Detail:    e.put(cas.DetailSchema, d.Payload()),
		StartedAt: now - 1234, CompletedAt: now,
	}
	h := e.put(cas.StepSchema, s.Payload())
	if err := e.eng.Commit(e.ctx, id, h, "step "+tag); err != nil {
		e.t.Fatal(err)
	}
	return h
}

// server serves the viewer over env's store, with a stand-in for the
// server's events stream and mutations (package serve has the real ones;
// these follow the same watch API and token rule so the page's script can
// be tested here, where the viewer lives).
func (e *env) server(token string) *httptest.Server {
	// The events stream ends when the test does: httptest's Close waits
	// for every request, and an open page's EventSource never ends one.
	done, stop := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	web.Register(mux, e.eng, &web.Options{PageSize: 20})
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		rc := http.NewResponseController(w)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-done.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
		cur, err := e.repo.WatchHead(ctx)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprint(w, ": hello\n\n")
		_ = rc.Flush()
		for ev, err := range e.repo.Watch(ctx, "", cur) {
			if err != nil {
				return
			}
			fmt.Fprintf(w, "id: %s\nevent: ref\ndata: {\"ref\":%q,\"new\":%q}\n\n", ev.Cursor, ev.Ref, ev.New)
			_ = rc.Flush()
		}
	})
	auth := func(next func(w http.ResponseWriter, r *http.Request, id string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("token") || r.Header.Get("Authorization") != "Bearer "+token {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":"a valid bearer token is needed"}`)
				return
			}
			next(w, r, r.PathValue("id"))
		}
	}
	mux.HandleFunc("POST /api/v1/threads", auth(func(w http.ResponseWriter, r *http.Request, _ string) {
		var body struct{ Workflow, Prompt string }
		if err := jsonDecode(r, &body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		wf, err := registry.New(e.repo).Show(r.Context(), body.Workflow)
		if err != nil {
			http.Error(w, err.Error(), 404)
			return
		}
		id, _, err := e.eng.Start(context.WithoutCancel(r.Context()), wf.Hash, body.Prompt, e.t.TempDir())
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		go func() {
			time.Sleep(300 * time.Millisecond) // let the page open first: the steps must arrive live
			_, _ = e.engine().StepN(context.Background(), id, 0, &thread.RunOptions{Agent: "synth"})
		}()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":%q}`, id)
	}))
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	e.t.Cleanup(stop)
	return srv
}

func jsonDecode(r *http.Request, v any) error {
	return json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(v)
}
