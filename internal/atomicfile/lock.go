package atomicfile

import "errors"

// ErrWouldBlock is returned by [LockFile.TryLock] when another holder has
// the lock.
var ErrWouldBlock = errors.New("the lock is held by another holder")
