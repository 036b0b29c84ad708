package thread_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// formatVersion is the store's format version.
func (te *tenv) formatVersion() int {
	te.t.Helper()
	v, err := te.refs.(cas.FormatVersioner).FormatVersion(te.ctx)
	if err != nil {
		te.t.Fatal(err)
	}
	return v
}

// TestStartKeyed: a start under a key starts one thread and records it in
// keys/<key> (a thread-key node, the store moved to version 2); a second
// start finds it; rm frees the key; plain starts leave the store at version 1.
func TestStartKeyed(t *testing.T) {
	te := newTEnv(t)
	te.start()
	if v := te.formatVersion(); v != cas.FormatV1 {
		t.Fatalf("a store never given a key is at version %d, want 1", v)
	}
	id, head, existing, err := te.e.StartKeyed(te.ctx, "nightly/2026-11-25", te.wf, "report", "/tmp")
	if err != nil || existing != nil {
		t.Fatalf("StartKeyed = %s, %s, %+v, %v", id, head, existing, err)
	}
	if v := te.formatVersion(); v != cas.FormatV2 {
		t.Errorf("after a key, the store is at version %d, want 2", v)
	}
	if h := te.head(id); h != head {
		t.Errorf("thread %s at %s, want %s", id, h, head)
	}
	k, err := te.e.ReadKey(te.ctx, "nightly/2026-11-25")
	if err != nil || k.Thread != id || k.Start != head || k.Key != "nightly/2026-11-25" || k.At != te.clock.Now().UnixMilli() {
		t.Errorf("ReadKey = %+v, %v", k, err)
	}
	log, err := te.e.Log(te.ctx, id)
	if err != nil || len(log) != 1 || log[0].Message != "start key nightly/2026-11-25" {
		t.Errorf("thread log = %+v, %v", log, err)
	}

	// Taken: the same thread, nothing new.
	id2, head2, existing, err := te.e.StartKeyed(te.ctx, "nightly/2026-11-25", te.wf, "another prompt", "/")
	if err != nil || id2 != id || head2 != head || existing == nil || existing.Thread != id {
		t.Errorf("StartKeyed again = %s, %s, %+v, %v; want %s existing", id2, head2, existing, err, id)
	}
	if list, err := te.e.List(te.ctx, thread.ListOptions{}); err != nil || len(list) != 2 {
		t.Errorf("List = %d threads, %v; want 2", len(list), err)
	}

	// fsck knows keys/ refs.
	if rep, err := te.repo.Fsck(te.ctx, thread.FsckOptions()); err != nil || len(rep.Problems) != 0 {
		t.Errorf("fsck: %+v, %v", rep, err)
	}

	// rm drops the key; the next start under it starts anew.
	if err := te.e.Remove(te.ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.ReadKey(te.ctx, "nightly/2026-11-25"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("ReadKey after rm = %v, want not found", err)
	}
	id3, _, existing, err := te.e.StartKeyed(te.ctx, "nightly/2026-11-25", te.wf, "report", "/tmp")
	if err != nil || existing != nil || id3 == id {
		t.Errorf("StartKeyed after rm = %s, %+v, %v; want a new thread", id3, existing, err)
	}

	for _, bad := range []string{"", "/x", "a//b", "-a", "a b", string(make([]byte, 196))} {
		if _, _, _, err := te.e.StartKeyed(te.ctx, bad, te.wf, "p", "/"); !errors.Is(err, thread.ErrInvalidKey) || !errors.Is(err, cas.ErrInvalidRefName) {
			t.Errorf("StartKeyed(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

// TestStartKeyedRepairs: a key whose start stopped before making the
// thread's ref is finished by the next start; a key left by an rm that
// stopped before dropping it is free.
func TestStartKeyedRepairs(t *testing.T) {
	te := newTEnv(t)
	id, head, _, err := te.e.StartKeyed(te.ctx, "k", te.wf, "p", "/")
	if err != nil {
		t.Fatal(err)
	}
	// The thread's ref never made: delete it behind the engine's back.
	_, err = te.refs.Get(te.ctx, "keys/k")
	if err != nil {
		t.Fatal(err)
	}
	if err := te.refs.CompareAndSwap(te.ctx, "threads/"+id, head, 0, "test"); err != nil {
		t.Fatal(err)
	}
	// With a log, the thread was removed: the key is free.
	id2, _, existing, err := te.e.StartKeyed(te.ctx, "k", te.wf, "p", "/")
	if err != nil || existing != nil || id2 == id {
		t.Errorf("StartKeyed over a removed thread's key = %s, %+v, %v; want a new thread", id2, existing, err)
	}
	// Without a log (a start that stopped after taking the key), the
	// thread is made.
	const orphan = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
	k := map[string]any{"key": "half", "thread": orphan, "start": head.String(), "at": float64(1)}
	h := te.put(cas.ThreadKeySchema, k)
	if err := te.refs.CompareAndSwap(te.ctx, "keys/half", 0, h, "test"); err != nil {
		t.Fatal(err)
	}
	got, gotHead, existing, err := te.e.StartKeyed(te.ctx, "half", te.wf, "p", "/")
	if err != nil || got != orphan || gotHead != head || existing == nil {
		t.Errorf("StartKeyed over a half-made start = %s, %s, %+v, %v; want %s at %s", got, gotHead, existing, err, orphan, head)
	}
	if te.head(orphan) != head {
		t.Errorf("thread %s not made", orphan)
	}

}

// TestStartKeyedRace: many starts with one key, at once, start one thread.
func TestStartKeyedRace(t *testing.T) {
	te := newTEnv(t)
	const n = 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, _, _, err := te.e.StartKeyed(te.ctx, "once", te.wf, "p", "/")
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("starts with one key gave threads %v, want one", ids)
		}
	}
	if list, err := te.e.List(te.ctx, thread.ListOptions{}); err != nil || len(list) != 1 {
		t.Errorf("List = %d threads, %v; want 1", len(list), err)
	}
}
