package disk

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// Durability says how hard the store works to keep what it reports written
// across a power loss or kernel crash. A crash of the process alone (SIGKILL)
// never loses or tears anything at either level.
type Durability int

const (
	// DurabilityStrict, the default, syncs every file before publishing it
	// and every folder after changing it: an operation that returned is on
	// stable storage.
	DurabilityStrict Durability = iota
	// DurabilityNone skips every fsync, for throw-away stores and bulk work
	// that can be redone. A power loss may lose recent writes or damage
	// recent objects (Get reports them, a re-put heals them).
	DurabilityNone
)

// ParseDurability parses "strict" or "none". Any other input is an error,
// wrapping [cas.ErrInvalid], that names it.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "strict":
		return DurabilityStrict, nil
	case "none":
		return DurabilityNone, nil
	}
	return 0, fmt.Errorf("%w durability %q: want strict or none", cas.ErrInvalid, s)
}

// String returns "strict" or "none" (or "Durability(N)" for a value out of
// range).
func (d Durability) String() string {
	switch d {
	case DurabilityStrict:
		return "strict"
	case DurabilityNone:
		return "none"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// Options configure a [Store]. A nil *Options, and the zero value of each
// field, mean the defaults. Options are per Store: processes sharing a folder
// may use different ones.
type Options struct {
	// Durability defaults to DurabilityStrict.
	Durability Durability
	// Now is the store's clock: objects' ages (file modification times)
	// and ref-log times are read from it. Nil means time.Now.
	Now func() time.Time
	// Logger receives debug and warning events (a healed object, removed
	// stale temporary files). Nil discards them.
	Logger *slog.Logger

	// Unexported knobs for tests and benchmarks (see export_test.go).
	fs        atomicfile.FS         // nil: atomicfile.OS
	sum       func([]byte) cas.Hash // nil: cas.Sum
	batchSync batchSync             // how PutBatch makes its temp files durable
	staleAge  time.Duration         // temp files older than this are removed at Open
	staleSet  bool                  // staleAge was set (it may be 0)
	writers   int                   // goroutines writing a batch without flushes (0: the default)
	bumpHook  func()                // called by BumpFormat between its check and the FORMAT write
	// journalSegment is the size past which a change starts a new journal
	// segment (0: defaultSegmentSize).
	journalSegment int64
	// moveHook, if set, is called by a ref change after its journal
	// record and log line are flushed and before the ref moves; an error
	// aborts the change there, as a crash would.
	moveHook func(name string) error
}

// batchSync selects how PutBatch syncs its temporary files.
type batchSync int

const (
	batchSyncFS   batchSync = iota // one syncfs(2), falling back to the pool
	batchSyncPool                  // fsync each file from a bounded pool
)

// defaultStaleAge is how old (by inode change time) a temporary file must be
// for Open and GC to remove it: far longer than any write takes.
const defaultStaleAge = cas.StaleTempAge

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.fs == nil {
		c.fs = atomicfile.OS
	}
	if c.sum == nil {
		c.sum = cas.Sum
	}
	if !c.staleSet {
		c.staleAge = defaultStaleAge
	}
	return c
}
