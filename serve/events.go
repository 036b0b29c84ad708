package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// hub fans this server's own notes (progress of its background steps, the
// end of a job) out to the events streams. They are not ref moves, carry
// no id and are not replayed on reconnection; the ref moves are the
// record.
type hub struct {
	mu   sync.Mutex
	subs map[chan note]struct{}
}

type note struct {
	event  string // "progress" or "job"
	thread string
	data   any
}

func newHub() *hub { return &hub{subs: map[chan note]struct{}{}} }

func (h *hub) subscribe() chan note {
	c := make(chan note, 64)
	h.mu.Lock()
	h.subs[c] = struct{}{}
	h.mu.Unlock()
	return c
}

func (h *hub) unsubscribe(c chan note) {
	h.mu.Lock()
	delete(h.subs, c)
	h.mu.Unlock()
}

// publish sends a note to every subscriber that keeps up; a slow one
// misses it (notes are hints; ref moves are never dropped).
func (h *hub) publish(event, thread string, data any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- note{event, thread, data}:
		default:
		}
	}
}

// EventJSON is the data of a "ref" event: the store's [cas.Event], and for
// a thread's ref (threads/<id>, failures/<id>, runs/<id>) the thread's id.
type EventJSON struct {
	cas.Event
	Thread string `json:"thread,omitempty"`
}

// Heartbeat is how often an idle events stream sends a comment line.
var Heartbeat = 15 * time.Second

// watchItem is one value of the watch iterator, passed to the stream.
type watchItem struct {
	ev  cas.Event
	err error
}

// handleEvents is GET /api/v1/events: Server-Sent Events of every ref move
// of the store, by this process or any other, from the one watch API.
//
// The stream starts with an "ready" event whose id is the cursor it
// starts from; each ref move is an event "ref" with the move's cursor as
// its id, so a client reconnecting with Last-Event-ID (or ?after=) resumes
// after the last one it saw and misses nothing the store still holds.
// ?thread=<id> keeps one thread's refs (threads/<id>, failures/<id>);
// ?workflow=<name or hash> keeps the threads of one workflow. Events
// "progress" (a background step's progress) and "job" (its end) come from
// this server only; "gone" says changes were trimmed before they could be
// delivered; "error" ends the stream.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var onlyThread string
	if v := q.Get("thread"); v != "" {
		id, err := thread.ParseID(v)
		if err != nil {
			s.fail(w, r, badRequestf("invalid thread %q: %s", v, badIDReason))
			return
		}
		onlyThread = id
	}
	wfFilter := q.Get("workflow")
	if wfFilter != "" && !registry.ValidName(wfFilter) {
		if _, err := cas.ParseHash(wfFilter); err != nil {
			s.fail(w, r, badRequestf("invalid workflow %q: want a workflow name or hash", wfFilter))
			return
		}
	}
	after := cas.Cursor(r.Header.Get("Last-Event-ID"))
	if after == "" {
		after = cas.Cursor(q.Get("after"))
	}
	if len(after) > 1024 {
		s.fail(w, r, badRequestf("invalid cursor: longer than 1024 bytes"))
		return
	}
	for _, c := range []byte(after) {
		if c < 0x21 || c > 0x7e {
			// A cursor is opaque but printable: a line break would end
			// the id line and forge events.
			s.fail(w, r, badRequestf("invalid cursor %q: want printable ASCII without spaces", after))
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	src, after, err := s.feed.open(ctx, after)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer src.close()
	notes := s.hub.subscribe()
	defer s.hub.unsubscribe(notes)
	// A cursor the store cannot read fails at once: answer 400 then, so
	// that a browser's EventSource stops instead of reconnecting.
	var first *watchItem
	select {
	case it, ok := <-src.items:
		if ok {
			if it.err == nil {
				src.last = it.ev.Cursor
			}
			if it.err != nil && (errors.Is(it.err, cas.ErrInvalidCursor) || errors.Is(it.err, cas.ErrWatchUnsupported)) {
				s.fail(w, r, it.err)
				return
			}
			first = &it
		}
	case <-time.After(50 * time.Millisecond):
	}
	fl, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ready, _ := json.Marshal(map[string]cas.Cursor{"cursor": after})
	fmt.Fprintf(w, "retry: 2000\nid: %s\nevent: ready\ndata: %s\n\n", after, ready)
	if fl != nil {
		fl.Flush()
	}
	wfOf := map[string]bool{} // thread id -> whether it is of the workflow asked for
	keep := func(ev cas.Event) (string, bool) {
		id := ""
		if rest, ok := strings.CutPrefix(ev.Ref, thread.ThreadPrefix); ok {
			id = rest
		} else if rest, ok := strings.CutPrefix(ev.Ref, thread.FailurePrefix); ok {
			id = rest
		} else if rest, ok := strings.CutPrefix(ev.Ref, thread.RunPrefix); ok {
			id = rest // a worker claimed, stepped or released it
		}
		if onlyThread != "" && id != onlyThread {
			return id, false
		}
		if wfFilter != "" {
			if id == "" {
				return id, false
			}
			of, known := wfOf[id]
			if !known {
				of = s.threadOfWorkflow(ctx, ev, wfFilter)
				wfOf[id] = of
			}
			return id, of
		}
		return id, true
	}
	send := func(it watchItem) bool {
		if it.err != nil {
			if errors.Is(it.err, cas.ErrCursorGone) {
				fmt.Fprintf(w, "event: gone\ndata: %s\n\n", jsonString(s.userError(it.err.Error())))
				return true
			}
			if ctx.Err() == nil {
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonString(s.userError(it.err.Error())))
			}
			return false
		}
		id, ok := keep(it.ev)
		if !ok {
			return true
		}
		data, _ := json.Marshal(EventJSON{it.ev, id})
		fmt.Fprintf(w, "id: %s\nevent: ref\ndata: %s\n\n", it.ev.Cursor, data)
		return true
	}
	if first != nil && !send(*first) {
		return
	}
	beat := time.NewTicker(Heartbeat)
	defer beat.Stop()
	for {
		// Flush once the burst is written: events already waiting go out
		// in the same write.
		if fl != nil && len(src.items) == 0 && len(notes) == 0 {
			fl.Flush()
		}
		select {
		case <-ctx.Done():
			return
		case <-src.dropped:
			src.alone(ctx)
		case it, ok := <-src.items:
			if ok && it.err == nil {
				src.last = it.ev.Cursor
			}
			if !ok || !send(it) {
				if fl != nil {
					fl.Flush()
				}
				return
			}
		case n := <-notes:
			if onlyThread != "" && n.thread != onlyThread {
				continue
			}
			if wfFilter != "" {
				of, known := wfOf[n.thread]
				if !known {
					if head, err := s.eng.Head(ctx, n.thread); err == nil {
						of = s.nodeOfWorkflow(ctx, head, wfFilter)
						wfOf[n.thread] = of
					}
				}
				if !of {
					continue
				}
			}
			data, _ := json.Marshal(n.data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", n.event, data)
		case <-beat.C:
			fmt.Fprint(w, ": ping\n\n")
		}
	}
}

// threadOfWorkflow reports whether the thread an event moved is of
// workflow wf (a name or a hash), reading the moved-to (or, for a
// deletion, the moved-from) node's start.
func (s *Server) threadOfWorkflow(ctx context.Context, ev cas.Event, wf string) bool {
	if id, ok := strings.CutPrefix(ev.Ref, thread.RunPrefix); ok {
		// A run record: the thread's own chain says its workflow.
		head, err := s.eng.Head(ctx, id)
		return err == nil && s.nodeOfWorkflow(ctx, head, wf)
	}
	h := ev.New
	if h.IsZero() {
		h = ev.Old
	}
	if strings.HasPrefix(ev.Ref, thread.FailurePrefix) {
		fn, err := s.repo.Get(ctx, h)
		if err != nil {
			return false
		}
		f, err := thread.DecodeFailure(fn)
		if err != nil {
			return false
		}
		h = f.Head
	}
	return s.nodeOfWorkflow(ctx, h, wf)
}

// nodeOfWorkflow reports whether chain node h (a start, step or mark) is
// of a thread of workflow wf (a name or a hash).
func (s *Server) nodeOfWorkflow(ctx context.Context, h cas.Hash, wf string) bool {
	n, err := s.eng.Node(ctx, h)
	if err != nil {
		return false
	}
	sn, err := s.eng.Node(ctx, n.StartHash())
	if err != nil || sn.Start == nil {
		return false
	}
	if sn.Start.Workflow.String() == wf {
		return true
	}
	wn, err := s.repo.Get(ctx, sn.Start.Workflow)
	if err != nil {
		return false
	}
	m, _ := wn.Payload.(map[string]any)
	name, _ := m["name"].(string)
	return name == wf
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
