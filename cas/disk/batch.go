package disk

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// poolSize bounds the goroutines that fsync a batch's files and folders
// concurrently where syncfs is not used.
const poolSize = 16

// maxUnnamedOpen bounds the unnamed files a durable batch holds open
// between writing them and their flush point; the rest of the batch is
// written to named temporary files in tmp/.
const maxUnnamedOpen = 256

// PutBatch stores every element of data and returns their hashes in input
// order, with one flush point for the whole batch: objects already stored
// are verified and touched; the others are written to new files, made
// durable together (one syncfs(2) on the store's filesystem, or concurrent
// fsyncs where syncfs is unavailable), published in input order (so
// children put before their parents are published first), then the
// touched folders are made durable together (a second syncfs, or an fsync
// of each touched folder): two flushes for the whole batch. Hashes are
// returned only once everything is durable. Taken addresses are handled as
// by [Store.Put] (verify and touch, heal, or an error wrapping
// [cas.ErrCollision]). On error some objects may have been stored, each one
// whole; an error about one object is a *[cas.ObjectError] naming it.
// Inputs with equal hashes are stored once (different bytes with one hash
// are a collision).
//
// Where the system has them (Linux's O_TMPFILE), the new files are unnamed
// files, published into their shard with linkat(2), which never
// overwrites: one folder entry per object, and nothing left behind by a
// crash. They are made in folders tmp/new-* that the Store chooses by the
// cost of creating a file there (newdir.go), not in the shards: the shard
// folders spread over several block groups, and on a journal-less ext4
// each inode allocation pays for every inode of its group freed in the
// last minutes, which made a batch slower and less steady, and reading it
// back slower (bench/README.md, section K). Elsewhere (and in pool mode)
// they are named temporary files in tmp/, published with a no-clobber
// rename. With [DurabilityNone] nothing waits between writing a file and
// publishing it, so each is published, in input order, as soon as it is
// written, and several goroutines write them ([Store.writePublish]).
func (s *Store) PutBatch(ctx context.Context, data [][]byte) ([]cas.Hash, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	now := s.now()
	hs := make([]cas.Hash, len(data))
	first := make(map[cas.Hash]int, len(data))
	var todo []batchItem
	defer func() {
		for k := range todo {
			todo[k].discard(s.fs)
		}
	}()

	// Verify what is already stored; note what must be written. Where the
	// files are written by several goroutines (writePublish), they check
	// too: each item is then checked just before it is written.
	later := s.writers(len(data)) > 1
	for i, d := range data {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		h := s.sum(d)
		hs[i] = h
		if j, dup := first[h]; dup {
			if !bytes.Equal(data[j], d) {
				return nil, &cas.ObjectError{Op: "put", Hash: h, Err: fmt.Errorf("%w: two different inputs of the batch (%d and %d) have this hash", cas.ErrCollision, j, i)}
			}
			continue
		}
		first[h] = i
		path := s.objPath(h)
		if later {
			todo = append(todo, batchItem{i: i, path: path, check: true})
			continue
		}
		mu := s.stripe(h)
		mu.Lock()
		st, err := s.check(h, path, d, now)
		mu.Unlock()
		if err != nil {
			return nil, &cas.ObjectError{Op: "put", Hash: h, Err: err}
		}
		if st != stored {
			todo = append(todo, batchItem{i: i, path: path, heal: st == corrupt})
		}
	}
	if len(todo) == 0 {
		return hs, nil
	}

	dirs := []string{s.objDir}
	seen := make(map[string]bool)
	publish := func(it *batchItem) error {
		h := hs[it.i]
		mu := s.stripe(h)
		mu.Lock()
		err := s.publishItem(h, it, data[it.i], now)
		mu.Unlock()
		if err != nil {
			return &cas.ObjectError{Op: "put", Hash: h, Err: err}
		}
		if d := shardDir(it.path); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
		return nil
	}

	if !s.durable {
		// Nothing to flush: publish each as soon as it is written.
		if err := s.writePublish(ctx, todo, hs, data, now, publish); err != nil {
			return nil, err
		}
		return hs, nil
	}

	// Write the new files and make them durable together.
	if err := s.writeItems(ctx, todo, data, now); err != nil {
		return nil, err
	}

	// Publish in input order, then sync each touched folder once; objects/
	// too, in case shard folders were created in it.
	for k := range todo {
		if err := publish(&todo[k]); err != nil {
			return nil, err
		}
	}
	// The second flush point: one more syncfs commits the new entries of
	// every touched folder (or each folder is synced where syncfs is
	// unavailable).
	fp := s.newFlushPoint()
	for _, d := range dirs {
		fp.dir(d)
	}
	if err := fp.flush(); err != nil {
		return nil, fmt.Errorf("disk: put batch: %w", err)
	}
	return hs, nil
}

// batchItem is an object of a batch that must be written: its new file is
// either unnamed (f) or a named temporary file (tmp), until published.
type batchItem struct {
	i     int
	path  string
	check bool            // to be checked (stored, corrupt?) before writing
	skip  bool            // found stored when checked: nothing to write
	heal  bool            // corrupt bytes are stored there
	f     atomicfile.File // the unnamed file, until linked
	tmp   string          // the temporary file, until published
}

// discard closes (so frees) the item's unnamed file, or removes its
// temporary file.
func (it *batchItem) discard(fsys atomicfile.FS) {
	if it.f != nil {
		it.f.Close()
		it.f = nil
	}
	if it.tmp != "" {
		fsys.Remove(it.tmp)
		it.tmp = ""
	}
}

// writeItem writes the item's new file holding data with modification time
// now, not synced: an unnamed file in a folder tmp/new-* if unnamed is set and the
// filesystem has them, else a temporary file in tmp/.
func (s *Store) writeItem(it *batchItem, data []byte, now time.Time, unnamed bool) error {
	if unnamed && !it.heal && !s.noUnnamed.Load() {
		f, err := s.writeUnnamed(data, now)
		if err == nil {
			it.f = f
			return nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return fmt.Errorf("disk: put batch: %w", err)
		}
		s.noUnnamed.Store(true)
	}
	t, err := atomicfile.WriteTemp(s.fs, s.tmpDir, data, now, false)
	if err != nil {
		return fmt.Errorf("disk: put batch: %w", err)
	}
	it.tmp = t
	return nil
}

// writeUnnamed writes an unnamed file holding data in the folder of tmp/
// that costs least to create files in (newdir.go), timing the creation.
func (s *Store) writeUnnamed(data []byte, now time.Time) (atomicfile.File, error) {
	for range 8 {
		d, err := s.newDirs.pick()
		if err != nil {
			return nil, err
		}
		start := time.Now()
		f, err := atomicfile.WriteUnnamed(s.fs, d.path, data, now)
		if errors.Is(err, fs.ErrNotExist) {
			s.newDirs.gone(d) // removed meanwhile: make another
			continue
		}
		if err == nil {
			s.newDirs.done(d, time.Since(start))
		}
		return f, err
	}
	return nil, fmt.Errorf("the folders for new files in %s keep disappearing", s.tmpDir)
}

// publishItem publishes the item's durable new file holding data at its
// path (the address h), without syncing the folder, and consumes the file.
// The caller holds h's stripe.
func (s *Store) publishItem(h cas.Hash, it *batchItem, data []byte, now time.Time) error {
	defer it.discard(s.fs)
	if it.f != nil {
		if !s.noUnnamed.Load() {
			err := s.linkUnnamed(h, it, data, now)
			if !errors.Is(err, errors.ErrUnsupported) {
				return err
			}
			s.noUnnamed.Store(true)
		}
		// The filesystem would not link an unnamed file: write the object
		// again as a named temporary file (synced on its own, as the
		// batch's flush point is past).
		var err error
		it.f.Close()
		it.f = nil
		if it.tmp, err = atomicfile.WriteTemp(s.fs, s.tmpDir, data, now, s.durable); err != nil {
			return err
		}
	}
	err := s.publishTemp(h, it.path, data, now, it.tmp, it.heal)
	it.tmp = ""
	return err
}

// linkUnnamed publishes the item's unnamed file at its path, never
// overwriting: a taken address is checked as by [Store.Put] (the same
// bytes are touched, corrupt bytes are replaced by renaming the file,
// linked under a temporary name, over them). The caller holds h's stripe
// and closes the file. The error wraps [errors.ErrUnsupported] if the
// file cannot be linked here.
func (s *Store) linkUnnamed(h cas.Hash, it *batchItem, data []byte, now time.Time) error {
	for range 8 {
		err := s.fs.Link(it.f, it.path)
		if errors.Is(err, fs.ErrNotExist) {
			// A new shard (a shard folder created here is synced into
			// objects/ with the batch's folders, not at once).
			if err := atomicfile.MkdirAll(s.fs, shardDir(it.path), false); err != nil {
				return err
			}
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		st, err := s.check(h, it.path, data, now)
		if err != nil || st == stored {
			return err
		}
		if st == corrupt {
			tmp, err := atomicfile.LinkTemp(s.fs, it.f, s.tmpDir)
			if err != nil {
				return err
			}
			if err := s.fs.Rename(tmp, it.path); err != nil {
				s.fs.Remove(tmp)
				return err
			}
			s.log.Warn("healed a corrupt object", "hash", h.String())
			return nil
		}
	}
	return fmt.Errorf("the object keeps appearing and disappearing at %s", it.path)
}

// publishTemp publishes the durable temporary file tmp holding data at path
// (the address h), without syncing the folder; it consumes tmp. heal says
// the bytes at path were found corrupt. The caller holds h's stripe.
func (s *Store) publishTemp(h cas.Hash, path string, data []byte, now time.Time, tmp string, heal bool) error {
	for range 8 {
		if heal {
			if err := s.fs.Rename(tmp, path); err != nil {
				s.fs.Remove(tmp)
				return err
			}
			s.log.Warn("healed a corrupt object", "hash", h.String())
			return nil
		}
		// A shard folder created here is synced into objects/ with the
		// batch's folders, not at once.
		err := atomicfile.PublishTemp(s.fs, tmp, path, false)
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				s.fs.Remove(tmp)
			}
			return err
		}
		st, err := s.check(h, path, data, now)
		if err != nil || st == stored {
			s.fs.Remove(tmp)
			return err
		}
		heal = st == corrupt
	}
	s.fs.Remove(tmp)
	return fmt.Errorf("the object keeps appearing and disappearing at %s", path)
}

// writeItems writes the new files of a durable batch (see writeItem) and
// makes them durable together: one syncfs(2) once all are written (an
// fsync of each where syncfs is unavailable), or, in pool mode, an fsync of
// each file by the goroutine that wrote it. Up to maxUnnamedOpen of them
// are unnamed files (none in pool mode). On error the caller discards the
// files.
//
// Only in pool mode are the files written from a pool of goroutines, to
// overlap their fsyncs. Otherwise nothing waits on the disk and concurrent
// creations in one folder only spin on its lock (15% of the kernel samples
// of a 20,000-object `uwf cas put --batch` on 2 loaded cores were in
// rwsem_spin_on_owner, when every file was created in tmp/) and hand
// goroutines between threads, which a loaded machine makes slow. So they
// are written one after the other, on the calling goroutine (most of a
// large strict batch is named files in tmp/; a batch without flushes,
// all unnamed files, which take no folder lock, is written by several:
// see writePublish).
func (s *Store) writeItems(ctx context.Context, todo []batchItem, data [][]byte, now time.Time) error {
	if s.opts.batchSync == batchSyncPool {
		return forEach(len(todo), func(k int) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			it := &todo[k]
			t, err := atomicfile.WriteTemp(s.fs, s.tmpDir, data[it.i], now, true)
			if err != nil {
				return fmt.Errorf("disk: put batch: %w", err)
			}
			it.tmp = t
			return nil
		})
	}
	fp := s.newFlushPoint()
	for k := range todo {
		if k%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		it := &todo[k]
		if err := s.writeItem(it, data[it.i], now, k < maxUnnamedOpen); err != nil {
			return err
		}
		if it.f != nil {
			fp.openFile(it.f)
		} else {
			fp.file(it.tmp)
		}
	}
	if err := fp.flush(); err != nil {
		return fmt.Errorf("disk: put batch: %w", err)
	}
	return nil
}

// Writing a batch without flushes ([Store.writePublish]).
const (
	// maxWriters bounds the goroutines that write a batch's files.
	maxWriters = 4
	// writeRun is how many files a writer takes at a time: one hand-over
	// to the publishing goroutine per run, not per file.
	writeRun = 16
	// maxRunsAhead bounds the runs written but not yet published (so the
	// unnamed files held open: 16 x 16).
	maxRunsAhead = 16
)

// writePublish writes the new files of a batch that has no flush point and
// publishes each, in input order, once written (publish). The creation of
// a file (the inode allocation) is most of a batch's time and waits on
// nothing but the CPU, so up to maxWriters goroutines (no more than
// GOMAXPROCS) write runs of writeRun files, each an unnamed file in a
// folder of its own that takes no folder lock, while the calling goroutine
// links them into their shards in order: on a machine with idle cores the
// batch takes less time, and on a busy one it gets its share of the CPU
// for each goroutine rather than for one. On error the caller discards the
// files written and not published; no writer is left running.
func (s *Store) writePublish(ctx context.Context, todo []batchItem, hs []cas.Hash, data [][]byte, now time.Time, publish func(*batchItem) error) error {
	runs := (len(todo) + writeRun - 1) / writeRun
	if s.writers(len(todo)) <= 1 {
		// One goroutine, or named temporary files, which all share
		// tmp/'s lock: write and publish each in turn.
		for k := range todo {
			if k%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			it := &todo[k]
			if err := s.checkWrite(it, hs[it.i], data[it.i], now); err != nil {
				return err
			}
			if !it.skip {
				if err := publish(it); err != nil {
					return err
				}
			}
		}
		return nil
	}
	ready := make([]chan error, runs)
	for r := range ready {
		ready[r] = make(chan error, 1)
	}
	var (
		next  atomic.Int64
		ahead = make(chan struct{}, maxRunsAhead) // a token per run in flight
		done  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for range s.writers(len(todo)) {
		wg.Go(func() {
			for {
				select {
				case ahead <- struct{}{}:
				case <-done:
					return
				}
				r := int(next.Add(1) - 1)
				if r >= runs {
					return
				}
				err := ctx.Err()
				for k := r * writeRun; err == nil && k < min(len(todo), (r+1)*writeRun); k++ {
					it := &todo[k]
					err = s.checkWrite(it, hs[it.i], data[it.i], now)
				}
				ready[r] <- err
				if err != nil {
					return
				}
			}
		})
	}
	var first error
	for r := 0; r < runs && first == nil; r++ {
		first = <-ready[r]
		<-ahead
		for k := r * writeRun; first == nil && k < min(len(todo), (r+1)*writeRun); k++ {
			if !todo[k].skip {
				first = publish(&todo[k])
			}
		}
	}
	close(done)
	wg.Wait()
	return first
}

// writers is how many goroutines write a batch of n new files without
// flushes: several only for unnamed files (named ones share tmp/'s lock)
// and more than one run of them, and no more than GOMAXPROCS.
func (s *Store) writers(n int) int {
	if s.durable || !s.unnamed() {
		return 1
	}
	return min(cmp.Or(s.opts.writers, maxWriters), runtime.GOMAXPROCS(0), (n+writeRun-1)/writeRun)
}

// checkWrite writes the item's new file (see writeItem), after checking
// what its address holds if it is still to be checked: stored bytes set
// skip (they are touched, nothing is written), corrupt ones heal.
func (s *Store) checkWrite(it *batchItem, h cas.Hash, data []byte, now time.Time) error {
	if it.check {
		it.check = false
		mu := s.stripe(h)
		mu.Lock()
		st, err := s.check(h, it.path, data, now)
		mu.Unlock()
		if err != nil {
			return &cas.ObjectError{Op: "put", Hash: h, Err: err}
		}
		if st == stored {
			it.skip = true
			return nil
		}
		it.heal = st == corrupt
	}
	return s.writeItem(it, data, now, true)
}

// unnamed reports whether a batch may write unnamed files here.
func (s *Store) unnamed() bool {
	return !s.noUnnamed.Load()
}

// forEach calls fn(k) for every k in [0, n) from up to poolSize goroutines
// and returns the first error; after an error no new call starts.
func forEach(n int, fn func(k int) error) error {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		failed   atomic.Bool
		wg       sync.WaitGroup
	)
	for range min(poolSize, n) {
		wg.Go(func() {
			for !failed.Load() {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				if err := fn(k); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
