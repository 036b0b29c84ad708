package postgres

import (
	"context"
	"sync"
	"time"
)

// notifyTimeout bounds one notification's round trip.
const notifyTimeout = 5 * time.Second

// notifier sends a Store's notifications on the schema's channel (see
// watch.go): after a commit that logged a change, the committing goroutine
// calls changed, which wakes this process's watchers at once and asks the
// notifier's goroutine for one NOTIFY; requests made while one is pending
// are coalesced into it. Each NOTIFY runs in a transaction of its own,
// outside every write transaction, with synchronous_commit off (a lost
// notification costs a watcher one poll interval, never an event), so no
// writer waits for the notification queue's lock or for its flush. A
// process that dies between a commit and its notification leaves the
// change to the watchers' next poll.
type notifier struct {
	mu      sync.Mutex
	started bool
	stopped bool
	ch      chan struct{} // capacity 1: a pending request
	stop    chan struct{}
	done    chan struct{}
}

// changed reports a committed change of the log: see notifier.
func (s *Store) changed() {
	s.listen.Broadcast()
	n := &s.notify
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	if !n.started {
		n.started = true
		n.ch, n.stop, n.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go s.notifyLoop(n.ch, n.stop, n.done)
	}
	ch := n.ch
	n.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default: // one is pending: it covers this change
	}
}

// notifyLoop sends a NOTIFY per request until stop, then the one still
// pending, if any.
func (s *Store) notifyLoop(ch, stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-ch:
			s.sendNotify()
		case <-stop:
			select {
			case <-ch:
				s.sendNotify()
			default:
			}
			return
		}
	}
}

func (s *Store) sendNotify() {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, s.q.watchNotify); err != nil {
		s.log.Debug("watch: a notification failed; other processes see the change at their next poll", "error", err)
	}
}

// stopNotify ends the notifier after sending what is pending; changed does
// nothing after it. Calls after the first do nothing.
func (s *Store) stopNotify() {
	n := &s.notify
	n.mu.Lock()
	first := !n.stopped
	n.stopped = true
	started, stop, done := n.started, n.stop, n.done
	n.mu.Unlock()
	if started && first {
		close(stop)
		<-done
	}
}
