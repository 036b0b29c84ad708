package disk

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// FormatVersion is the format version of a new store, recorded in its
// FORMAT file. Open accepts every version from [cas.FormatV1] to
// [cas.LatestFormat] and refuses any other; a store moves to a newer one
// only through [Refs.BumpFormat].
const FormatVersion = cas.FormatV1

// formatText is the FORMAT file of a store at format version v.
func formatText(v int) []byte {
	return []byte("uwf store " + strconv.Itoa(v) + "\nbackend disk\nhash xxh64\n")
}

// parseFormat checks a FORMAT file and returns the store's format version;
// the error wraps [cas.ErrFormat].
func parseFormat(b []byte) (int, error) {
	v, err := parseFormatText(b)
	if err != nil {
		return 0, fmt.Errorf("%w: FORMAT: %w", cas.ErrFormat, err)
	}
	return v, nil
}

func parseFormatText(b []byte) (int, error) {
	bad := func(format string, args ...any) (int, error) {
		return 0, fmt.Errorf(format, args...)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() {
		return bad("empty")
	}
	first := sc.Text()
	v, ok := strings.CutPrefix(first, "uwf store ")
	if !ok {
		return bad("first line %q is not \"uwf store <version>\"", first)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < cas.FormatV1 || n > cas.LatestFormat || v != strconv.Itoa(n) {
		return bad("version %q, this build knows versions %d to %d: upgrade uwf", v, cas.FormatV1, cas.LatestFormat)
	}
	seen := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		want, known := map[string]string{"backend": "disk", "hash": "xxh64"}[key]
		switch {
		case !known:
			return bad("unknown setting %q", line)
		case val != want:
			return bad("%s %q, this build knows %q only", key, val, want)
		}
		seen[key] = true
	}
	for _, key := range []string{"backend", "hash"} {
		if !seen[key] {
			return bad("no %q line", key)
		}
	}
	return n, nil
}

// readFormat reads the store's FORMAT file and returns its version.
func (s *Store) readFormat() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, formatFile))
	if err != nil {
		return 0, fmt.Errorf("disk: read the format of %s: %w", s.dir, err)
	}
	v, err := parseFormat(b)
	if err != nil {
		return 0, fmt.Errorf("disk: store %s: %w", s.dir, err)
	}
	return v, nil
}

var _ cas.FormatVersioner = (*Refs)(nil)

// FormatVersion returns the format version in the store's FORMAT file. The
// error wraps [cas.ErrFormat] if the file names one this build does not
// know.
func (r *Refs) FormatVersion(ctx context.Context) (int, error) {
	if err := r.s.ready(ctx); err != nil {
		return 0, err
	}
	return r.s.readFormat()
}

// BumpFormat moves the store from format version from to version to, as
// [cas.FormatVersioner] specifies: under the global refs lock (the one
// that creating or deleting a ref takes) and the striped lock of each ref
// of want (the one every move takes; taken in lock-file order, each once),
// it checks each ref of want, then replaces the FORMAT file atomically
// (temporary file, sync, rename, folder sync). So no ref of want can be
// created, moved or deleted between the check and the new version.
func (r *Refs) BumpFormat(ctx context.Context, from, to int, want map[string]cas.Hash) error {
	if err := r.s.ready(ctx); err != nil {
		return err
	}
	unlock, err := lockWait(ctx, r.globalLock, lockEx)
	if err != nil {
		return fmt.Errorf("disk: lock refs: %w", err)
	}
	defer unlock()
	// Each wanted ref's striped lock too: a move from one value to another
	// takes only that. Lock-file order, each file once (two names may
	// share a stripe, and a second flock of it would wait on the first);
	// no other holder takes two stripes, so the order cannot deadlock.
	stripes := map[string]bool{}
	for name := range want {
		stripes[r.stripePath(strings.ToLower(name))] = true
	}
	for _, path := range slices.Sorted(maps.Keys(stripes)) {
		unlockRef, err := lockWait(ctx, path, lockEx)
		if err != nil {
			return fmt.Errorf("disk: lock refs: %w", err)
		}
		defer unlockRef()
	}
	cur, err := r.s.readFormat()
	if err != nil {
		return err
	}
	switch cur {
	case to:
		return nil
	case from:
	default:
		return fmt.Errorf("disk: store %s: %w: it is at format version %d, not %d", r.s.dir, cas.ErrFormat, cur, from)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		st, err := r.read(strings.ToLower(name))
		if err != nil {
			return err
		}
		if got := st.value(name); got != want[name] {
			return &cas.ConflictError{Name: name, Expected: want[name], Current: got}
		}
	}
	if r.s.opts.bumpHook != nil {
		r.s.opts.bumpHook()
	}
	path := filepath.Join(r.s.dir, formatFile)
	if err := atomicfile.Replace(r.s.fs, r.s.tmpDir, path, formatText(to), r.s.durable); err != nil {
		return fmt.Errorf("disk: store %s: write the format: %w", r.s.dir, err)
	}
	r.s.log.Info("moved the store's format", "from", from, "to", to)
	return nil
}
