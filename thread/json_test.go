package thread_test

import (
	"errors"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// TestPage pages a thread's chain from the head back: each page the
// newest entries older than before, more and oldest telling where the next
// starts; a before off the chain is refused.
func TestPage(t *testing.T) {
	te := newTEnv(t)
	id, hs := te.chain(7)
	_, ohs := te.chain(3)
	cases := []struct {
		name      string
		before    cas.Hash
		limit     int
		depths    []int
		more      bool
		wantError error
	}{
		{"from the head", 0, 3, []int{7, 6, 5}, true, nil},
		{"the next page", hs[5], 3, []int{4, 3, 2}, true, nil},
		{"the last page, with the start", hs[2], 3, []int{1, 0}, false, nil},
		{"exactly to the start", hs[3], 3, []int{2, 1, 0}, false, nil},
		{"before the start", hs[0], 3, nil, false, nil},
		{"all", 0, 100, []int{7, 6, 5, 4, 3, 2, 1, 0}, false, nil},
		{"another thread's node", ohs[2], 3, nil, false, cas.ErrInvalid},
		{"another thread's start", ohs[0], 3, nil, false, cas.ErrInvalid},
		{"an absent node", cas.Hash(12345), 3, nil, false, cas.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := te.e.Page(te.ctx, id, c.before, c.limit)
			if c.wantError != nil {
				if !errors.Is(err, c.wantError) {
					t.Fatalf("error %v, want %v", err, c.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var depths []int
			for _, s := range p.Steps {
				depths = append(depths, s.Depth)
				if s.Hash != hs[s.Depth] {
					t.Errorf("depth %d: %s, want %s", s.Depth, s.Hash, hs[s.Depth])
				}
			}
			if !equalInts(depths, c.depths) || p.More != c.more {
				t.Errorf("depths %v more %v, want %v %v", depths, p.More, c.depths, c.more)
			}
			if len(depths) > 0 && cas.Hash(p.Oldest) != hs[depths[len(depths)-1]] {
				t.Errorf("oldest %s, want the last entry", cas.Hash(p.Oldest))
			}
		})
	}
	if _, err := te.e.Page(te.ctx, "01JGJFGS3P0000000000000000", 0, 3); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("an absent thread: %v", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestListFilters: List keeps one workflow's threads (by name or hash),
// pages with Before, and Info.Updated is the head's time.
func TestListFilters(t *testing.T) {
	te := newTEnv(t)
	a, _ := te.chain(2)
	b := te.start()
	other := te.put(cas.WorkflowSchema, map[string]any{"name": "other", "roles": map[string]any{}, "graph": map[string]any{}})
	c, _, err := te.e.Start(te.ctx, other, "p", "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	ids := func(opts thread.ListOptions) []string {
		infos, err := te.e.List(te.ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, in := range infos {
			out = append(out, in.ID)
		}
		return out
	}
	for _, k := range []struct {
		name string
		opts thread.ListOptions
		want []string
	}{
		{"all", thread.ListOptions{}, []string{c, b, a}},
		{"by name", thread.ListOptions{Workflow: "test"}, []string{b, a}},
		{"by hash", thread.ListOptions{Workflow: other.String()}, []string{c}},
		{"before", thread.ListOptions{Before: c}, []string{b, a}},
		{"before, limited", thread.ListOptions{Before: c, Limit: 1}, []string{b}},
		{"before and a workflow", thread.ListOptions{Before: b, Workflow: "test"}, []string{a}},
		{"before the oldest", thread.ListOptions{Before: a}, nil},
		{"since b", thread.ListOptions{Since: ulid.Time(ulid.MustParse(b).Time())}, []string{c, b}},
		{"since b, by name", thread.ListOptions{Since: ulid.Time(ulid.MustParse(b).Time()), Workflow: "test"}, []string{b}},
		{"since after c", thread.ListOptions{Since: ulid.Time(ulid.MustParse(c).Time()).Add(time.Millisecond)}, nil},
		{"since long ago", thread.ListOptions{Since: time.Unix(0, 0)}, []string{c, b, a}},
	} {
		if got := ids(k.opts); !equalStrings(got, k.want) {
			t.Errorf("%s: %v, want %v", k.name, got, k.want)
		}
	}
	info, err := te.e.Show(te.ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	hn, _ := te.e.Node(te.ctx, info.Head)
	if info.Updated.UnixMilli() != hn.Step.CompletedAt {
		t.Errorf("Updated %v, want the head step's completion %d (created %v)", info.Updated, hn.Step.CompletedAt, info.Created)
	}
	if info, _ := te.e.Show(te.ctx, b); !info.Updated.Equal(info.Created) {
		t.Errorf("a thread at its start: Updated %v, want Created %v", info.Updated, info.Created)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
