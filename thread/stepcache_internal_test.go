package thread

import (
	"context"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// FuzzStepCacheEntries puts arbitrary bytes where the step cache keeps a
// thread's head entry, its predecessor's and the thread's origin: the
// counts and the origin read through the cache are always those computed
// without it, and nothing panics.
func FuzzStepCacheEntries(f *testing.F) {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		f.Fatal(err)
	}
	e := New(repo, nil)
	wf, err := repo.Put(ctx, cas.WorkflowSchema, map[string]any{"name": "fuzz", "roles": map[string]any{}, "graph": map[string]any{}})
	if err != nil {
		f.Fatal(err)
	}
	out, err := repo.Put(ctx, cas.ContentSchema, "out")
	if err != nil {
		f.Fatal(err)
	}
	dets, err := repo.PutNodes(ctx, []cas.Node{(&Detail{Prompt: out, Raw: out, Attempts: []cas.Hash{},
		Session: &Session{Tool: "codex", InputTokens: 7, OutputTokens: 3, CostUSD: 0.25}}).Node()})
	if err != nil {
		f.Fatal(err)
	}
	det := dets[0]
	id, head, err := e.Start(ctx, wf, "fuzz", "/tmp")
	if err != nil {
		f.Fatal(err)
	}
	for i, kind := range []string{"a", "b", MarkResumed, "a", "a", "b"} {
		hn, err := e.Node(ctx, head)
		if err != nil {
			f.Fatal(err)
		}
		c, err := e.next(ctx, hn)
		if err != nil {
			f.Fatal(err)
		}
		var h cas.Hash
		if kind == MarkResumed {
			h, err = repo.Put(ctx, cas.MarkSchema, (&Mark{Chain: c, Mark: kind, Reason: "go", At: int64(i)}).Payload())
		} else {
			h, err = repo.Put(ctx, cas.StepSchema, (&Step{Chain: c, Role: kind, Output: out, Detail: det, Agent: "x", StartedAt: int64(i)}).Payload())
		}
		if err != nil {
			f.Fatal(err)
		}
		if err := e.Commit(ctx, id, h, "step"); err != nil {
			f.Fatal(err)
		}
		head = h
	}
	// Forked at its head: the origin entry is then a fork's.
	fork, err := e.Fork(ctx, head, id)
	if err != nil {
		f.Fatal(err)
	}
	hn, err := e.Node(ctx, head)
	if err != nil {
		f.Fatal(err)
	}
	parent := linkOf(hn).from
	d := repo.Derived()
	get := func(key string) []byte {
		v, _, err := d.GetDerived(ctx, key)
		if err != nil {
			f.Fatal(err)
		}
		return v
	}
	wantEntry, err := New(repo, nil).entry(ctx, hn)
	if err != nil {
		f.Fatal(err)
	}
	wantOrigin, err := New(repo, nil).origin(ctx, fork, hn)
	if err != nil {
		f.Fatal(err)
	}
	if wantEntry.Steps != 5 || wantEntry.Roles["a"] != 3 || wantEntry.SinceResume != 3 || wantEntry.ResumeDepth != 3 || !wantOrigin.Forked ||
		wantEntry.Usage != (Usage{Sessions: 5, InputTokens: 35, OutputTokens: 15, CostNanoUSD: 1_250_000_000}) {
		f.Fatalf("reference entry %+v, origin %+v", wantEntry, wantOrigin)
	}
	headKey, parentKey, originKey := chainKey(head), chainKey(parent), cas.RefDerivedKey(refName(fork))
	f.Add(get(headKey), get(parentKey), get(originKey))
	f.Add([]byte("{"), get(parentKey), []byte("0\n{}"))
	f.Add(get(parentKey), get(headKey), get(originKey)[1:])
	f.Add([]byte(`{"v":1,"node":"`+head.String()+`","from":"`+parent.String()+`","depth":6,"steps":9,"roles":{"a":9},"resumeDepth":0,"sinceResume":9}`), []byte{}, []byte("\n"))
	f.Add([]byte(`{"v":3,"node":"`+head.String()+`","from":"`+parent.String()+`","depth":6,"steps":5,"roles":{"a":3,"b":2},"resumeDepth":3,"sinceResume":3,"usage":{"sessions":5}}`), get(parentKey), get(originKey))
	f.Fuzz(func(t *testing.T, headEntry, parentEntry, originEntry []byte) {
		for k, v := range map[string][]byte{headKey: headEntry, parentKey: parentEntry, originKey: originEntry} {
			if err := d.PutDerived(ctx, k, v); err != nil {
				t.Fatal(err)
			}
		}
		e := New(repo, nil)
		got, err := e.entry(ctx, hn)
		if err != nil || !got.equal(wantEntry) {
			t.Fatalf("entry through the cache = %+v, %v; want %+v", got, err, wantEntry)
		}
		o, err := e.origin(ctx, fork, hn)
		if err != nil || o != wantOrigin {
			t.Fatalf("origin through the cache = %+v, %v; want %+v", o, err, wantOrigin)
		}
	})
}
