package disk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// poolSize bounds the goroutines that fsync a batch's files and folders
// concurrently where syncfs is not used.
const poolSize = 16

// PutBatch stores every element of data and returns their hashes in input
// order, with one flush point for the whole batch: objects already stored
// are verified and touched; the others are written to temporary files, made
// durable together (one syncfs(2) on the store's filesystem, or concurrent
// fsyncs where syncfs is unavailable), published in input order (so
// children put before their parents are published first), then the
// touched folders are made durable together (a second syncfs, or an fsync
// of each touched folder): two flushes for the whole batch. Hashes are returned only once everything is
// durable. Taken addresses are handled as by [Store.Put] (verify and touch,
// heal, or an error wrapping [cas.ErrCollision]). On error some objects may
// have been stored, each one whole; an error about one object is a
// *[cas.ObjectError] naming it. Inputs with equal hashes are stored once
// (different bytes with one hash are a collision).
func (s *Store) PutBatch(ctx context.Context, data [][]byte) ([]cas.Hash, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	now := s.now()
	hs := make([]cas.Hash, len(data))
	first := make(map[cas.Hash]int, len(data))
	type item struct {
		i    int
		path string
		heal bool   // corrupt bytes are stored there
		tmp  string // the temporary file, until published
	}
	var todo []item
	defer func() {
		for _, it := range todo {
			if it.tmp != "" {
				s.fs.Remove(it.tmp)
			}
		}
	}()

	// Verify what is already stored; note what must be written.
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
		mu := s.stripe(h)
		mu.Lock()
		st, err := s.check(h, path, d, now)
		mu.Unlock()
		if err != nil {
			return nil, &cas.ObjectError{Op: "put", Hash: h, Err: err}
		}
		if st != stored {
			todo = append(todo, item{i: i, path: path, heal: st == corrupt})
		}
	}
	if len(todo) == 0 {
		return hs, nil
	}

	// Write the temporary files and make them durable together.
	tmps := make([]string, len(todo))
	itemData := func(k int) []byte { return data[todo[k].i] }
	if err := s.writeTemps(ctx, len(todo), itemData, now, tmps); err != nil {
		for _, t := range tmps {
			if t != "" {
				s.fs.Remove(t)
			}
		}
		return nil, err
	}
	for k := range todo {
		todo[k].tmp = tmps[k]
	}

	// Publish in input order, then sync each touched folder once; objects/
	// too, in case shard folders were created in it.
	dirs := []string{s.objDir}
	seen := make(map[string]bool)
	for k := range todo {
		it := &todo[k]
		h := hs[it.i]
		mu := s.stripe(h)
		mu.Lock()
		err := s.publishTemp(h, it.path, data[it.i], now, it.tmp, it.heal)
		mu.Unlock()
		it.tmp = ""
		if err != nil {
			return nil, &cas.ObjectError{Op: "put", Hash: h, Err: err}
		}
		if d := shardDir(it.path); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
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

// writeTemps writes n temporary files, the k-th holding data(k) with
// modification time now, into tmps[k], and makes them durable together if
// the store is durable: one syncfs(2) once all are written (an fsync of each
// where syncfs is unavailable), or, in pool mode, an fsync of each file by
// the goroutine that wrote it. On error the caller removes the files named
// in tmps.
//
// Only in pool mode are the files written from a pool of goroutines, to
// overlap their fsyncs. Otherwise nothing waits on the disk and every file
// is created in the one folder tmp/, whose lock serialises creations:
// concurrent writers only spin on that lock (15% of the kernel samples of
// a 20,000-object `uwf cas put --batch` on 2 loaded cores were in
// rwsem_spin_on_owner) and hand goroutines between threads, which a loaded
// machine makes slow. So they are written one after the other, on the
// calling goroutine.
func (s *Store) writeTemps(ctx context.Context, n int, data func(int) []byte, now time.Time, tmps []string) error {
	perFile := s.durable && s.opts.batchSync == batchSyncPool
	write := func(k int, sync bool) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := atomicfile.WriteTemp(s.fs, s.tmpDir, data(k), now, sync)
		if err != nil {
			return fmt.Errorf("disk: put batch: %w", err)
		}
		tmps[k] = t
		return nil
	}
	if perFile {
		if err := forEach(n, func(k int) error { return write(k, true) }); err != nil {
			return err
		}
		return nil
	}
	for k := range n {
		if err := write(k, false); err != nil {
			return err
		}
	}
	if !s.durable {
		return nil
	}
	fp := s.newFlushPoint()
	for _, t := range tmps {
		fp.file(t)
	}
	if err := fp.flush(); err != nil {
		return fmt.Errorf("disk: put batch: %w", err)
	}
	return nil
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
