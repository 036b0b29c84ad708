package thread

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
)

// An Engine shares its watches of the store: every lease it keeps, a
// worker's claim loop, and every call that waits for its branches, are told
// of the changes they follow by one watch per root prefix (runs/, slots/,
// threads/, or the prefix asked for), fanned out in the process, rather than one watch each (a worker with many leases
// would otherwise hold a watch, and on PostgreSQL a cursor read under the
// watch lock at each claim, per lease).
//
// A subscriber gets a signal, not the events: a value on a channel of
// capacity 1 after one or more changes of a ref under its prefix, so a
// slow subscriber coalesces them and none is ever lost; it then reads what
// it needs. A subscriber also gets a signal whenever the shared watch
// failed or started again (it may have missed a change).

// watchRoots are the prefixes whose watch is shared by every subscriber
// under them.
var watchRoots = []string{RunPrefix, SlotPrefix, ThreadPrefix}

// watchRetry is how long a shared watch waits after a failure before it
// starts again.
const watchRetry = time.Second

// changes is an Engine's shared watches, by root prefix.
type changes struct {
	mu   sync.Mutex
	hubs map[string]*hub
}

// hub is one shared watch and its subscribers.
type hub struct {
	root   string
	subs   map[*subscriber]struct{}
	cancel context.CancelFunc
}

type subscriber struct {
	prefix string
	ch     chan struct{}
}

func (s *subscriber) signal() {
	select {
	case s.ch <- struct{}{}:
	default: // one is pending: it covers this change
	}
}

// Changes returns a channel that receives a value after changes of refs
// whose names start with prefix (several changes may make one value; none
// is missed: read the refs again at each), and stop, which ends the
// subscription. Every subscriber under runs/ (a lease's record, a claim
// loop) shares one watch of the store per Engine, and so does every one
// under slots/, and every one under threads/. The channel also receives a value when the shared watch
// failed and started again. The error wraps [cas.ErrWatchUnsupported]
// for a store whose refs cannot be watched. A change committed after
// Changes returns is signalled.
func (e *Engine) Changes(ctx context.Context, prefix string) (<-chan struct{}, func(), error) {
	root := prefix
	for _, r := range watchRoots {
		if strings.HasPrefix(prefix, r) {
			root = r
			break
		}
	}
	sub := &subscriber{prefix: prefix, ch: make(chan struct{}, 1)}
	c := &e.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hubs[root]
	if h == nil {
		// The first subscriber starts the watch from the newest change,
		// read before Changes returns, so nothing after it is missed.
		cursor, err := e.repo.WatchHead(ctx)
		if err != nil {
			return nil, nil, err
		}
		hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h = &hub{root: root, subs: map[*subscriber]struct{}{}, cancel: cancel}
		if c.hubs == nil {
			c.hubs = map[string]*hub{}
		}
		c.hubs[root] = h
		go e.runHub(hctx, h, cursor)
	}
	h.subs[sub] = struct{}{}
	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(h.subs, sub)
			if len(h.subs) == 0 {
				h.cancel()
				if c.hubs[root] == h {
					delete(c.hubs, root)
				}
			}
		})
	}, nil
}

// runHub follows the store's changes under h's root and signals the
// subscribers they concern, until ctx ends (its last subscriber left).
func (e *Engine) runHub(ctx context.Context, h *hub, cursor cas.Cursor) {
	for ctx.Err() == nil {
		fresh := false
		for ev, err := range e.repo.Watch(ctx, h.root, cursor) {
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				e.signalAll(h, "")
				if errors.Is(err, cas.ErrCursorGone) {
					continue // the watch goes on after saying so
				}
				fresh = errors.Is(err, cas.ErrInvalidCursor)
				break
			}
			cursor = ev.Cursor
			e.signalAll(h, ev.Ref)
		}
		// The watch ended (a failure): start again after a pause, from
		// where it was (from the newest change if its cursor is no longer
		// valid), telling every subscriber to read again.
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchRetry):
		}
		if fresh {
			if c, err := e.repo.WatchHead(ctx); err == nil {
				cursor = c
			}
		}
		e.signalAll(h, "")
	}
}

// signalAll signals the subscribers of h whose prefix ref is under (all
// of them when ref is "").
func (e *Engine) signalAll(h *hub, ref string) {
	e.changes.mu.Lock()
	defer e.changes.mu.Unlock()
	for s := range h.subs {
		if ref == "" || strings.HasPrefix(ref, s.prefix) {
			s.signal()
		}
	}
}
