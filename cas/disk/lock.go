package disk

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// Lock takes the store-wide lock: shared for writers (around "check the
// edges present, put, move the ref"), exclusive for a GC sweep batch. It is
// flock(2) on the file "lock", through a new open file description per
// holder, so holders exclude each other the same way within a process and
// across processes, and a process that dies releases its locks.
//
// flock(2) does not prefer waiting writers, so two gates keep a stream of
// overlapping shared holders from starving an exclusive request: within the
// process a writer-preferring lock ([rwlock.RW]) is taken first, and across
// processes a request passes the file "lock.gate" (shared requests hold it
// shared only until they hold "lock"; an exclusive request holds it
// exclusively while it waits, so new shared requests queue behind it).
//
// Lock waits until the lock is granted or ctx is done (then the error is
// ctx's, and no lock is left held). unlock is idempotent.
func (s *Store) Lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	unlockLocal, err := s.local.Lock(ctx, exclusive)
	if err != nil {
		return nil, fmt.Errorf("disk: lock store %s: %w", s.dir, err)
	}
	unlockGate, err := lockWait(ctx, filepath.Join(s.dir, gateFile), exclusive)
	if err != nil {
		unlockLocal()
		return nil, fmt.Errorf("disk: lock store %s: %w", s.dir, err)
	}
	unlockMain, err := lockWait(ctx, filepath.Join(s.dir, lockFile), exclusive)
	unlockGate()
	if err != nil {
		unlockLocal()
		return nil, fmt.Errorf("disk: lock store %s: %w", s.dir, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unlockMain()
			unlockLocal()
		})
	}, nil
}

// LockGC takes the lock that keeps two GCs from running at once: flock(2)
// LOCK_EX on the file "gc.lock", without waiting. If another holder has it
// the error wraps [cas.ErrLocked]. The lock is released by unlock
// (idempotent) or when the holding process dies.
func (s *Store) LockGC(ctx context.Context) (unlock func(), err error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	l, err := atomicfile.OpenLock(filepath.Join(s.dir, gcLockFile))
	if err != nil {
		return nil, fmt.Errorf("disk: lock GC: %w", err)
	}
	err = l.TryLock(lockEx)
	if err == atomicfile.ErrWouldBlock {
		l.Close()
		return nil, fmt.Errorf("disk: lock GC of %s: another GC is running: %w", s.dir, cas.ErrLocked)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("disk: lock GC: %w", err)
	}
	return closer(l), nil
}

// The modes of lockWait.
const (
	lockSh = false // shared
	lockEx = true  // exclusive
)

// lockWait takes flock(2) on path, exclusive (lockEx) or shared (lockSh),
// waiting until it is granted or ctx is done. The wait is a blocking flock
// in a goroutine; if ctx ends first, the goroutine releases the lock as soon
// as it is granted, so a cancelled wait never leaves a lock held.
func lockWait(ctx context.Context, path string, exclusive bool) (unlock func(), err error) {
	l, err := atomicfile.OpenLock(path)
	if err != nil {
		return nil, err
	}
	err = l.TryLock(exclusive)
	if err == nil {
		return closer(l), nil
	}
	if err != atomicfile.ErrWouldBlock {
		l.Close()
		return nil, err
	}
	if ctx.Done() == nil {
		if err := l.Lock(exclusive); err != nil {
			l.Close()
			return nil, err
		}
		return closer(l), nil
	}
	done := make(chan error, 1)
	go func() { done <- l.Lock(exclusive) }()
	select {
	case err := <-done:
		if err != nil {
			l.Close()
			return nil, err
		}
		return closer(l), nil
	case <-ctx.Done():
		go func() {
			<-done
			l.Close() // releases the lock if it was granted
		}()
		return nil, ctx.Err()
	}
}

// tryLock takes flock(2) on path without waiting: a nil unlock and a nil
// error when another holds a conflicting lock.
func tryLock(path string, exclusive bool) (unlock func(), err error) {
	l, err := atomicfile.OpenLock(path)
	if err != nil {
		return nil, err
	}
	switch err := l.TryLock(exclusive); err {
	case nil:
		return closer(l), nil
	case atomicfile.ErrWouldBlock:
		l.Close()
		return nil, nil
	default:
		l.Close()
		return nil, err
	}
}

// closer returns an idempotent function that closes l, releasing its lock.
func closer(l *atomicfile.LockFile) func() {
	var once sync.Once
	return func() { once.Do(func() { l.Close() }) }
}
