package disk

import (
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// SetFS makes a store opened with o write through fsys (a recording FS).
func SetFS(o *Options, fsys atomicfile.FS) { o.fs = fsys }

// SetHash makes a store opened with o address objects with sum, so tests can
// make two different inputs collide.
func SetHash(o *Options, sum func([]byte) cas.Hash) { o.sum = sum }

// SetBatchSyncPool makes PutBatch fsync each file from a pool instead of
// calling syncfs(2).
func SetBatchSyncPool(o *Options, pool bool) {
	o.batchSync = batchSyncFS
	if pool {
		o.batchSync = batchSyncPool
	}
}

// SetBatchWriters bounds the goroutines that write s's batches without
// flushes (1: the calling goroutine alone; 0: the default). Not safe while
// a batch runs.
func SetBatchWriters(s *Store, n int) { s.opts.writers = n }

// SetStaleTempAge sets how old a temporary file must be for Open to remove
// it.
func SetStaleTempAge(o *Options, d time.Duration) { o.staleAge, o.staleSet = d, true }

// SetBumpHook makes BumpFormat call f after it has checked the wanted refs
// and before it writes the FORMAT file, with its locks held.
func SetBumpHook(o *Options, f func()) { o.bumpHook = f }

// LogSuffix ends the name of every ref log file.
const LogSuffix = logSuffix

// SetJournalSegment sets the size past which a change starts a new journal
// segment.
func SetJournalSegment(o *Options, n int64) { o.journalSegment = n }

// SetMoveHook makes every ref change call f after its journal record and
// log line are flushed and before the ref moves; an error from f aborts
// the change there, as a crash would.
func SetMoveHook(o *Options, f func(name string) error) { o.moveHook = f }

// ConfirmedUnderLock counts the journal records s's watchers confirmed
// under their ref's lock.
func ConfirmedUnderLock(s *Store) int64 { return s.confirmed.locked.Load() }
