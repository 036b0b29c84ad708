// Package rwlock provides a context-aware readers-writer lock that prefers
// writers: the in-process half of the store-wide lock of the memory and disk
// backends.
package rwlock

import (
	"context"
	"sync"
)

// RW is a readers-writer lock whose waiters honour a context. Waiting
// writers have priority over new readers, so a stream of overlapping
// readers cannot starve a writer. The zero value is an unlocked lock; an RW
// must not be copied after first use.
type RW struct {
	mu       sync.Mutex
	readers  int           // shared holders
	writer   bool          // an exclusive holder
	writers  int           // exclusive requests waiting
	released chan struct{} // closed (and replaced) when the state changes
}

// Lock takes the lock, exclusive or shared, waiting until it is granted or
// ctx is done (then it returns ctx's error and holds nothing). The returned
// unlock is idempotent.
func (l *RW) Lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if exclusive {
		l.writers++
	}
	for {
		if exclusive && !l.writer && l.readers == 0 {
			l.writers--
			l.writer = true
			break
		}
		if !exclusive && !l.writer && l.writers == 0 {
			l.readers++
			break
		}
		if l.released == nil {
			l.released = make(chan struct{})
		}
		ch := l.released
		l.mu.Unlock()
		select {
		case <-ch:
			l.mu.Lock()
		case <-ctx.Done():
			if exclusive {
				l.mu.Lock()
				l.writers--
				l.broadcastLocked() // readers held back by this request may go
				l.mu.Unlock()
			}
			return nil, ctx.Err()
		}
	}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			if exclusive {
				l.writer = false
			} else {
				l.readers--
			}
			l.broadcastLocked()
			l.mu.Unlock()
		})
	}, nil
}

// broadcastLocked wakes every waiter; l.mu is held.
func (l *RW) broadcastLocked() {
	if l.released != nil {
		close(l.released)
		l.released = nil
	}
}
