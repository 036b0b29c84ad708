package cas_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// countingGetter counts the reads of a memory store, one by one and in
// batches; batch says whether it offers [cas.BatchGetter].
type countingGetter struct {
	*cas.MemStore
	gets, batches atomic.Int64
}

func (s *countingGetter) Get(ctx context.Context, h cas.Hash) ([]byte, error) {
	s.gets.Add(1)
	return s.MemStore.Get(ctx, h)
}

type batchingGetter struct{ *countingGetter }

func (s batchingGetter) GetBatch(ctx context.Context, hs []cas.Hash) ([][]byte, []error, error) {
	s.batches.Add(1)
	data, errs := make([][]byte, len(hs)), make([]error, len(hs))
	for i, h := range hs {
		data[i], errs[i] = s.MemStore.Get(ctx, h)
	}
	return data, errs, nil
}

// TestReadMemo checks that through a read memo a node is read from the
// store once, that Prefetch reads many in one batch (none without a memo
// or without BatchGetter), and that a node a batch could not read still
// gives its error where it is read.
func TestReadMemo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch bool
	}{{"batch", true}, {"no batch", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cg := &countingGetter{MemStore: cas.NewMemStore(nil)}
			var st cas.Store = cg
			if tc.batch {
				st = batchingGetter{cg}
			}
			ctx := context.Background()
			repo, err := cas.Open(ctx, st, cg.Refs(), nil)
			if err != nil {
				t.Fatal(err)
			}
			str, err := repo.PutSchema(ctx, "str", map[string]any{"type": "string"})
			if err != nil {
				t.Fatal(err)
			}
			var hs []cas.Hash
			for _, v := range []string{"a", "b", "c"} {
				h, err := repo.Put(ctx, str, v)
				if err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			}
			absent := hs[0] + 1
			reads := func() int64 { return cg.gets.Load() + cg.batches.Load() }

			// Without a memo: every Get reads, Prefetch does nothing.
			r0 := reads()
			repo.Prefetch(ctx, hs)
			for range 2 {
				if _, err := repo.Get(ctx, hs[0]); err != nil {
					t.Fatal(err)
				}
			}
			if got := reads() - r0; got != 2 || repo.CanPrefetch(ctx) {
				t.Errorf("without a memo: %d reads for Prefetch and two Gets (want 2), CanPrefetch %v", got, repo.CanPrefetch(ctx))
			}

			mctx := cas.WithReadMemo(ctx)
			if cas.WithReadMemo(mctx) != mctx {
				t.Error("WithReadMemo of a context with a memo gave a new one")
			}
			if repo.CanPrefetch(mctx) != tc.batch {
				t.Errorf("CanPrefetch = %v, want %v", repo.CanPrefetch(mctx), tc.batch)
			}
			r0 = reads()
			repo.Prefetch(mctx, append(hs, absent, 0))
			for range 2 {
				for i, h := range hs {
					n, err := repo.Get(mctx, h)
					if err != nil {
						t.Fatal(err)
					}
					if want := []string{"a", "b", "c"}[i]; n.Payload != want {
						t.Errorf("Get %s through the memo = %v, want %q", h, n.Payload, want)
					}
				}
			}
			want := int64(3) // one Get each
			if tc.batch {
				want = 1 // the batch
			}
			if got := reads() - r0; got != want {
				t.Errorf("with a memo: %d reads for Prefetch and two Gets of 3 nodes, want %d", got, want)
			}
			if _, err := repo.Get(mctx, absent); !errors.Is(err, cas.ErrNotFound) {
				t.Errorf("Get of an absent node after Prefetch: %v, want ErrNotFound", err)
			}
		})
	}
}
