// Package wake is a broadcast signal for watchers: each waiter takes a
// channel that the next Broadcast closes. The memory, disk and PostgreSQL
// backends' watches wait on one.
package wake

import "sync"

// Signal hands out channels closed at the next Broadcast. A waiter takes
// its channel before it reads the state it waits on, so a change made
// after that read is never missed. The zero Signal is ready to use; a
// Signal must not be copied after first use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns a channel closed at the next Broadcast.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Broadcast wakes every waiter: it closes the channel Wait handed out.
func (s *Signal) Broadcast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
