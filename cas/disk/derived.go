package disk

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
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

// An entry whose key names a node, "<kind>/<HASH>" (HASH canonical), lives
// with the node where it can: in the extended attribute user.uwf.<kind> of
// the node's object file (Linux, a filesystem that keeps user attributes),
// so that storing it creates no file (a step's entry would otherwise cost
// a new file at every step, and on this project's ext4 a file creation is
// the dearest call a step makes: bench/README.md, section I), reading it is
// one call, and GC removes it with its node. The attribute holds the
// cache's generation (see cacheGen), a newline, the key, a newline and the
// entry: an attribute of another generation (cache/ was deleted since) or
// naming another key is no entry. Any other key, or one whose attribute
// cannot be set (no such object, no attribute support, a value too large),
// is a file.

// genAttr is the extended attribute of cache/ that holds its generation.
const genAttr = "user.uwf.gen"

// nodeKey returns the node a key names and its kind, if it is
// "<kind>/<HASH>".
func nodeKey(key string) (cas.Hash, string, bool) {
	kind, rest, _ := strings.Cut(key, "/")
	if len(rest) != cas.HashLen {
		return 0, "", false
	}
	h, err := cas.ParseCanonicalHash(rest)
	return h, kind, err == nil && !h.IsZero()
}

// cacheGen returns the generation of cache/: 16 random hex digits in its
// extended attribute, set by the first writer (create set) that finds
// none. "" if there is none (or no cache/, or no attribute support): then
// entries are files only. A new cache/ (after rm -rf) is a new
// generation, so deleting the folder drops the entries kept in attributes
// too.
func (s *Store) cacheGen(create bool) string {
	dir := filepath.Join(s.dir, cacheDir)
	g, err := atomicfile.GetAttr(dir, genAttr)
	if err == nil && len(g) == 16 {
		return string(g)
	}
	if !create || !errors.Is(err, atomicfile.ErrNoAttr) {
		return ""
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return ""
	}
	g = []byte(hex.EncodeToString(b[:]))
	switch err := atomicfile.SetAttr(dir, genAttr, g, true); {
	case err == nil:
		return string(g)
	case errors.Is(err, fs.ErrExist):
		return s.cacheGen(false) // another writer was first
	}
	return ""
}

// attrEntry returns the entry an attribute's value holds if it is of
// generation gen (not "") and names key: "<gen>\n<key>\n<entry>".
func attrEntry(data []byte, gen, key string) ([]byte, bool) {
	g, rest, _ := bytes.Cut(data, []byte{'\n'})
	k, v, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok || gen == "" || string(g) != gen || string(k) != key {
		return nil, false
	}
	return v, true
}

// GetDerived returns the [cas.Derived] entry at key: from its node's
// attribute (see nodeKey), else from the file cache/<XY>/<rest>, which
// holds the key, a newline and the entry. A missing file, or one that
// names another key, is no entry.
func (s *Store) GetDerived(ctx context.Context, key string) ([]byte, bool, error) {
	if err := s.ready(ctx); err != nil {
		return nil, false, err
	}
	if err := cas.ValidateDerivedKey(key); err != nil {
		return nil, false, err
	}
	if h, kind, ok := nodeKey(key); ok {
		if data, err := atomicfile.GetAttr(s.objPath(h), "user.uwf."+kind); err == nil {
			if v, ok := attrEntry(data, s.cacheGen(false), key); ok {
				return v, true, nil
			}
		}
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

// PutDerived sets the [cas.Derived] entry at key: in its node's attribute
// (see nodeKey) where it can, else a temporary file in tmp/ renamed over
// cache/<XY>/<rest>. Nothing is synced: the cache is droppable, and a lost
// or torn entry is recomputed. Without the folder cache/ it keeps nothing:
// see makeCacheDir.
func (s *Store) PutDerived(ctx context.Context, key string, data []byte) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := cas.ValidateDerivedKey(key); err != nil {
		return err
	}
	if h, kind, ok := nodeKey(key); ok && !s.noAttrs.Load() {
		if gen := s.cacheGen(true); gen != "" {
			v := make([]byte, 0, len(gen)+len(key)+len(data)+2)
			v = append(append(append(append(append(v, gen...), '\n'), key...), '\n'), data...)
			err := atomicfile.SetAttr(s.objPath(h), "user.uwf."+kind, v, false)
			if err == nil {
				return nil
			}
			if errors.Is(err, errors.ErrUnsupported) {
				s.noAttrs.Store(true)
			} else {
				// No such object, too large, not allowed: a file. An
				// entry an attribute holds would hide it (GetDerived
				// reads the attribute first): it goes.
				atomicfile.RemoveAttr(s.objPath(h), "user.uwf."+kind)
			}
		}
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

// DropDerived removes the [cas.Derived] entries at keys, those there are:
// for a key naming a node, its node's attribute and its file. It checks
// every key before removing any.
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
		if h, kind, ok := nodeKey(key); ok {
			err := atomicfile.RemoveAttr(s.objPath(h), "user.uwf."+kind)
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.ENOTDIR) {
				return fmt.Errorf("disk: drop derived-cache entry %s: %w", key, err)
			}
		}
		if err := os.Remove(s.derivedPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("disk: drop derived-cache entry %s: %w", key, err)
		}
	}
	return nil
}

// DerivedKeys lists the keys of the [cas.Derived] entries kept as files,
// a folder cache/XY at a time, in the order of their files' names. An
// entry kept in its node's attribute is not listed: it goes with its node,
// so it is never an orphan. A file that
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
