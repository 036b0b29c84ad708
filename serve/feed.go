package serve

import (
	"context"
	"errors"
	"sync"

	"github.com/uncaged/uwf/cas"
)

// feed shares one watch of the store among a server's events streams:
// each ref move is read once and fanned out, where each stream used to run
// its own watch (100 streams meant 100 readers of the disk store's journal,
// each confirming every record). The shared watch starts with the first
// stream, from the store's head, and stops with the last.
//
// A stream rides on it when it starts from the head (no cursor), or from
// the feed's own position, or from a cursor among the feed's recent
// events (a client reconnecting with Last-Event-ID). Otherwise, and
// whenever it falls behind (its buffer full) or the shared watch ends with
// an error, the stream goes on with a watch of its own from the last
// cursor it delivered: the store's watch is the record, so nothing is
// missed or repeated, and an error (a cursor gone, a bad one) is reported
// to that stream exactly as its own watch meets it.
type feed struct {
	repo *cas.Repo

	mu     sync.Mutex
	subs   map[*feedSub]struct{}
	cancel context.CancelFunc // the running watch's; nil when none runs
	gen    int                // counts the watches started, so an ended one resets only its own state
	head   cas.Cursor         // where the watch is: its start, then its last event's cursor
	recent []cas.Event        // its last feedRecent events, oldest first
}

// feedRecent is how many of the latest events the feed keeps for
// reconnecting streams; feedBuffer is how many events a stream may lag
// behind before it leaves the feed for a watch of its own.
const (
	feedRecent = 1024
	feedBuffer = 1024
)

// feedSub is a stream's subscription: the feed sends to c, and closes
// done (never c) when it stops, the stream going on alone.
type feedSub struct {
	c    chan watchItem
	done chan struct{}
}

func newFeed(repo *cas.Repo) *feed { return &feed{repo: repo, subs: map[*feedSub]struct{}{}} }

// attach joins the shared watch, starting it if none runs, for a stream
// that starts after cursor after ("" the head). It returns the stream's
// start cursor and its subscription, or a nil subscription when the
// stream must watch on its own (a cursor the feed does not hold). The
// error is the store's when no watch can start and after is "".
func (f *feed) attach(ctx context.Context, after cas.Cursor) (*feedSub, cas.Cursor, error) {
	f.mu.Lock()
	running := f.cancel != nil
	f.mu.Unlock()
	if !running {
		head, err := f.repo.WatchHead(ctx)
		if err != nil {
			if after == "" {
				return nil, "", err
			}
			return nil, after, nil
		}
		f.mu.Lock()
		if f.cancel == nil {
			f.start(head)
		}
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel == nil {
		// The watch just started ended at once (an error): alone then.
		return nil, after, nil
	}
	sub := &feedSub{c: make(chan watchItem, feedBuffer), done: make(chan struct{})}
	switch {
	case after == "" || after == f.head:
	default:
		i := len(f.recent) - 1
		for ; i >= 0 && f.recent[i].Cursor != after; i-- {
		}
		if i < 0 || len(f.recent)-1-i > feedBuffer {
			f.stopIfIdle()
			return nil, after, nil
		}
		for _, ev := range f.recent[i+1:] {
			sub.c <- watchItem{ev: ev}
		}
	}
	f.subs[sub] = struct{}{}
	if after == "" {
		after = f.head
	}
	return sub, after, nil
}

// start runs the shared watch from head; f.mu is held.
func (f *feed) start(head cas.Cursor) {
	ctx, cancel := context.WithCancel(context.Background())
	f.gen++
	gen := f.gen
	f.cancel, f.head, f.recent = cancel, head, nil
	go func() {
		defer cancel()
		for ev, err := range f.repo.Watch(ctx, "", head) {
			f.mu.Lock()
			if f.gen != gen {
				f.mu.Unlock()
				return
			}
			if err != nil {
				// Every stream goes on alone from where it is; its own
				// watch meets the error (or not) for itself.
				for sub := range f.subs {
					close(sub.done)
					delete(f.subs, sub)
				}
				f.cancel, f.recent = nil, nil
				f.mu.Unlock()
				return
			}
			f.head = ev.Cursor
			if len(f.recent) == feedRecent {
				f.recent = append(f.recent[:0], f.recent[1:]...)
			}
			f.recent = append(f.recent, ev)
			for sub := range f.subs {
				select {
				case sub.c <- watchItem{ev: ev}:
				default:
					// Too slow to ride along: alone from its last event.
					close(sub.done)
					delete(f.subs, sub)
				}
			}
			f.mu.Unlock()
		}
	}()
}

// detach leaves the feed; the last stream to leave stops the watch.
func (f *feed) detach(sub *feedSub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[sub]; !ok {
		return
	}
	delete(f.subs, sub)
	f.stopIfIdle()
}

// stopIfIdle stops the watch if no stream rides on it; f.mu is held.
func (f *feed) stopIfIdle() {
	if len(f.subs) == 0 && f.cancel != nil {
		f.cancel()
		f.cancel, f.recent = nil, nil
		f.gen++
	}
}

// source is one events stream's ref moves: from the shared watch while
// it keeps up (items is the subscription's channel, dropped closes when
// the feed stops sending to it), then from a watch of its own. The stream
// reads items and dropped in one select, with no goroutine in between,
// and calls alone when dropped closes.
type source struct {
	f       *feed
	sub     *feedSub // nil once alone
	items   <-chan watchItem
	dropped <-chan struct{}
	last    cas.Cursor // the last event read from items (the stream records it)
}

// open returns the source of a stream that starts after cursor after (""
// the head), and the cursor it starts from.
func (f *feed) open(ctx context.Context, after cas.Cursor) (*source, cas.Cursor, error) {
	sub, start, err := f.attach(ctx, after)
	if err != nil {
		return nil, "", err
	}
	src := &source{f: f, last: start}
	if sub == nil {
		src.items = f.own(ctx, start, nil)
		return src, start, nil
	}
	src.sub, src.items, src.dropped = sub, sub.c, sub.done
	return src, start, nil
}

// alone goes on with a watch of its own after the feed dropped the
// stream: the events still buffered first, then the store's from the last
// of them.
func (src *source) alone(ctx context.Context) {
	var pending []watchItem
	for len(src.sub.c) > 0 {
		it := <-src.sub.c
		pending = append(pending, it)
		src.last = it.ev.Cursor
	}
	src.sub, src.dropped = nil, nil
	src.items = src.f.own(ctx, src.last, pending)
}

// close leaves the feed.
func (src *source) close() {
	if src.sub != nil {
		src.f.detach(src.sub)
	}
}

// own runs a watch from cursor after, after sending pending: its items
// close after an error other than a cursor gone, or when ctx is done.
func (f *feed) own(ctx context.Context, after cas.Cursor, pending []watchItem) <-chan watchItem {
	items := make(chan watchItem, 256)
	go func() {
		defer close(items)
		for _, it := range pending {
			select {
			case items <- it:
			case <-ctx.Done():
				return
			}
		}
		for ev, err := range f.repo.Watch(ctx, "", after) {
			select {
			case items <- watchItem{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil && !errors.Is(err, cas.ErrCursorGone) {
				return
			}
		}
	}()
	return items
}
