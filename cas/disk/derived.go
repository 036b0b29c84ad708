package disk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"syscall"

	"github.com/uncaged/uwf/cas"
)

var _ cas.Derived = (*Store)(nil)

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

// DropDerived removes the [cas.Derived] entries at keys, those there are.
// It checks every key before removing any.
func (s *Store) DropDerived(ctx context.Context, keys ...string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	for _, key := range keys {
		if err := cas.ValidateDerivedKey(key); err != nil {
			return err
		}
	}
	for _, key := range keys {
		if err := os.Remove(s.derivedPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("disk: drop derived-cache entry %s: %w", key, err)
		}
	}
	return nil
}

// DerivedKeys lists the keys of the [cas.Derived] entries, a folder
// cache/XY at a time, in the order of their files' names. A file that
// names no key, or a key whose place is another file (torn by a power
// loss, or moved by hand), is no entry and is not listed: deleting cache/
// drops it. A store without cache/ lists nothing.
func (s *Store) DerivedKeys(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := s.ready(ctx); err != nil {
			yield("", err)
			return
		}
		root := filepath.Join(s.dir, cacheDir)
		shards, err := os.ReadDir(root)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			yield("", fmt.Errorf("disk: list the derived cache: %w", err))
			return
		}
		for _, sh := range shards {
			if !sh.IsDir() || len(sh.Name()) != 2 {
				continue
			}
			files, err := os.ReadDir(filepath.Join(root, sh.Name()))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				yield("", fmt.Errorf("disk: list the derived cache: %w", err))
				return
			}
			for _, f := range files {
				if err := ctx.Err(); err != nil {
					yield("", err)
					return
				}
				path := filepath.Join(root, sh.Name(), f.Name())
				data, err := readFile(path)
				if errors.Is(err, fs.ErrNotExist) {
					continue // dropped meanwhile
				}
				if err != nil {
					yield("", fmt.Errorf("disk: list the derived cache: read %s: %w", path, err))
					return
				}
				k, _, ok := bytes.Cut(data, []byte{'\n'})
				key := string(k)
				if !ok || cas.ValidateDerivedKey(key) != nil || s.derivedPath(key) != path {
					continue
				}
				if !yield(key, nil) {
					return
				}
			}
		}
	}
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
