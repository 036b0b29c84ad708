package cas

import (
	"github.com/uncaged/uwf/internal/rwlock"

	"bytes"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MemOptions configure a memory store; nil means defaults.
type MemOptions struct {
	// Now is the store's clock, used for object ages and ref-log times; nil
	// means [time.Now].
	Now func() time.Time
}

// MemStore is a [Store] and [BatchPutter] that keeps everything in memory:
// for tests and ephemeral runs. Its [MemStore.Refs] share its clock. Like a
// persistent store, it copies bytes in and out, re-hashes on every Get and
// refuses hash collisions. Every method of a MemStore and its refs fails
// with an error wrapping ctx's error if ctx is done when it is called. Its
// locks are held by goroutines, not processes. A MemStore is safe for
// concurrent use.
type MemStore struct {
	now  func() time.Time
	sum  func([]byte) Hash // the address function; tests replace it to force collisions
	refs *MemRefs

	mu   sync.Mutex // guards objs
	objs map[Hash]*memObject

	lock rwlock.RW   // the store-wide lock
	gc   atomic.Bool // the GC lock

	derived *memDerived // its Derived cache, unbounded
}

// memObject is one stored object. data is never modified in place: it is
// replaced whole, so a reader may use a slice it took under the mutex.
type memObject struct {
	data []byte
	time time.Time
}

var (
	_ Store              = (*MemStore)(nil)
	_ BatchPutter        = (*MemStore)(nil)
	_ Derived            = (*MemStore)(nil)
	_ DerivedBatchGetter = (*MemStore)(nil)
	_ Refs               = (*MemRefs)(nil)
)

// NewMemStore returns an empty memory store. A nil opts means defaults.
func NewMemStore(opts *MemOptions) *MemStore {
	now := time.Now
	if opts != nil && opts.Now != nil {
		now = opts.Now
	}
	s := &MemStore{now: now, sum: Sum, objs: make(map[Hash]*memObject), derived: newMemDerived(0)}
	s.refs = newMemRefs(now)
	return s
}

// Refs returns the store's refs, which share its clock. Every call returns
// the same *MemRefs.
func (s *MemStore) Refs() *MemRefs { return s.refs }

// Get returns a copy of the object at h. The error is an *[ObjectError]
// wrapping [ErrNotFound] if it is absent, or [ErrCorrupt] if its bytes no
// longer hash to h. It fails with ctx's error if ctx is done.
func (s *MemStore) Get(ctx context.Context, h Hash) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, &ObjectError{Op: "get", Hash: h, Err: err}
	}
	s.mu.Lock()
	o, ok := s.objs[h]
	var data []byte
	if ok {
		data = o.data
	}
	s.mu.Unlock()
	if !ok {
		return nil, &ObjectError{Op: "get", Hash: h, Err: ErrNotFound}
	}
	if s.sum(data) != h {
		return nil, &ObjectError{Op: "get", Hash: h, Err: ErrCorrupt}
	}
	return append([]byte{}, data...), nil
}

// Put stores a copy of data and returns its address. Re-storing present
// content refreshes its age. If different, intact bytes live at the address
// the error is an *[ObjectError] wrapping [ErrCollision] and nothing
// changes; corrupt bytes there are replaced.
func (s *MemStore) Put(ctx context.Context, data []byte) (Hash, error) {
	h := s.sum(data)
	if err := ctx.Err(); err != nil {
		return 0, &ObjectError{Op: "put", Hash: h, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putLocked(h, data); err != nil {
		return 0, err
	}
	return h, nil
}

// putLocked stores data at h; s.mu is held.
func (s *MemStore) putLocked(h Hash, data []byte) error {
	if o, ok := s.objs[h]; ok {
		if bytes.Equal(o.data, data) {
			o.time = s.now()
			return nil
		}
		if s.sum(o.data) == h {
			return &ObjectError{Op: "put", Hash: h, Err: ErrCollision}
		}
		// The stored bytes are corrupt: heal them.
	}
	s.objs[h] = &memObject{data: append([]byte{}, data...), time: s.now()}
	return nil
}

// PutBatch stores every element of data, as Put does, and returns their
// hashes in input order. If ctx is done nothing is stored; on a collision
// the objects before the colliding one are stored and the rest are not.
func (s *MemStore) PutBatch(ctx context.Context, data [][]byte) ([]Hash, error) {
	hs := make([]Hash, len(data))
	for i, d := range data {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("put batch: %w", err)
		}
		hs[i] = s.sum(d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range data {
		if err := s.putLocked(hs[i], d); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

// Has reports whether an object is stored at h, without verifying it.
func (s *MemStore) Has(ctx context.Context, h Hash) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, &ObjectError{Op: "has", Hash: h, Err: err}
	}
	s.mu.Lock()
	_, ok := s.objs[h]
	s.mu.Unlock()
	return ok, nil
}

// Touch refreshes the age of the object at h. The error is an
// *[ObjectError] wrapping [ErrNotFound] if it is absent.
func (s *MemStore) Touch(ctx context.Context, h Hash) error {
	if err := ctx.Err(); err != nil {
		return &ObjectError{Op: "touch", Hash: h, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[h]
	if !ok {
		return &ObjectError{Op: "touch", Hash: h, Err: ErrNotFound}
	}
	o.time = s.now()
	return nil
}

// All lists every object with its size and age. It iterates over a snapshot
// taken when the iteration starts, so the loop body may use the store. If
// ctx is done the listing yields ctx's error and stops.
func (s *MemStore) All(ctx context.Context) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(Object{}, fmt.Errorf("list objects: %w", err))
			return
		}
		s.mu.Lock()
		objs := make([]Object, 0, len(s.objs))
		for h, o := range s.objs {
			objs = append(objs, Object{Hash: h, Size: int64(len(o.data)), Time: o.time})
		}
		s.mu.Unlock()
		for _, o := range objs {
			if err := ctx.Err(); err != nil {
				yield(Object{}, fmt.Errorf("list objects: %w", err))
				return
			}
			if !yield(o, nil) {
				return
			}
		}
	}
}

// DeleteIfOlderBatch deletes every object of hs whose Time is before
// cutoff, under one hold of the store's mutex, and returns those it
// deleted in the order of hs.
func (s *MemStore) DeleteIfOlderBatch(ctx context.Context, hs []Hash, cutoff time.Time) ([]Hash, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("delete %d objects: %w", len(hs), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var deleted []Hash
	for _, h := range hs {
		if o, ok := s.objs[h]; ok && o.time.Before(cutoff) {
			delete(s.objs, h)
			deleted = append(deleted, h)
		}
	}
	return deleted, nil
}

// DeleteIfOlder deletes the object at h if its Time is before cutoff,
// atomically with respect to Touch and Put. It reports whether it deleted;
// an absent object is (false, nil).
func (s *MemStore) DeleteIfOlder(ctx context.Context, h Hash, cutoff time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, &ObjectError{Op: "delete", Hash: h, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[h]
	if !ok || !o.time.Before(cutoff) {
		return false, nil
	}
	delete(s.objs, h)
	return true, nil
}

// Lock takes the store-wide lock, shared or exclusive, waiting until it is
// granted or ctx is done (then the error wraps ctx's error and no lock is
// held). A waiting exclusive request goes before shared requests made after
// it, so a stream of shared holders cannot starve it. unlock is idempotent.
func (s *MemStore) Lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	unlock, err = s.lock.Lock(ctx, exclusive)
	if err != nil {
		return nil, fmt.Errorf("lock store: %w", err)
	}
	return unlock, nil
}

// LockGC takes the GC lock without waiting; if it is held the error wraps
// [ErrLocked]. unlock is idempotent.
func (s *MemStore) LockGC(ctx context.Context) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lock gc: %w", err)
	}
	if !s.gc.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("lock gc: %w", ErrLocked)
	}
	var once sync.Once
	return func() { once.Do(func() { s.gc.Store(false) }) }, nil
}

// Now returns the time by the store's clock.
func (s *MemStore) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return s.now(), nil
}

// Corrupt replaces the bytes stored at h without changing its address, for
// tests of corruption handling: Get then reports [ErrCorrupt] (unless data
// hashes to h), and a Put of the right bytes heals the object. The age is
// kept. It reports whether h was present.
func (s *MemStore) Corrupt(h Hash, data []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[h]
	if ok {
		o.data = append([]byte{}, data...)
	}
	return ok
}

// MemRefs is the [Refs] of a [MemStore], kept in memory and sharing the
// store's clock. A MemRefs is safe for concurrent use.
type MemRefs struct {
	now func() time.Time

	mu   sync.Mutex
	refs map[string]Hash
	logs map[string][]LogEntry
	// lower maps each live ref's lower-case name to its name; folders
	// counts the live refs below each lower-case folder ("a" and "a/b" for
	// "a/b/c"). Together they find name clashes without a scan.
	lower   map[string]string
	folders map[string]int
	version int // the format version; 0 means FormatV1

	journal memJournal // the changes, for [MemRefs.Watch]
}

var _ FormatVersioner = (*MemRefs)(nil)

// FormatVersion returns the store's format version: [FormatV1] for a new
// store.
func (r *MemRefs) FormatVersion(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.version, FormatV1), nil
}

// BumpFormat moves the format version from from to to, as
// [FormatVersioner] specifies, under the lock every ref change takes.
func (r *MemRefs) BumpFormat(ctx context.Context, from, to int, want map[string]Hash) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := max(r.version, FormatV1)
	switch cur {
	case to:
		return nil
	case from:
	default:
		return fmt.Errorf("%w: the store is at format version %d, not %d", ErrFormat, cur, from)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		var got Hash
		if live, ok := r.lower[strings.ToLower(name)]; ok {
			got = r.refs[live]
		}
		if got != want[name] {
			return &ConflictError{Name: name, Expected: want[name], Current: got}
		}
	}
	r.version = to
	return nil
}

func newMemRefs(now func() time.Time) *MemRefs {
	return &MemRefs{
		now:     now,
		refs:    make(map[string]Hash),
		logs:    make(map[string][]LogEntry),
		lower:   make(map[string]string),
		folders: make(map[string]int),
	}
}

// Now returns the time by the refs' clock, the store's.
func (r *MemRefs) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return r.now(), nil
}

// Get returns the hash ref name points at. The error wraps [ErrNotFound] if
// the ref does not exist and [ErrInvalidRefName] for a bad name.
func (r *MemRefs) Get(ctx context.Context, name string) (Hash, error) {
	if err := ValidateRefName(name); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("get ref %s: %w", name, err)
	}
	r.mu.Lock()
	h, ok := r.refs[name]
	r.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("ref %s: %w", name, ErrNotFound)
	}
	return h, nil
}

// List lists the refs whose names start with prefix ("" for all), sorted by
// name (byte order), from a snapshot taken when the iteration starts. If ctx
// is done it yields ctx's error and stops.
func (r *MemRefs) List(ctx context.Context, prefix string) iter.Seq2[Ref, error] {
	return func(yield func(Ref, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(Ref{}, fmt.Errorf("list refs: %w", err))
			return
		}
		r.mu.Lock()
		var refs []Ref
		for name, h := range r.refs {
			if strings.HasPrefix(name, prefix) {
				refs = append(refs, Ref{Name: name, Hash: h})
			}
		}
		r.mu.Unlock()
		slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.Name, b.Name) })
		for _, ref := range refs {
			if err := ctx.Err(); err != nil {
				yield(Ref{}, fmt.Errorf("list refs: %w", err))
				return
			}
			if !yield(ref, nil) {
				return
			}
		}
	}
}

// CompareAndSwap moves ref name from old to new and logs the change, as
// [Refs] specifies. A conflict is a *[ConflictError]; for a name clash its
// Clash is the first clashing ref in name order and Current is zero.
func (r *MemRefs) CompareAndSwap(ctx context.Context, name string, old, new Hash, message string) error {
	if err := ValidateRefName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, exists := r.refs[name]
	// A live ref is never zero, so cur == old also means "absent" for a zero
	// old and "present" for a non-zero one.
	if cur != old {
		return &ConflictError{Name: name, Expected: old, Current: cur}
	}
	if old == new {
		return nil
	}
	if !exists {
		if clash := r.clashLocked(name); clash != "" {
			return &ConflictError{Name: name, Expected: old, Clash: clash}
		}
	}
	switch {
	case new.IsZero():
		r.removeLocked(name)
	case !exists:
		r.addLocked(name, new)
	default:
		r.refs[name] = new
	}
	e := LogEntry{Old: old, New: new, Time: r.now().UnixMilli(), Message: message}
	r.logs[name] = append(r.logs[name], e)
	r.journal.append(name, e)
	return nil
}

// Replace sets ref name to new, or deletes it if new is zero, whatever it
// holds, and logs {old, new} with old its value, or, if it is absent, the
// New of its log's newest entry, as [Refs] specifies. A memory ref cannot
// be damaged; it can only be missing when a test dropped it.
func (r *MemRefs) Replace(ctx context.Context, name string, new Hash, message string) error {
	if err := ValidateRefName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replace ref %s: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, exists := r.refs[name]
	if !exists {
		if log := r.logs[name]; len(log) > 0 {
			old = log[len(log)-1].New
		}
	}
	switch {
	case exists && old == new, !exists && new.IsZero() && old.IsZero():
		return nil
	case !exists && !new.IsZero():
		if clash := r.clashLocked(name); clash != "" {
			return &ConflictError{Name: name, Clash: clash}
		}
		r.addLocked(name, new)
	case new.IsZero():
		if exists {
			r.removeLocked(name)
		}
	default:
		r.refs[name] = new
	}
	e := LogEntry{Old: old, New: new, Time: r.now().UnixMilli(), Message: message}
	r.logs[name] = append(r.logs[name], e)
	r.journal.append(name, e)
	return nil
}

// clashLocked returns the first live ref, in name order, whose name clashes
// with name (which is not live), or "".
func (r *MemRefs) clashLocked(name string) string {
	lname := strings.ToLower(name)
	if other, ok := r.lower[lname]; ok {
		return other
	}
	for i := range len(lname) {
		if lname[i] == '/' {
			if other, ok := r.lower[lname[:i]]; ok {
				return other
			}
		}
	}
	if r.folders[lname] > 0 {
		clash := ""
		for other := range r.refs {
			if RefsClash(name, other) && (clash == "" || other < clash) {
				clash = other
			}
		}
		return clash
	}
	return ""
}

func (r *MemRefs) addLocked(name string, h Hash) {
	r.refs[name] = h
	lname := strings.ToLower(name)
	r.lower[lname] = name
	for i := range len(lname) {
		if lname[i] == '/' {
			r.folders[lname[:i]]++
		}
	}
}

func (r *MemRefs) removeLocked(name string) {
	delete(r.refs, name)
	lname := strings.ToLower(name)
	delete(r.lower, lname)
	for i := range len(lname) {
		if lname[i] == '/' {
			if r.folders[lname[:i]]--; r.folders[lname[:i]] == 0 {
				delete(r.folders, lname[:i])
			}
		}
	}
}

// Log returns a copy of ref name's log, oldest first. The error wraps
// [ErrNotFound] if there is no log for name and [ErrInvalidRefName] for a
// bad name.
func (r *MemRefs) Log(ctx context.Context, name string) ([]LogEntry, error) {
	if err := ValidateRefName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read ref log %s: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	log, ok := r.logs[name]
	if !ok {
		return nil, fmt.Errorf("ref log %s: %w", name, ErrNotFound)
	}
	return slices.Clone(log), nil
}

// Logs lists the names of every ref that has a log, live or deleted, sorted
// by name, from a snapshot taken when the iteration starts. If ctx is done
// it yields ctx's error and stops.
func (r *MemRefs) Logs(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := ctx.Err(); err != nil {
			yield("", fmt.Errorf("list ref logs: %w", err))
			return
		}
		r.mu.Lock()
		names := make([]string, 0, len(r.logs))
		for name := range r.logs {
			names = append(names, name)
		}
		r.mu.Unlock()
		slices.Sort(names)
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				yield("", fmt.Errorf("list ref logs: %w", err))
				return
			}
			if !yield(name, nil) {
				return
			}
		}
	}
}

// PruneLog drops log entries older than their ref's cutoff ([LogCutoff]
// of before and prefixes; an entry's millisecond time is before it),
// except, for a live ref, its newest entry and the entry that created its
// current incarnation (the last one with a zero Old). A deleted ref's log
// goes whole once its newest entry is older than the cutoff; a missing
// ref's log (see [Refs.PruneLog]) is kept whole. It returns how many
// entries it removed.
func (r *MemRefs) PruneLog(ctx context.Context, before time.Time, prefixes ...PrefixCutoff) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("prune ref logs: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	removed := 0
	for name, log := range r.logs {
		cutoff := LogCutoff(name, before, prefixes)
		older := func(e LogEntry) bool { return time.UnixMilli(e.Time).Before(cutoff) }
		newest := len(log) - 1
		_, live := r.refs[name]
		if !live && !log[newest].New.IsZero() {
			continue // a missing ref: kept until restored or removed by force
		}
		if !live && older(log[newest]) {
			removed += len(log)
			delete(r.logs, name)
			continue
		}
		creation := -1
		if live {
			for i := newest; i >= 0; i-- {
				if log[i].Old.IsZero() {
					creation = i
					break
				}
			}
		}
		var kept []LogEntry
		for i, e := range log {
			if !older(e) || live && (i == newest || i == creation) {
				kept = append(kept, e)
			}
		}
		if len(kept) < len(log) {
			removed += len(log) - len(kept)
			r.logs[name] = kept
		}
	}
	return removed, nil
}

// ImportLog merges entries into ref name's log with [MergeLog], as [Refs]
// specifies, and creates an absent ref at the merged log's newest New if
// that is non-zero. If creating the ref would clash with a live ref the
// error is a *[ConflictError] naming it, and nothing changes. An empty
// import changes nothing.
func (r *MemRefs) ImportLog(ctx context.Context, name string, entries []LogEntry) error {
	if err := ValidateRefName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("import ref log %s: %w", name, err)
	}
	if len(entries) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, live := r.refs[name]
	log := MergeLog(r.logs[name], entries, func(e LogEntry) LogEntry { return e }, cur)
	if newest := log[len(log)-1].New; !live && !newest.IsZero() {
		if clash := r.clashLocked(name); clash != "" {
			return &ConflictError{Name: name, Clash: clash}
		}
		r.addLocked(name, newest)
		r.journal.append(name, log[len(log)-1])
	}
	r.logs[name] = log
	return nil
}

// GetDerived returns the [Derived] entry at key.
func (s *MemStore) GetDerived(ctx context.Context, key string) ([]byte, bool, error) {
	return s.derived.GetDerived(ctx, key)
}

// PutDerived sets the [Derived] entry at key.
func (s *MemStore) PutDerived(ctx context.Context, key string, data []byte) error {
	return s.derived.PutDerived(ctx, key, data)
}

// DropDerived removes the [Derived] entries at keys.
func (s *MemStore) DropDerived(ctx context.Context, keys ...string) error {
	return s.derived.DropDerived(ctx, keys...)
}

// DerivedKeys lists the keys of the [Derived] entries, sorted (a snapshot
// taken when the listing starts).
func (s *MemStore) DerivedKeys(ctx context.Context) iter.Seq2[string, error] {
	return s.derived.DerivedKeys(ctx)
}

// GetDerivedBatch returns the [Derived] entries at keys
// ([DerivedBatchGetter]).
func (s *MemStore) GetDerivedBatch(ctx context.Context, keys []string) ([][]byte, []bool, error) {
	return s.derived.GetDerivedBatch(ctx, keys)
}
