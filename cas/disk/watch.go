package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/dirnotify"
	"github.com/uncaged/uwf/internal/wake"
)

var _ cas.Watcher = (*Refs)(nil)

// readChunk bounds how much of the journal one pass of a watch reads.
const readChunk = 1 << 20

// WatchHead returns the cursor after the newest record of the store's
// journal, once every change that wrote a record before it has committed
// or failed: a watch from it yields exactly the changes committed after
// the call. With no journal yet it is the zero cursor.
func (r *Refs) WatchHead(ctx context.Context) (cas.Cursor, error) {
	if err := r.s.ready(ctx); err != nil {
		return "", err
	}
	p, err := r.journalHead(ctx)
	if err != nil || p == (jpos{}) {
		return "", err
	}
	return p.cursor(), nil
}

// Watch yields the changes committed after cursor after to refs whose
// names start with prefix, as [cas.Watcher] specifies, reading the
// store's journal (see the package documentation): each record once its
// ref's log shows it committed, in journal order, which is each ref's log
// order. A record whose ref's log no longer shows it and which is older
// than the last PruneLog cutoff, like a cursor into a segment GC removed,
// yields an error wrapping [cas.ErrCursorGone] (once per watch). Changes
// made through this Store wake the watch at once; those of other
// processes through inotify on Linux, and through polling every
// pollInterval everywhere (the only way elsewhere). Once the Store is
// closed the watch yields an error wrapping [fs.ErrClosed] and ends.
func (r *Refs) Watch(ctx context.Context, prefix string, after cas.Cursor) iter.Seq2[cas.Event, error] {
	return func(yield func(cas.Event, error) bool) {
		if err := r.s.ready(ctx); err != nil {
			yield(cas.Event{}, err)
			return
		}
		p, err := parseCursor(after)
		if err != nil {
			yield(cas.Event{}, err)
			return
		}
		release := r.s.watch.acquire(r.s.dir)
		defer release()
		check, goneSaid := p != (jpos{}), false
		woke := time.Now()
		for {
			if r.s.closed.Load() {
				yield(cas.Event{}, fmt.Errorf("disk: store %s: %w", r.s.dir, fs.ErrClosed))
				return
			}
			wake := r.s.watch.Wait()
			recs, next, gone, err := r.s.reads.read(r, p, check, woke)
			if err != nil {
				yield(cas.Event{}, err)
				if errors.Is(err, cas.ErrInvalidCursor) {
					return
				}
				if !sleep(ctx, time.Second) {
					yield(cas.Event{}, ctx.Err())
					return
				}
				continue
			}
			check = false
			var mine []record
			for _, rc := range recs {
				if strings.HasPrefix(rc.line.Name, prefix) {
					mine = append(mine, rc)
				}
			}
			var ok []bool
			if len(mine) > 0 {
				if ok, err = r.s.confirmed.confirm(ctx, r, mine); err != nil {
					if ctx.Err() != nil {
						yield(cas.Event{}, ctx.Err())
						return
					}
					yield(cas.Event{}, err)
					if !sleep(ctx, time.Second) {
						yield(cas.Event{}, ctx.Err())
						return
					}
					continue
				}
			}
			if !gone {
				var cutoff int64 = -1
				for i, rc := range mine {
					if ok[i] {
						continue
					}
					if cutoff < 0 {
						cutoff = r.prunedCutoff()
					}
					if rc.line.Time < cutoff {
						gone = true // pruned before this watch confirmed it
						break
					}
				}
			}
			if gone && !goneSaid {
				goneSaid = true
				if !yield(cas.Event{}, fmt.Errorf("%w: the journal before %s was trimmed by GC", cas.ErrCursorGone, next.cursor())) {
					return
				}
			}
			for i, rc := range mine {
				if !ok[i] {
					continue
				}
				l := rc.line
				ev := cas.Event{Ref: l.Name, Old: l.Old, New: l.New, Time: l.Time, Message: l.Message, Cursor: rc.end.cursor()}
				if !yield(ev, nil) {
					return
				}
			}
			moved := next != p
			p = next
			if moved {
				continue
			}
			select {
			case <-ctx.Done():
				yield(cas.Event{}, ctx.Err())
				return
			case <-wake:
			case <-time.After(r.s.watch.pollInterval()):
			}
			woke = time.Now()
		}
	}
}

// sleep waits d or until ctx is done, reporting whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// notifier wakes a Store's watchers: at each change made through the
// Store, and at each change of the journal folder that the platform's
// file notification (inotify on Linux) reports, while any watcher runs.
type notifier struct {
	wake.Signal // the wake-ups (Wait, Broadcast)

	mu    sync.Mutex
	users int
	stop  func()
	fast  bool // file notification is running: poll rarely
}

// pollInterval is how often a watcher reads the journal without being
// woken: a safety net where file notification runs, the only way where it
// does not.
func (n *notifier) pollInterval() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fast {
		return 2 * time.Second
	}
	return 250 * time.Millisecond
}

// acquire registers a watcher, starting file notification for the first;
// release unregisters it, stopping notification after the last.
func (n *notifier) acquire(dir string) (release func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.users++
	if n.users == 1 {
		stop, err := dirnotify.Start(dir, journalDir, n.Broadcast)
		if err == nil {
			n.stop, n.fast = stop, true
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			n.users--
			var stop func()
			if n.users == 0 && n.stop != nil {
				stop, n.stop, n.fast = n.stop, nil, false
			}
			n.mu.Unlock()
			if stop != nil {
				stop() // outside mu: its goroutine may be waking watchers
			}
		})
	}
}

// confirmedCache remembers, for a Store's watchers, which journal records
// committed: a record's fate is settled once it is confirmed (under its
// ref's lock, after its writer finished), so each record is confirmed once
// per process however many watchers read it. Confirmations run one at a
// time; a watcher that waits for another's finds its records known.
type confirmedCache struct {
	mu   sync.Mutex
	done map[jpos]bool
}

// confirmedCacheSize bounds the cache; past it the cache starts afresh.
const confirmedCacheSize = 1 << 16

// confirm is [Refs.confirm] through the cache.
func (c *confirmedCache) confirm(ctx context.Context, r *Refs, recs []record) ([]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := make([]bool, len(recs))
	var unknown []record
	var at []int
	for i, rc := range recs {
		v, known := c.done[rc.end]
		if known {
			ok[i] = v
			continue
		}
		unknown = append(unknown, rc)
		at = append(at, i)
	}
	if len(unknown) == 0 {
		return ok, nil
	}
	got, err := r.confirm(ctx, unknown)
	if err != nil {
		return nil, err
	}
	if c.done == nil || len(c.done)+len(got) > confirmedCacheSize {
		c.done = make(map[jpos]bool, len(got))
	}
	for k, i := range at {
		ok[i] = got[k]
		c.done[unknown[k].end] = got[k]
	}
	return ok, nil
}

// sharedReads lets a Store's watchers share their reads of the journal:
// when many are woken by one change, one read serves them all. A read is
// reused by a watcher whose position lies in the span it read and which
// was woken before the read began (so it sees what woke the watcher);
// reads run one at a time.
type sharedReads struct {
	mu         sync.Mutex
	valid      bool
	began      time.Time
	from, next jpos     // the span read
	recs       []record // its records
}

// before reports whether a comes before b in the journal.
func (a jpos) before(b jpos) bool { return a.seg < b.seg || a.seg == b.seg && a.off < b.off }

// read is [Refs.readJournal] from p through the shared read.
func (c *sharedReads) read(r *Refs, p jpos, check bool, woke time.Time) ([]record, jpos, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && !check && c.began.After(woke) && !p.before(c.from) && p.before(c.next) {
		var out []record
		for _, rc := range c.recs {
			if p.before(rc.end) {
				out = append(out, rc)
			}
		}
		return out, c.next, false, nil
	}
	began := time.Now()
	recs, next, gone, err := r.readJournal(p, readChunk, check)
	c.valid = err == nil && !gone && p != (jpos{})
	if c.valid {
		c.began, c.from, c.next, c.recs = began, p, next, recs
	}
	return recs, next, gone, err
}
