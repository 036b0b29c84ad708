package disk

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/uncaged/uwf/cas"
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
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	unlockLocal, err := s.local.Lock(ctx, exclusive)
	if err != nil {
		return nil, fmt.Errorf("disk: lock store %s: %w", s.dir, err)
	}
	unlockGate, err := lockWait(ctx, filepath.Join(s.dir, gateFile), how)
	if err != nil {
		unlockLocal()
		return nil, fmt.Errorf("disk: lock store %s: %w", s.dir, err)
	}
	unlockMain, err := lockWait(ctx, filepath.Join(s.dir, lockFile), how)
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
	path := filepath.Join(s.dir, gcLockFile)
	fd, err := openLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("disk: lock GC: %w", err)
	}
	err = ignoringEINTR(func() error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) })
	if err == syscall.EWOULDBLOCK {
		syscall.Close(fd)
		return nil, fmt.Errorf("disk: lock GC of %s: another GC is running: %w", s.dir, cas.ErrLocked)
	}
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("disk: lock GC: %w", &fs.PathError{Op: "flock", Path: path, Err: err})
	}
	return closer(fd), nil
}

// openLockFile opens (creating) a lock file: a new open file description,
// so flock(2) treats each holder separately.
func openLockFile(path string) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// lockWait takes flock(2) how (LOCK_SH or LOCK_EX) on path, waiting until it
// is granted or ctx is done. The wait is a blocking flock in a goroutine; if
// ctx ends first, the goroutine releases the lock as soon as it is granted,
// so a cancelled wait never leaves a lock held.
func lockWait(ctx context.Context, path string, how int) (unlock func(), err error) {
	fd, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	flock := func(how int) error {
		return ignoringEINTR(func() error { return syscall.Flock(fd, how) })
	}
	err = flock(how | syscall.LOCK_NB)
	if err == nil {
		return closer(fd), nil
	}
	if err != syscall.EWOULDBLOCK {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
	}
	if ctx.Done() == nil {
		if err := flock(how); err != nil {
			syscall.Close(fd)
			return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
		}
		return closer(fd), nil
	}
	done := make(chan error, 1)
	go func() { done <- flock(how) }()
	select {
	case err := <-done:
		if err != nil {
			syscall.Close(fd)
			return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
		}
		return closer(fd), nil
	case <-ctx.Done():
		go func() {
			<-done
			syscall.Close(fd) // releases the lock if it was granted
		}()
		return nil, ctx.Err()
	}
}

// closer returns an idempotent function that closes fd, releasing its lock.
func closer(fd int) func() {
	var once sync.Once
	return func() { once.Do(func() { syscall.Close(fd) }) }
}
