package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
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
		waitNext := false // confirm waiting for a writer midway
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
			var before []jpos // before[i]: the position just before mine[i]
			last := p
			for _, rc := range recs {
				if strings.HasPrefix(rc.line.Name, prefix) {
					mine = append(mine, rc)
					before = append(before, last)
				}
				last = rc.end
			}
			// The records are confirmed without waiting for a writer
			// midway (its record is in the journal, its ref's lock held):
			// those before its record are delivered at once, and the next
			// round waits for it. A writer of this Store wakes the watchers
			// once its lock is free, so the wait is short or none.
			var ok []bool
			settled, busy := len(mine), false
			if len(mine) > 0 {
				if ok, settled, busy, err = r.s.confirmed.confirm(ctx, r, mine, waitNext); err != nil {
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
			waitNext = settled < len(mine) && !busy
			if settled < len(mine) {
				next, mine = before[settled], mine[:settled]
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
			if moved || waitNext {
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

	active atomic.Int32 // users, read without mu

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

// watching reports whether any watcher runs.
func (n *notifier) watching() bool { return n.active.Load() > 0 }

// acquire registers a watcher, starting file notification for the first;
// release unregisters it, stopping notification after the last.
func (n *notifier) acquire(dir string) (release func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.users++
	n.active.Store(int32(n.users))
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
			n.active.Store(int32(n.users))
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
//
// The records this Store wrote need no confirmation: their writers tell
// own how their change ended, and a watcher that meets one still midway
// waits for the writer's wake-up rather than for its lock. Only the
// records of other processes (and of changes that failed here, which may
// have moved their ref all the same) are confirmed under their ref's lock.
type confirmedCache struct {
	mu     sync.Mutex
	done   map[jpos]bool
	own    ownRecords
	locked atomic.Int64 // records confirmed under their ref's lock (counted for tests)
}

// confirmedCacheSize bounds the cache; past it the cache starts afresh.
const confirmedCacheSize = 1 << 16

// ownKey is a record this Store wrote: its segment and its line. Two
// records of one key in one segment are two changes of one ref (from one
// value to another in the same millisecond with the same message), made
// one after the other under its lock, so they are counted, not told apart.
type ownKey struct {
	seg int64
	key logKey
}

// ownRecords holds the records this Store's writers are writing (midway)
// and those they committed that no watcher settled yet. It is written only
// while a watcher runs, and bounded: past ownRecordsSize it starts afresh,
// and the records it forgot are confirmed under their lock like another
// process's.
type ownRecords struct {
	mu        sync.Mutex
	midways   map[ownKey]int
	committed map[ownKey]int
}

const ownRecordsSize = 1 << 12

// midway notes that a change of this Store is writing l's record to
// segment seg.
func (o *ownRecords) midway(seg int64, l logLine) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.midways == nil || len(o.midways) >= ownRecordsSize {
		o.midways = map[ownKey]int{}
	}
	o.midways[ownKey{seg, keyOf(l)}]++
}

// end notes that the change ended, with its ref moved if committed; called
// under the ref's lock, before the watchers are woken.
func (o *ownRecords) end(seg int64, l logLine, committed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := ownKey{seg, keyOf(l)}
	if o.midways[k] <= 1 {
		delete(o.midways, k)
	} else {
		o.midways[k]--
	}
	if !committed {
		return
	}
	if o.committed == nil || len(o.committed) >= ownRecordsSize {
		o.committed = map[ownKey]int{}
	}
	o.committed[k]++
}

// settle reports whether rc is one of this Store's committed records
// (taking it from committed: it is now in the confirmed cache) and whether
// its writer is still midway.
func (o *ownRecords) settle(rc record) (committed, midway bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := ownKey{rc.end.seg, keyOf(rc.line)}
	if n := o.committed[k]; n > 0 {
		if n == 1 {
			delete(o.committed, k)
		} else {
			o.committed[k] = n - 1
		}
		return true, false
	}
	return false, o.midways[k] > 0
}

// confirm is [Refs.confirm] through the cache and this Store's own
// records: ok for recs, of which the first n are settled. When a change
// of this Store is midway at recs[n], busy is set: its writer wakes the
// watchers once it is done. Otherwise, with wait unset, the records from
// n on wait for another process's writer (see [Refs.confirm]).
func (c *confirmedCache) confirm(ctx context.Context, r *Refs, recs []record, wait bool) (ok []bool, n int, busy bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok = make([]bool, len(recs))
	var unknown []record
	var at []int
	settled := map[jpos]bool{}
	end := len(recs)
	for i, rc := range recs {
		v, known := c.done[rc.end]
		if known {
			ok[i] = v
			continue
		}
		mine, midway := c.own.settle(rc)
		if mine {
			ok[i], settled[rc.end] = true, true
			continue
		}
		if midway {
			end, busy = i, true
			break
		}
		unknown = append(unknown, rc)
		at = append(at, i)
	}
	if len(unknown) > 0 {
		var m int
		var got []bool
		got, m, err = r.confirm(ctx, unknown, wait)
		if err != nil {
			m, end = 0, 0 // what own settled is kept below; the rest is retried
		}
		for k := range at[:m] {
			ok[at[k]] = got[k]
			settled[unknown[k].end] = got[k]
		}
		if m < len(unknown) {
			end, busy = at[m], false
		}
	}
	if c.done == nil || len(c.done)+len(settled) > confirmedCacheSize {
		c.done = make(map[jpos]bool, len(settled))
	}
	for pos, v := range settled {
		c.done[pos] = v
	}
	if err != nil {
		return nil, 0, false, err
	}
	return ok, end, busy, nil
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
