package serve_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/serve"
	"github.com/uncaged/uwf/thread"
)

// subscribeOrSkip subscribes, skipping the test if the backend's refs
// cannot be watched yet (the watch API's disk and PostgreSQL sides are
// another branch's).
func (e *env) subscribeOrSkip(path, lastID string) *stream {
	e.t.Helper()
	if _, err := e.repo.WatchHead(e.t.Context()); errors.Is(err, cas.ErrWatchUnsupported) {
		e.t.Skipf("this backend's refs cannot be watched yet: %v", err)
	}
	s, err := e.subscribe(path, lastID)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(s.close)
	return s
}

// refEvent decodes a "ref" event's data.
func refEvent(t *testing.T, ev sseEvent) serve.EventJSON {
	t.Helper()
	var d serve.EventJSON
	if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
		t.Fatalf("event %q: %v", ev.data, err)
	}
	if string(d.Cursor) != ev.id {
		t.Errorf("event id %q, data cursor %q", ev.id, d.Cursor)
	}
	return d
}

// TestEventsResume: every ref move is an event, in order, and a subscriber
// that reconnects with Last-Event-ID gets exactly the moves after the last
// one it saw: none missed, none twice. Moves are made by the server's
// process and by another opener of the same store (another process's
// view of it).
func TestEventsResume(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t, backend)
			ctx := t.Context()
			s := e.subscribeOrSkip("/api/v1/events", "")
			wf := e.reviewLoop()
			other := e.eng
			if e.url != "" {
				repo, _ := openRepoURL(t, e.url)
				other = thread.New(repo, nil)
			}
			id, _, err := other.Start(ctx, wf, "task", "/")
			if err != nil {
				t.Fatal(err)
			}
			var want []string // "ref old->new" of every move, in order
			want = append(want, "workflows/review-loop", thread.ThreadPrefix+id)
			for range 3 {
				if _, err := e.eng.Resume(ctx, id, "note"); err != nil {
					t.Fatal(err)
				}
				want = append(want, thread.ThreadPrefix+id)
			}
			var got []string
			var last string
			for len(got) < 4 { // the thread's creation and the first two notes after the workflow
				ev, ok := s.next("ref", 10*time.Second)
				if !ok {
					t.Fatalf("events so far %v, want %v", got, want)
				}
				d := refEvent(t, ev)
				if d.Ref == thread.ThreadPrefix+id && d.Thread != id {
					t.Errorf("event of %s names thread %q", d.Ref, d.Thread)
				}
				got = append(got, d.Ref)
				last = ev.id
			}
			s.close()
			// Meanwhile: more moves.
			h, err := e.eng.Kill(ctx, id, "stop")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, thread.ThreadPrefix+id)
			s2 := e.subscribeOrSkip("/api/v1/events", last)
			for len(got) < len(want) {
				ev, ok := s2.next("ref", 10*time.Second)
				if !ok {
					t.Fatalf("after reconnecting: events %v, want %v", got, want)
				}
				d := refEvent(t, ev)
				got = append(got, d.Ref)
				if len(got) == len(want) && d.New != h {
					t.Errorf("the last event moves to %s, want the kill mark %s", d.New, h)
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("events:\n got %v\nwant %v", got, want)
			}
			if ev, ok := s2.next("ref", 300*time.Millisecond); ok {
				t.Errorf("an event more than the moves: %+v", ev)
			}
		})
	}
}

// openRepoURL opens a second handle on a disk or PostgreSQL store.
func openRepoURL(t *testing.T, url string) (*cas.Repo, func()) {
	t.Helper()
	repo, release, err := storeOpen(t, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return repo, release
}

// TestEventsFilters: ?thread= keeps one thread's refs, ?workflow= the
// threads of one workflow; a malformed filter or cursor is a 400.
func TestEventsFilters(t *testing.T) {
	e := newEnv(t, "memory")
	ctx := t.Context()
	wf := e.reviewLoop()
	a, _, _ := e.eng.Start(ctx, wf, "a", "/")
	b, _, _ := e.eng.Start(ctx, wf, "b", "/")
	sa := e.subscribeOrSkip("/api/v1/events?thread="+a, "")
	sw := e.subscribeOrSkip("/api/v1/events?workflow=review-loop", "")
	sn := e.subscribeOrSkip("/api/v1/events?workflow=other", "")
	e.eng.Kill(ctx, b, "")
	e.eng.Kill(ctx, a, "")
	if ev, ok := sa.next("ref", 5*time.Second); !ok || refEvent(t, ev).Thread != a {
		t.Errorf("?thread=%s: first event %+v", a, ev)
	}
	for _, want := range []string{b, a} {
		if ev, ok := sw.next("ref", 5*time.Second); !ok || refEvent(t, ev).Thread != want {
			t.Errorf("?workflow=review-loop: event %+v, want thread %s", ev, want)
		}
	}
	if ev, ok := sn.next("ref", 300*time.Millisecond); ok {
		t.Errorf("?workflow=other: event %+v", ev)
	}
	for _, c := range []struct{ path, lastID string }{
		{"/api/v1/events?thread=nope", ""},
		{"/api/v1/events?workflow=-x", ""},
		{"/api/v1/events", "not-a-cursor"},
		{"/api/v1/events?after=-1", ""},
		{"/api/v1/events?after=1%0Aevent:%20ref%0Adata:%20forged", ""},
		{"/api/v1/events?after=" + strings.Repeat("1", 1025), ""},
	} {
		_, err := e.subscribe(c.path, c.lastID)
		var se *statusError
		if !errors.As(err, &se) || se.status != http.StatusBadRequest {
			t.Errorf("%s (Last-Event-ID %q): %v, want 400", c.path, c.lastID, err)
		}
	}
}

// TestEventsProgress: a background step's progress and its end reach the
// events stream, and the steps it commits arrive as ref events.
func TestEventsProgress(t *testing.T) {
	e := newEnv(t, "memory")
	e.reviewLoop()
	s := e.subscribeOrSkip("/api/v1/events", "")
	otherWF := e.subscribeOrSkip("/api/v1/events?workflow=other", "")
	r := e.do("POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"p","agent":"synth"}`, true)
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var progress, refs int
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("the stream ended")
			}
			switch ev.event {
			case "progress":
				progress++
			case "ref":
				refs++
			case "job":
				var j struct {
					Steps int
					Kind  string
					Error string
				}
				json.Unmarshal([]byte(ev.data), &j)
				if j.Kind != thread.EventDone || j.Error != "" || j.Steps < 4 {
					t.Errorf("job event %s", ev.data)
				}
				// The job's note and the last ref moves travel apart:
				// the moves may come after it.
				for refs < j.Steps+1 {
					if _, ok := s.next("ref", 5*time.Second); !ok {
						break
					}
					refs++
				}
				if progress < j.Steps || refs != j.Steps+1 {
					t.Errorf("%d progress and %d ref events for %d steps (want a ref event for the start and each)", progress, refs, j.Steps)
				}
				for _, name := range []string{"progress", "ref", "job"} {
					if ev, ok := otherWF.next(name, 100*time.Millisecond); ok {
						t.Errorf("?workflow=other got a %s event of a review-loop thread: %s", name, ev.data)
					}
				}
				return
			}
		case <-timeout:
			t.Fatalf("no job event in 20 s (%d progress, %d ref events)", progress, refs)
		}
	}
}

// TestEventsRunRecord: on every backend, ?thread= keeps the thread's run
// record's moves too (runs/<id>, with its thread), so a page sees a
// worker queue, claim and release it; another thread's run is left out.
func TestEventsRunRecord(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t, backend)
			ctx := t.Context()
			wf := e.reviewLoop()
			id, _, err := e.eng.Start(ctx, wf, "task", "/")
			if err != nil {
				t.Fatal(err)
			}
			other, _, err := e.eng.Start(ctx, wf, "other", "/")
			if err != nil {
				t.Fatal(err)
			}
			s := e.subscribeOrSkip("/api/v1/events?thread="+id, "")
			if _, err := e.eng.Enqueue(ctx, other, thread.EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.eng.Enqueue(ctx, id, thread.EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
			lease, err := e.eng.Claim(ctx, id, "worker-c", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := lease.Release(ctx, "test"); err != nil {
				t.Fatal(err)
			}
			for i, what := range []string{"queued", "claimed", "released"} {
				ev, ok := s.next("ref", 10*time.Second)
				if !ok {
					t.Fatalf("no event for the run being %s", what)
				}
				d := refEvent(t, ev)
				if d.Ref != thread.RunPrefix+id || d.Thread != id {
					t.Fatalf("event %d (%s): ref %s thread %q, want %s%s", i, what, d.Ref, d.Thread, thread.RunPrefix, id)
				}
			}
		})
	}
}
