package disk

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
	"github.com/uncaged/uwf/internal/rawfile"
	"github.com/uncaged/uwf/internal/rwlock"
)

// Store is the on-disk object store. It implements [cas.Store] and
// [cas.BatchPutter]; [Store.Refs] gives the refs of the same store. A Store
// is safe for concurrent use by goroutines, and any number of processes may
// open the same folder at once.
type Store struct {
	dir     string
	objDir  string // <dir>/objects
	tmpDir  string // <dir>/tmp
	durable bool
	now     func() time.Time
	log     *slog.Logger
	fs      atomicfile.FS
	sum     func([]byte) cas.Hash
	opts    Options
	refs    *Refs
	closed  atomic.Bool
	local   rwlock.RW // the in-process half of Lock

	// noUnnamed is set once the filesystem has refused unnamed files
	// (O_TMPFILE, or linking them): batches then write named temporary
	// files in tmp/.
	noUnnamed atomic.Bool

	// newDirs chooses the folder of tmp/ for each unnamed file
	// (newdir.go); spread says tmp/ was marked to spread its folders.
	newDirs newDirs
	spread  atomic.Bool

	cacheMade atomic.Bool    // cache/ is there (makeCacheDir)
	noAttrs   atomic.Bool    // the filesystem keeps no extended attributes (derived.go)
	jseg      atomic.Int64   // the newest journal segment this Store has seen
	watch     notifier       // wakes this Store's watchers
	confirmed confirmedCache // what this Store's watchers found committed
	reads     sharedReads    // their reads of the journal

	// slack is how much earlier than the time set the filesystem may
	// record a modification time (its granularity, less 1ns), measured
	// once by probeSlack; slackKnown says it was.
	slackMu    sync.Mutex
	slack      time.Duration
	slackKnown bool

	// stripes make Put, Touch and DeleteIfOlder of one hash atomic with
	// respect to each other within the process; across processes callers
	// hold the store-wide lock (see DeleteIfOlder).
	stripes [256]sync.Mutex
}

var (
	_ cas.Store       = (*Store)(nil)
	_ cas.BatchPutter = (*Store)(nil)
	_ cas.TempCleaner = (*Store)(nil)
	_ cas.TempCounter = (*Store)(nil)
)

// Names inside a store folder.
const (
	formatFile = "FORMAT"
	objectsDir = "objects"
	tmpDirName = "tmp"
	refsDir    = "refs"
	logsDir    = "logs"
	locksDir   = "locks"
	lockFile   = "lock"
	gateFile   = "lock.gate"
	gcLockFile = "gc.lock"
	cacheDir   = "cache" // the droppable derived cache (cas.Derived)
	// journalDir ("journal") is in journal.go.
)

// storeNames are the names a store folder may hold.
var storeNames = []string{formatFile, objectsDir, tmpDirName, refsDir, logsDir, locksDir, lockFile, gateFile, gcLockFile, journalDir, cacheDir}

// Create makes a new store in dir, creating dir if needed. It fails with an
// error wrapping [fs.ErrExist] if a store exists there, and refuses a folder
// that holds anything else. When several processes create the same store at
// once exactly one succeeds (see [OpenOrCreate]).
func Create(dir string, opts *Options) (*Store, error) {
	if errPlatform != nil {
		return nil, fmt.Errorf("disk: create store %s: %w", dir, errPlatform)
	}
	o := opts.withDefaults()
	sync := o.Durability == DurabilityStrict
	if _, err := os.Lstat(filepath.Join(dir, formatFile)); err == nil {
		return nil, fmt.Errorf("disk: create store %s: %w", dir, fs.ErrExist)
	}
	if err := atomicfile.MkdirAll(o.fs, dir, sync); err != nil {
		return nil, fmt.Errorf("disk: create store %s: %w", dir, err)
	}
	names, err := readDirNames(dir)
	if err != nil {
		return nil, fmt.Errorf("disk: create store %s: %w", dir, err)
	}
	for _, n := range names {
		if !slices.Contains(storeNames, n) {
			return nil, fmt.Errorf("disk: create store %s: the folder holds %q: not empty and not a uwf store", dir, n)
		}
	}
	for _, d := range []string{objectsDir, tmpDirName, refsDir, logsDir, locksDir, cacheDir} {
		if err := o.fs.Mkdir(filepath.Join(dir, d), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("disk: create store %s: %w", dir, err)
		}
	}
	if sync {
		if err := o.fs.SyncDir(dir); err != nil {
			return nil, fmt.Errorf("disk: create store %s: %w", dir, err)
		}
	}
	// FORMAT last, never overwriting: of several creators racing, one
	// publishes it and the others fail with fs.ErrExist.
	err = atomicfile.Publish(o.fs, filepath.Join(dir, tmpDirName), filepath.Join(dir, formatFile), formatText(FormatVersion), time.Time{}, sync)
	if err != nil {
		return nil, fmt.Errorf("disk: create store %s: %w", dir, err)
	}
	return newStore(dir, o), nil
}

// Open opens the store in dir. The error wraps [fs.ErrNotExist] if there is
// no store there and [cas.ErrFormat] if its FORMAT file records a version
// this package does not know (it knows [cas.FormatV1] to
// [cas.LatestFormat]). Open changes no ref, object or log. Open removes temporary files left by crashed
// writers more than an hour ago.
func Open(dir string, opts *Options) (*Store, error) {
	if errPlatform != nil {
		return nil, fmt.Errorf("disk: open store %s: %w", dir, errPlatform)
	}
	o := opts.withDefaults()
	b, err := os.ReadFile(filepath.Join(dir, formatFile))
	if err != nil {
		return nil, fmt.Errorf("disk: open store %s: %w", dir, err)
	}
	if _, err := parseFormat(b); err != nil {
		return nil, fmt.Errorf("disk: open store %s: %w", dir, err)
	}
	sync := o.Durability == DurabilityStrict
	for _, d := range []string{objectsDir, tmpDirName, refsDir, logsDir, locksDir} {
		if err := atomicfile.MkdirAll(o.fs, filepath.Join(dir, d), sync); err != nil {
			return nil, fmt.Errorf("disk: open store %s: %w", dir, err)
		}
	}
	s := newStore(dir, o)
	s.removeStaleTemps()
	return s, nil
}

// OpenOrCreate opens the store in dir, creating it first if there is none.
// It is safe when several processes start at once: the losers of the
// creation race open the winner's store (and refuse it, wrapping
// [cas.ErrFormat], if its format is unknown).
func OpenOrCreate(dir string, opts *Options) (*Store, error) {
	s, err := Open(dir, opts)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	s, err = Create(dir, opts)
	if errors.Is(err, fs.ErrExist) {
		return Open(dir, opts)
	}
	return s, err
}

func newStore(dir string, o Options) *Store {
	s := &Store{
		dir:     dir,
		objDir:  filepath.Join(dir, objectsDir),
		tmpDir:  filepath.Join(dir, tmpDirName),
		durable: o.Durability == DurabilityStrict,
		now:     o.Now,
		log:     o.Logger.With("component", "disk", "store", dir),
		fs:      o.fs,
		sum:     o.sum,
		opts:    o,
	}
	s.refs = newRefs(s)
	s.newDirs.make = s.makeNewDir
	s.newDirs.remove = s.removeNewDir
	s.newDirs.log = s.log
	return s
}

// removeStaleTemps removes the stale temporary files at Open, ignoring
// errors: a file it cannot remove now, GC retries.
func (s *Store) removeStaleTemps() {
	s.cleanTemps(context.Background(), true)
}

// RemoveStaleTemps removes the temporary files in tmp/ whose inode change
// time is over an hour ([cas.StaleTempAge]) old: leftovers of writers that
// crashed. The change time is set by the kernel (a writer's SetModTime
// cannot move it back), so a live writer's file is never taken. It reports
// how many it removed, goes on past a file it cannot remove and returns
// the first such error. It implements [cas.TempCleaner], for GC.
func (s *Store) RemoveStaleTemps(ctx context.Context) (int, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	_, removed, err := s.cleanTemps(ctx, true)
	return removed, err
}

// CountTemps reports how many temporary files tmp/ holds and how many of
// them are stale (see [Store.RemoveStaleTemps]). It implements
// [cas.TempCounter], for fsck.
func (s *Store) CountTemps(ctx context.Context) (total, stale int, err error) {
	if err := s.ready(ctx); err != nil {
		return 0, 0, err
	}
	return s.cleanTemps(ctx, false)
}

// cleanTemps counts the temporary files and the stale ones among them,
// removing those if remove is set (stale then counts the removed ones).
func (s *Store) cleanTemps(ctx context.Context, remove bool) (total, stale int, err error) {
	entries, err := os.ReadDir(s.tmpDir)
	if err != nil {
		return 0, 0, fmt.Errorf("disk: list temporary files: %w", err)
	}
	limit := time.Now().Add(-s.opts.staleAge)
	var first error
	for i, e := range entries {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return total, stale, err
			}
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // renamed into place meanwhile
		}
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("disk: temporary file: %w", err))
			continue
		}
		if fi.IsDir() {
			// A folder of unnamed files (newdir.go) left by a writer
			// that crashed, or that has not made a file for an hour (it
			// makes another). It holds no entry, so it is not counted.
			if remove && isNewDir(e.Name()) && changeTime(fi).Before(limit) {
				p := filepath.Join(s.tmpDir, e.Name())
				if err := s.fs.Remove(p); err == nil {
					s.log.Debug("removed stale folder of unnamed files", "path", p)
				}
			}
			continue
		}
		total++
		if !changeTime(fi).Before(limit) {
			continue
		}
		if !remove {
			stale++
			continue
		}
		p := filepath.Join(s.tmpDir, e.Name())
		switch err := s.fs.Remove(p); {
		case err == nil:
			stale++
			s.log.Debug("removed stale temporary file", "path", p)
		case !errors.Is(err, fs.ErrNotExist):
			first = cmp.Or(first, fmt.Errorf("disk: remove stale temporary file: %w", err))
		}
	}
	return total, stale, first
}

// Dir returns the store's folder.
func (s *Store) Dir() string { return s.dir }

// Refs returns the refs of the store; they share its options and clock.
func (s *Store) Refs() *Refs { return s.refs }

// Close marks the store closed: later calls fail with an error wrapping
// [fs.ErrClosed]. It holds no open files, so it cannot fail; locks taken
// with Lock or LockGC stay held until their unlock functions are called;
// its watches end, yielding an error wrapping [fs.ErrClosed].
func (s *Store) Close() error {
	s.closed.Store(true)
	s.watch.Broadcast() // its watches end
	s.newDirs.close()   // its folders of unnamed files, empty
	return nil
}

// ready returns an error if the store is closed or ctx is done.
func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("disk: store %s: %w", s.dir, fs.ErrClosed)
	}
	return ctx.Err()
}

func (s *Store) stripe(h cas.Hash) *sync.Mutex { return &s.stripes[uint64(h)%uint64(len(s.stripes))] }

// Get returns the object at h after re-hashing it. The error wraps
// [cas.ErrNotFound] if it is absent and [cas.ErrCorrupt] if its bytes no
// longer hash to h (they are never returned); both are *[cas.ObjectError]
// values with Op "get". The caller owns the returned slice.
func (s *Store) Get(ctx context.Context, h cas.Hash) ([]byte, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	data, err := readFile(s.objPath(h))
	if err != nil {
		return nil, objectError("get", h, err)
	}
	if got := s.sum(data); got != h {
		return nil, &cas.ObjectError{Op: "get", Hash: h, Err: fmt.Errorf("%w: the bytes hash to %s", cas.ErrCorrupt, got)}
	}
	return data, nil
}

// objectError wraps a filesystem error about object h; a missing file
// becomes [cas.ErrNotFound].
func objectError(op string, h cas.Hash, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		err = cas.ErrNotFound
	}
	return &cas.ObjectError{Op: op, Hash: h, Err: err}
}

// Put stores data and returns its hash. The object is written to a
// temporary file, synced, published under objects/<YZ>/<HASH> without
// overwriting, and its folder synced (no syncs with DurabilityNone). If the
// address is taken, the bytes there are read and re-hashed: the same bytes
// make Put a no-op that refreshes the object's age; bytes that do not hash
// to the address (corrupt, truncated) are replaced atomically; intact
// different bytes fail with an error wrapping [cas.ErrCollision] and nothing
// is stored. Errors are *[cas.ObjectError] values with Op "put".
func (s *Store) Put(ctx context.Context, data []byte) (cas.Hash, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	h := s.sum(data)
	mu := s.stripe(h)
	mu.Lock()
	defer mu.Unlock()
	if err := s.putLocked(h, s.objPath(h), data, s.now()); err != nil {
		return 0, &cas.ObjectError{Op: "put", Hash: h, Err: err}
	}
	return h, nil
}

// putLocked stores data at path, holding h's stripe.
func (s *Store) putLocked(h cas.Hash, path string, data []byte, now time.Time) error {
	for range 8 {
		st, err := s.check(h, path, data, now)
		switch {
		case err != nil:
			return err
		case st == stored:
			return nil
		case st == corrupt:
			return s.heal(h, path, data, now, "")
		}
		err = atomicfile.Publish(s.fs, s.tmpDir, path, data, now, s.durable)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		// Another process published it first: check its bytes.
	}
	return fmt.Errorf("the object keeps appearing and disappearing at %s", path)
}

// objectState is what check finds at an object's path.
type objectState int

const (
	absent  objectState = iota // nothing there
	stored                     // the same bytes (their age is now refreshed)
	corrupt                    // bytes that do not hash to the address
)

// check reads what is stored at path, the address h of data. The same bytes
// are stored (and touched to now); intact different bytes are an error
// wrapping [cas.ErrCollision]. The caller holds h's stripe.
func (s *Store) check(h cas.Hash, path string, data []byte, now time.Time) (objectState, error) {
	existing, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return absent, nil
	}
	if err != nil {
		return absent, err
	}
	if bytes.Equal(existing, data) {
		err := s.fs.Chtimes(path, now)
		if errors.Is(err, fs.ErrNotExist) {
			return absent, nil // deleted meanwhile
		}
		return stored, err
	}
	if s.sum(existing) == h {
		return absent, fmt.Errorf("%w: different bytes (%d, not %d) already stored at this address", cas.ErrCollision, len(existing), len(data))
	}
	return corrupt, nil
}

// heal replaces the corrupt object at path with data, atomically (rename
// over it), and syncs its folder. tmp, if not "", is a complete temporary
// file holding data; else one is written.
func (s *Store) heal(h cas.Hash, path string, data []byte, now time.Time, tmp string) error {
	if tmp == "" {
		var err error
		if tmp, err = atomicfile.WriteTemp(s.fs, s.tmpDir, data, now, s.durable); err != nil {
			return err
		}
	}
	if err := atomicfile.ReplaceTemp(s.fs, tmp, path, s.durable); err != nil {
		return err
	}
	s.log.Warn("healed a corrupt object", "hash", h.String())
	return nil
}

// Has reports whether an object is stored at h, without reading or
// verifying it.
func (s *Store) Has(ctx context.Context, h cas.Hash) (bool, error) {
	if err := s.ready(ctx); err != nil {
		return false, err
	}
	ok, err := rawfile.Exists(s.objPath(h))
	if err != nil {
		return false, &cas.ObjectError{Op: "has", Hash: h, Err: err}
	}
	return ok, nil
}

// Touch sets the age of the object at h to now (its modification time to
// Now()). The error wraps [cas.ErrNotFound] if it is absent. The new time
// is not synced: after a crash an object may look older, which matters only
// to writers that were running before the crash.
func (s *Store) Touch(ctx context.Context, h cas.Hash) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	mu := s.stripe(h)
	mu.Lock()
	defer mu.Unlock()
	if err := s.fs.Chtimes(s.objPath(h), s.now()); err != nil {
		return objectError("touch", h, err)
	}
	return nil
}

// DeleteIfOlder deletes the object at h only if its age (modification time)
// is still certainly before cutoff, and reports whether it deleted; an
// absent object is (false, nil). A filesystem records modification times
// at some granularity (1 ns on ext4, 2 s on FAT), truncating the time Put
// or Touch set, so a file's mtime may be up to that much earlier than the
// touch itself: the object is deleted only if mtime + that slack is before
// cutoff. A node touched at or after cutoff is therefore never deleted,
// whatever the granularity (see [Store.mtimeSlack]). Within this process
// it is atomic with respect to Put and Touch of the same hash (they share
// a striped mutex). Across processes the callers provide the atomicity: GC
// deletes under the exclusive store-wide [Store.Lock], and writers put and
// touch under the shared one. The removal is not synced: an object that
// comes back after a crash is collected again.
func (s *Store) DeleteIfOlder(ctx context.Context, h cas.Hash, cutoff time.Time) (bool, error) {
	if err := s.ready(ctx); err != nil {
		return false, err
	}
	slack := s.mtimeSlack()
	mu := s.stripe(h)
	mu.Lock()
	defer mu.Unlock()
	path := s.objPath(h)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &cas.ObjectError{Op: "delete", Hash: h, Err: err}
	}
	if !fi.ModTime().Add(slack).Before(cutoff) {
		return false, nil
	}
	if err := s.fs.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, &cas.ObjectError{Op: "delete", Hash: h, Err: err}
	}
	return true, nil
}

// DeleteIfOlderBatch does DeleteIfOlder for each hash of hs in turn (a
// file each: there is nothing to batch) and returns those it deleted, in
// the order of hs. It stops at the first failure, returning it with the
// objects deleted before it.
func (s *Store) DeleteIfOlderBatch(ctx context.Context, hs []cas.Hash, cutoff time.Time) ([]cas.Hash, error) {
	var deleted []cas.Hash
	for _, h := range hs {
		ok, err := s.DeleteIfOlder(ctx, h, cutoff)
		if err != nil {
			return deleted, err
		}
		if ok {
			deleted = append(deleted, h)
		}
	}
	return deleted, nil
}

// fallbackSlack is the mtime slack assumed when it cannot be measured (the
// probe failed, say on a full disk) or the filesystem rounds times up or
// to the nearest step rather than truncating them: 2 s, FAT's step, the
// coarsest of any common filesystem.
const fallbackSlack = 2 * time.Second

// slackProbe is the time the probe sets: 1 ns before a day boundary (UTC
// midnight, 2021-01-01), so a filesystem that truncates to any step that
// divides a day (1 ns, 100 ns, 1 us, 10 ms, 1 s, 2 s, ...) records it
// exactly one step, less 1 ns, early.
var slackProbe = time.Unix(1609459199, 999999999)

// mtimeSlack returns how much earlier than the time set the store's
// filesystem may record a modification time: measured once, by setting
// slackProbe on a temporary file and reading it back. If the probe fails it
// returns fallbackSlack and tries again next time.
func (s *Store) mtimeSlack() time.Duration {
	s.slackMu.Lock()
	defer s.slackMu.Unlock()
	if s.slackKnown {
		return s.slack
	}
	d, err := s.probeSlack()
	if err != nil {
		s.log.Debug("could not measure the filesystem's mtime granularity; assuming the coarsest", "err", err, "slack", fallbackSlack)
		return fallbackSlack
	}
	s.slack, s.slackKnown = d, true
	s.log.Debug("measured the filesystem's mtime granularity", "slack", d)
	return d
}

func (s *Store) probeSlack() (time.Duration, error) {
	f, err := s.fs.CreateTemp(s.tmpDir, atomicfile.DefaultPerm)
	if err != nil {
		return 0, err
	}
	defer s.fs.Remove(f.Name())
	err = f.SetModTime(slackProbe)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	fi, err := os.Lstat(f.Name())
	if err != nil {
		return 0, err
	}
	got := fi.ModTime()
	if got.After(slackProbe) {
		return fallbackSlack, nil // rounded up or to the nearest step: the step is unknown
	}
	return slackProbe.Sub(got), nil
}

// All lists every object file with its size and age, folder by folder,
// checking ctx between folders. Names that are not canonical hashes, or not
// in their hash's folder, are skipped; an object whose content is corrupt is
// listed (fsck needs it). Objects put or deleted during the listing may or
// may not appear. A failure yields the error and stops.
func (s *Store) All(ctx context.Context) iter.Seq2[cas.Object, error] {
	return func(yield func(cas.Object, error) bool) {
		if err := s.ready(ctx); err != nil {
			yield(cas.Object{}, err)
			return
		}
		shards, err := readDirNames(s.objDir)
		if err != nil {
			yield(cas.Object{}, fmt.Errorf("disk: list objects: %w", err))
			return
		}
		slices.Sort(shards)
		for _, shard := range shards {
			if err := ctx.Err(); err != nil {
				yield(cas.Object{}, err)
				return
			}
			if !isShard(shard) {
				continue
			}
			sdir := filepath.Join(s.objDir, shard)
			names, err := readDirNames(sdir)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				yield(cas.Object{}, fmt.Errorf("disk: list objects: %w", err))
				return
			}
			for _, name := range names {
				h, err := cas.ParseCanonicalHash(name)
				if err != nil || name[cas.HashLen-2:] != shard {
					continue
				}
				fi, err := os.Lstat(filepath.Join(sdir, name))
				if errors.Is(err, fs.ErrNotExist) {
					continue // deleted meanwhile
				}
				if err != nil {
					yield(cas.Object{}, fmt.Errorf("disk: list objects: %w", err))
					return
				}
				if !fi.Mode().IsRegular() {
					continue
				}
				if !yield(cas.Object{Hash: h, Size: fi.Size(), Time: fi.ModTime()}, nil) {
					return
				}
			}
		}
	}
}

// Now returns the time by the store's clock (Options.Now, else time.Now).
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return s.now(), nil
}

// readDirNames returns the names in a folder, unsorted.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// readFile reads a whole file with plain system calls (open, fstat, read,
// close): the read path of objects, refs and logs, cheaper than os.ReadFile,
// which also registers the descriptor with the poller. A missing file is a
// bare syscall.ENOENT (it matches [fs.ErrNotExist]) on Unix, which costs
// no allocation on a Put's first look.
func readFile(path string) ([]byte, error) { return rawfile.ReadAll(path) }
