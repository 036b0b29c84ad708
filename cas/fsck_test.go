package cas_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// lyingRefs reports a log whose newest entry disagrees with the ref.
type lyingRefs struct {
	cas.Refs
	name string
}

func (r *lyingRefs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	entries, err := r.Refs.Log(ctx, name)
	if err == nil && name == r.name && len(entries) > 0 {
		entries[len(entries)-1].New = cas.Sum([]byte("elsewhere"))
	}
	return entries, err
}

func TestFsckFindsDamage(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	refs := &lyingRefs{Refs: mem.Refs(), name: "liar"}
	repo, err := cas.Open(t.Context(), mem, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}
	note := f.schema("note", mustJSON(t, noteSchema))
	mk := func(title string) (cas.Hash, cas.Hash) {
		body := f.text(title + " body")
		n := f.put(note, map[string]any{"title": title, "body": body.String()})
		f.setRef("notes/"+title, n)
		return n, body
	}
	_, flipped := mk("flip")
	_, truncated := mk("trunc")
	_, swapA := mk("swapa")
	_, swapB := mk("swapb")
	_, missing := mk("miss")
	liar := f.text("liar")
	f.setRef("liar", liar)

	good := map[cas.Hash][]byte{}
	for _, h := range []cas.Hash{flipped, truncated, swapA, swapB} {
		good[h], _ = mem.Get(f.ctx, h)
	}
	flip := slices.Clone(good[flipped])
	flip[3] ^= 0x01
	mem.Corrupt(flipped, flip)
	mem.Corrupt(truncated, good[truncated][:len(good[truncated])-4])
	mem.Corrupt(swapA, good[swapB])
	mem.Corrupt(swapB, good[swapA])
	if ok, _ := mem.DeleteIfOlder(f.ctx, missing, c.Now().Add(time.Hour)); !ok {
		t.Fatal("could not delete")
	}
	nonCanon := []byte(`{"type":"` + cas.ContentSchema.String() + `","payload":"x"}`)
	nch, err := mem.Put(f.ctx, nonCanon)
	if err != nil {
		t.Fatal(err)
	}
	f.setRef("noncanon", nch)

	rep, err := repo.Fsck(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range rep.Problems {
		lines = append(lines, p.String())
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		flipped.String() + ": corrupt: ",
		"(reached from notes/flip)",
		truncated.String() + ": corrupt: ",
		"(reached from notes/trunc)",
		swapA.String() + ": corrupt: ",
		swapB.String() + ": corrupt: ",
		"missing-edge: edge payload/body -> " + missing.String() + " is not in the store (reached from notes/miss)",
		nch.String() + ": invalid: not in canonical form (RFC 8785) (reached from noncanon)",
		"ref liar -> " + liar.String() + ": log-mismatch: its log's newest entry says " + cas.Sum([]byte("elsewhere")).String(),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("fsck report lacks %q:\n%s", want, text)
		}
	}
	if rep.OK() || len(rep.Problems) != 7 {
		t.Errorf("%d problems, want 7:\n%s", len(rep.Problems), text)
	}

	// Putting the right bytes heals the damaged objects.
	for h, data := range good {
		if got, err := mem.Put(f.ctx, data); err != nil || got != h {
			t.Fatalf("heal %s: %v, %v", h, got, err)
		}
	}
	rep, err = repo.Fsck(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 3 { // missing, non-canonical, liar remain
		t.Errorf("after healing, %d problems, want 3: %v", len(rep.Problems), rep.Problems)
	}
}

func TestFsckMissingTargetAndExtraChecks(t *testing.T) {
	f := newFixture(t)
	h := f.text("t")
	f.setRef("t", h)
	if ok, _ := f.mem.DeleteIfOlder(f.ctx, h, f.clock.Now().Add(time.Hour)); !ok {
		t.Fatal("delete")
	}
	called := 0
	rep, err := f.repo.Fsck(f.ctx, &cas.FsckOptions{NodeChecks: []cas.NodeCheck{
		func(ctx context.Context, r *cas.Repo, h cas.Hash, n cas.Node) []cas.Problem {
			called++
			if n.Type == cas.ContentSchema {
				return []cas.Problem{{Kind: cas.ProblemChain, Msg: "content is suspicious"}}
			}
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if called == 0 {
		t.Error("the node check was never called")
	}
	var kinds []string
	for _, p := range rep.Problems {
		kinds = append(kinds, p.Kind+" "+p.String())
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != cas.ProblemMissingTarget || rep.Problems[0].Ref != "t" {
		t.Errorf("problems = %q, want one missing-target for ref t", kinds)
	}
}
