package registry_test

// TEST HELPER, temporary: a minimal in-memory cas.Store and cas.Refs, until
// cas.NewMemStore lands. When merging, replace openMemRepo's body with
//
//	st := cas.NewMemStore(nil)
//	return cas.Open(context.Background(), st, st.Refs(), nil)
//
// and delete this file's types.

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// newRepo returns a Repo over a fresh in-memory store.
func newRepo(t testing.TB) *cas.Repo {
	t.Helper()
	repo, err := openMemRepo()
	if err != nil {
		t.Fatalf("cas.Open: %v", err)
	}
	return repo
}

// openMemRepo opens a Repo over a fresh in-memory store.
func openMemRepo() (*cas.Repo, error) {
	st := &memStore{objs: map[cas.Hash]memObj{}}
	refs := &memRefs{refs: map[string]cas.Hash{}, logs: map[string][]cas.LogEntry{}}
	return cas.Open(context.Background(), st, refs, nil)
}

type memObj struct {
	data []byte
	at   time.Time
}

// memStore is the object store.
type memStore struct {
	mu   sync.Mutex
	objs map[cas.Hash]memObj

	lock sync.RWMutex
	gc   sync.Mutex
}

// memRefs is the refs and their logs.
type memRefs struct {
	mu   sync.Mutex
	refs map[string]cas.Hash
	logs map[string][]cas.LogEntry
}

var (
	_ cas.Store = (*memStore)(nil)
	_ cas.Refs  = (*memRefs)(nil)
)

func (s *memStore) Get(ctx context.Context, h cas.Hash) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[h]
	if !ok {
		return nil, &cas.ObjectError{Op: "get", Hash: h, Err: cas.ErrNotFound}
	}
	return bytes.Clone(o.data), nil
}

func (s *memStore) Put(ctx context.Context, data []byte) (cas.Hash, error) {
	h := cas.Sum(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.objs[h]; ok && !bytes.Equal(o.data, data) {
		return 0, &cas.ObjectError{Op: "put", Hash: h, Err: cas.ErrCollision}
	}
	s.objs[h] = memObj{data: bytes.Clone(data), at: time.Now()}
	return h, nil
}

func (s *memStore) Has(ctx context.Context, h cas.Hash) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objs[h]
	return ok, nil
}

func (s *memStore) Touch(ctx context.Context, h cas.Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[h]
	if !ok {
		return &cas.ObjectError{Op: "touch", Hash: h, Err: cas.ErrNotFound}
	}
	o.at = time.Now()
	s.objs[h] = o
	return nil
}

func (s *memStore) All(ctx context.Context) iter.Seq2[cas.Object, error] {
	s.mu.Lock()
	objs := make([]cas.Object, 0, len(s.objs))
	for h, o := range s.objs {
		objs = append(objs, cas.Object{Hash: h, Size: int64(len(o.data)), Time: o.at})
	}
	s.mu.Unlock()
	return func(yield func(cas.Object, error) bool) {
		for _, o := range objs {
			if !yield(o, nil) {
				return
			}
		}
	}
}

func (s *memStore) DeleteIfOlder(ctx context.Context, h cas.Hash, cutoff time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[h]
	if !ok || !o.at.Before(cutoff) {
		return false, nil
	}
	delete(s.objs, h)
	return true, nil
}

func (s *memStore) Lock(ctx context.Context, exclusive bool) (func(), error) {
	if exclusive {
		s.lock.Lock()
		var once sync.Once
		return func() { once.Do(s.lock.Unlock) }, nil
	}
	s.lock.RLock()
	var once sync.Once
	return func() { once.Do(s.lock.RUnlock) }, nil
}

func (s *memStore) LockGC(ctx context.Context) (func(), error) {
	if !s.gc.TryLock() {
		return nil, cas.ErrLocked
	}
	var once sync.Once
	return func() { once.Do(s.gc.Unlock) }, nil
}

func (s *memStore) Now(ctx context.Context) (time.Time, error) { return time.Now(), nil }

// Refs.

func (s *memRefs) Get(ctx context.Context, name string) (cas.Hash, error) {
	if err := cas.ValidateRefName(name); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.refs[name]
	if !ok {
		return 0, fmt.Errorf("ref %s: %w", name, cas.ErrNotFound)
	}
	return h, nil
}

func (s *memRefs) List(ctx context.Context, prefix string) iter.Seq2[cas.Ref, error] {
	s.mu.Lock()
	var refs []cas.Ref
	for n, h := range s.refs {
		if strings.HasPrefix(n, prefix) {
			refs = append(refs, cas.Ref{Name: n, Hash: h})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(refs, func(a, b cas.Ref) int { return strings.Compare(a.Name, b.Name) })
	return func(yield func(cas.Ref, error) bool) {
		for _, r := range refs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func (s *memRefs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, message string) error {
	if err := cas.ValidateRefName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.refs[name]
	if cur != old {
		return &cas.ConflictError{Name: name, Expected: old, Current: cur}
	}
	if old.IsZero() {
		for other := range s.refs {
			if cas.RefsClash(name, other) {
				return &cas.ConflictError{Name: name, Expected: old, Clash: other}
			}
		}
	}
	if old == new {
		return nil
	}
	if new.IsZero() {
		delete(s.refs, name)
	} else {
		s.refs[name] = new
	}
	s.logs[name] = append(s.logs[name], cas.LogEntry{Old: old, New: new, Time: time.Now().UnixMilli(), Message: message})
	return nil
}

func (s *memRefs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[name]
	if !ok {
		return nil, fmt.Errorf("log %s: %w", name, cas.ErrNotFound)
	}
	return slices.Clone(l), nil
}

func (s *memRefs) Logs(ctx context.Context) iter.Seq2[string, error] {
	s.mu.Lock()
	var names []string
	for n := range s.logs {
		names = append(names, n)
	}
	s.mu.Unlock()
	slices.Sort(names)
	return func(yield func(string, error) bool) {
		for _, n := range names {
			if !yield(n, nil) {
				return
			}
		}
	}
}

func (s *memRefs) PruneLog(ctx context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cut := before.UnixMilli()
	n := 0
	for name, l := range s.logs {
		_, live := s.refs[name]
		if !live {
			if l[len(l)-1].Time < cut {
				n += len(l)
				delete(s.logs, name)
			}
			continue
		}
		var kept []cas.LogEntry
		for i, e := range l {
			if e.Time >= cut || i == len(l)-1 || (i == 0 && e.Old.IsZero()) {
				kept = append(kept, e)
			} else {
				n++
			}
		}
		s.logs[name] = kept
	}
	return n, nil
}

func (s *memRefs) ImportLog(ctx context.Context, name string, entries []cas.LogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		if !slices.Contains(s.logs[name], e) {
			s.logs[name] = append(s.logs[name], e)
		}
	}
	slices.SortStableFunc(s.logs[name], func(a, b cas.LogEntry) int { return int(a.Time - b.Time) })
	if l := s.logs[name]; len(l) > 0 {
		if _, ok := s.refs[name]; !ok && !l[len(l)-1].New.IsZero() {
			s.refs[name] = l[len(l)-1].New
		}
	}
	return nil
}
