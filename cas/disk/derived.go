package disk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/uncaged/uwf/cas"
)

var (
	_ cas.Derived            = (*Store)(nil)
	_ cas.DerivedBatchGetter = (*Store)(nil)
)

// derivedPath returns the file of a [cas.Derived] key:
// cache/<XY>/<rest>, the hex SHA-256 of the key split after two digits, so
// any key maps to a plain file name whatever the filesystem's case rules.
func (s *Store) derivedPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	x := hex.EncodeToString(sum[:])
	return filepath.Join(s.dir, cacheDir, x[:2], x[2:])
}

// GetDerived returns the [cas.Derived] entry at key: the file
// cache/<XY>/<rest> holds the key, a newline and the entry. A missing file,
// or one that names another key, is no entry.
func (s *Store) GetDerived(ctx context.Context, key string) ([]byte, bool, error) {
	if err := s.ready(ctx); err != nil {
		return nil, false, err
	}
	if err := cas.ValidateDerivedKey(key); err != nil {
		return nil, false, err
	}
	data, err := readFile(s.derivedPath(key))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("disk: read derived-cache entry %s: %w", key, err)
	}
	k, v, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || string(k) != key {
		return nil, false, nil
	}
	return v, true, nil
}

// GetDerivedBatch returns the [cas.Derived] entries at keys, a file each,
// as [cas.DerivedBatchGetter] specifies (a read is a system call here: no
// round trip to save, only the contract to keep).
func (s *Store) GetDerivedBatch(ctx context.Context, keys []string) ([][]byte, []bool, error) {
	for _, k := range keys {
		if err := cas.ValidateDerivedKey(k); err != nil {
			return nil, nil, err
		}
	}
	data, ok := make([][]byte, len(keys)), make([]bool, len(keys))
	for i, k := range keys {
		var err error
		if data[i], ok[i], err = s.GetDerived(ctx, k); err != nil {
			return nil, nil, err
		}
	}
	return data, ok, nil
}

// PutDerived sets the [cas.Derived] entry at key: a temporary file in tmp/
// renamed over cache/<XY>/<rest>. Nothing is synced: the cache is
// droppable, and a lost or torn entry is recomputed. Without the folder
// cache/ it keeps nothing: see makeCacheDir.
func (s *Store) PutDerived(ctx context.Context, key string, data []byte) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := cas.ValidateDerivedKey(key); err != nil {
		return err
	}
	path := s.derivedPath(key)
	f, err := os.CreateTemp(s.tmpDir, ".tmp-cache-*")
	if err != nil {
		return fmt.Errorf("disk: write derived-cache entry %s: %w", key, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(append([]byte(key), '\n'), data...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
		if errors.Is(err, fs.ErrNotExist) {
			// Its cache/<XY> folder, never cache/ itself: a store without
			// cache/ (made by an older build, and not yet written by this
			// one) keeps no entry, so that a reader, which fills the cache,
			// creates nothing there.
			err = os.Mkdir(filepath.Dir(path), 0o755)
			if errors.Is(err, fs.ErrNotExist) {
				os.Remove(tmp)
				return nil
			}
			if err == nil || errors.Is(err, fs.ErrExist) {
				err = os.Rename(tmp, path)
			}
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("disk: write derived-cache entry %s: %w", key, err)
	}
	return nil
}

// DropDerived removes the [cas.Derived] entry at key, if any.
func (s *Store) DropDerived(ctx context.Context, key string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := cas.ValidateDerivedKey(key); err != nil {
		return err
	}
	if err := os.Remove(s.derivedPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("disk: drop derived-cache entry %s: %w", key, err)
	}
	return nil
}

// makeCacheDir makes the folder cache/ (not synced: the cache is
// droppable) at the first ref change by this Store, if it is not there:
// a store made by a build older than the cache gets it at its first
// write, never at Open or by a read (SPEC §9). Create makes it with the
// store.
func (s *Store) makeCacheDir() {
	if s.cacheMade.Load() {
		return
	}
	err := s.fs.Mkdir(filepath.Join(s.dir, cacheDir), 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		s.cacheMade.Store(true)
	}
}
