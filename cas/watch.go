package cas

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"

	"github.com/uncaged/uwf/internal/wake"
)

// Cursor is an opaque position in a store's stream of committed ref
// changes, as [Watcher] hands it out in each [Event]. Callers keep it (an
// HTTP client as its Last-Event-ID) and give it back to resume; only the
// backend that made it can read it. The zero Cursor means "the oldest
// change the store still holds".
type Cursor string

// Event is one committed change of a ref: the entry its log gained, with
// the ref's name and the cursor just after it.
type Event struct {
	Ref     string `json:"ref"`
	Old     Hash   `json:"old"`
	New     Hash   `json:"new"`
	Time    int64  `json:"time"` // Unix milliseconds, UTC, by the store's clock
	Message string `json:"message"`
	Cursor  Cursor `json:"cursor"`
}

// Entry returns the log entry the event carries.
func (e Event) Entry() LogEntry {
	return LogEntry{Old: e.Old, New: e.New, Time: e.Time, Message: e.Message}
}

var (
	// ErrInvalidCursor is wrapped by the error for a cursor the backend
	// cannot read (malformed, or made by another backend).
	ErrInvalidCursor = errors.New("cas: invalid watch cursor")
	// ErrCursorGone is wrapped by the error a watch yields, once, when
	// changes after its cursor were trimmed (by log retention) before it
	// could deliver them; if the caller goes on, the watch continues from
	// the oldest change still held.
	ErrCursorGone = errors.New("cas: watch cursor older than the retained changes")
	// ErrWatchUnsupported is wrapped by [Repo.Watch] and [Repo.WatchHead]
	// when the store's refs do not implement [Watcher].
	ErrWatchUnsupported = errors.New("cas: this store's refs cannot be watched")
)

// Watcher is implemented by the [Refs] of a backend whose ref changes can
// be followed, by this process or any other sharing the store (SPEC §4,
// "Watching refs"). The memory, disk and PostgreSQL backends all do; it is
// the one source of change notifications for the HTTP events stream,
// `uwf thread watch`, workers and the cancellation of parallel branches.
type Watcher interface {
	// WatchHead returns the cursor of the newest committed change: a
	// watch from it yields only the changes committed after the call.
	// Reading state and then watching from a cursor taken before the read
	// misses nothing (a change may then be seen twice: once in the state,
	// once as an event). A store that holds no change yet may return
	// the zero Cursor.
	WatchHead(ctx context.Context) (Cursor, error)
	// Watch yields every change committed after cursor after (the zero
	// Cursor: from the oldest the store holds) to a ref whose name starts
	// with prefix ("" for all), each exactly once, in commit order per ref
	// (the order of the ref's log), each with the cursor to resume after
	// it. It blocks waiting for new changes and ends when ctx is done
	// (yielding ctx's error) or the caller stops. A malformed cursor
	// yields an error wrapping [ErrInvalidCursor] and ends; a cursor older
	// than the retained changes yields an error wrapping [ErrCursorGone]
	// once and goes on from the oldest retained change. Changes are the
	// log entries appended by CompareAndSwap and Replace, and by ImportLog
	// only when it creates the ref (one event for the creation, carrying
	// the merged log's newest entry); entries ImportLog merges into an
	// existing log, and PruneLog's trimming, are not changes and yield
	// nothing.
	Watch(ctx context.Context, prefix string, after Cursor) iter.Seq2[Event, error]
}

// WatchHead returns the cursor of the store's newest committed ref change
// ([Watcher.WatchHead]). The error wraps [ErrWatchUnsupported] if the
// store's refs cannot be watched.
func (r *Repo) WatchHead(ctx context.Context) (Cursor, error) {
	w, ok := r.refs.Refs.(Watcher)
	if !ok {
		return "", fmt.Errorf("%w (%T)", ErrWatchUnsupported, r.refs.Refs)
	}
	return w.WatchHead(ctx)
}

// Watch follows the store's ref changes after cursor after under prefix,
// as [Watcher.Watch] specifies. The error wraps [ErrWatchUnsupported] if
// the store's refs cannot be watched.
func (r *Repo) Watch(ctx context.Context, prefix string, after Cursor) iter.Seq2[Event, error] {
	w, ok := r.refs.Refs.(Watcher)
	if !ok {
		return func(yield func(Event, error) bool) {
			yield(Event{}, fmt.Errorf("%w (%T)", ErrWatchUnsupported, r.refs.Refs))
		}
	}
	return w.Watch(ctx, prefix, after)
}

// memJournal is a [MemRefs]' stream of changes: every event since the
// store was made (a memory store is ephemeral, so nothing is trimmed),
// numbered from 1; the cursor is the number in decimal. wake is broadcast
// at every append, waking the watchers.
type memJournal struct {
	mu     sync.Mutex
	events []Event
	wake   wake.Signal
}

// append records a change; the caller holds the refs' lock, so changes of
// one ref are appended in their log's order.
func (j *memJournal) append(name string, e LogEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, Event{
		Ref: name, Old: e.Old, New: e.New, Time: e.Time, Message: e.Message,
		Cursor: Cursor(strconv.Itoa(len(j.events) + 1)),
	})
	j.wake.Broadcast()
}

// since returns the events after number n under prefix, the newest
// number, and a channel closed at the next append.
func (j *memJournal) since(n int, prefix string) ([]Event, int, <-chan struct{}) {
	wake := j.wake.Wait() // before the read: an append after it closes wake
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Event
	for _, e := range j.events[min(n, len(j.events)):] {
		if strings.HasPrefix(e.Ref, prefix) {
			out = append(out, e)
		}
	}
	return out, len(j.events), wake
}

var _ Watcher = (*MemRefs)(nil)

// WatchHead returns the cursor of the newest change.
func (r *MemRefs) WatchHead(ctx context.Context) (Cursor, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	_, n, _ := r.journal.since(1<<62, "")
	return Cursor(strconv.Itoa(n)), nil
}

// Watch yields the changes after cursor after under prefix, as [Watcher]
// specifies, waking at every change.
func (r *MemRefs) Watch(ctx context.Context, prefix string, after Cursor) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		n := 0
		if after != "" {
			v, err := strconv.Atoi(string(after))
			if err != nil || v < 0 || strconv.Itoa(v) != string(after) {
				yield(Event{}, fmt.Errorf("%w %q: not a memory store's cursor", ErrInvalidCursor, after))
				return
			}
			n = v
		}
		for {
			evs, head, wake := r.journal.since(n, prefix)
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			n = max(n, head)
			select {
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			case <-wake:
			}
		}
	}
}
