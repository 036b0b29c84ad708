package cas_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// progressLog collects the reports of one operation.
type progressLog struct{ reports []cas.Progress }

func (l *progressLog) ctx(ctx context.Context) context.Context {
	return cas.WithProgress(ctx, func(p cas.Progress) { l.reports = append(l.reports, p) })
}

// phases checks the reports phase by phase (each begins with Done 0, not
// Final; Done never goes back; each ends with one Final report, whose Done
// is its Total where there is one) and returns "op/phase done/total" of
// each Final report.
func (l *progressLog) phases(t *testing.T) []string {
	t.Helper()
	var out []string
	var cur *cas.Progress
	for i, p := range l.reports {
		switch {
		case cur == nil:
			if p.Done != 0 || p.Final {
				t.Errorf("report %d %+v: a phase must begin with Done 0, not Final", i, p)
			}
		case p.Op != cur.Op || p.Phase != cur.Phase:
			t.Errorf("report %d %+v: a new phase before %s/%s ended", i, p, cur.Op, cur.Phase)
		case p.Done < cur.Done:
			t.Errorf("report %d %+v: Done went back from %d", i, p, cur.Done)
		}
		if p.Final {
			if p.Total > 0 && p.Done != p.Total {
				t.Errorf("report %d %+v: the Final report of a completed phase must have Done == Total", i, p)
			}
			out = append(out, fmt.Sprintf("%s/%s %d/%d", p.Op, p.Phase, p.Done, p.Total))
			cur = nil
			continue
		}
		cur = &l.reports[i]
	}
	if cur != nil {
		t.Errorf("phase %s/%s never ended", cur.Op, cur.Phase)
	}
	return out
}

// TestProgress: every long operation reports its phases through the
// context's ProgressFunc, with totals where they are known, each phase
// ending on a Final report; without one nothing is reported.
func TestProgress(t *testing.T) {
	f := newFixture(t)
	var hs []cas.Hash
	for i := range 40 {
		hs = append(hs, f.text(fmt.Sprintf("node %d", i)))
	}
	list := f.put(cas.ContentSchema, "list") // reaches nothing: a text
	f.setRef("keep", hs[0])
	f.setRef("list", list)
	f.clock.Advance(2 * time.Hour)         // past the grace: 39 texts are garbage
	b := len(cas.BuiltinsAt(cas.FormatV1)) // a fresh store holds version 1's
	// Two derived-cache entries: one of a node that goes, one of a node that stays.
	for _, h := range []cas.Hash{hs[0], hs[1]} {
		if err := f.repo.Derived().PutDerived(f.ctx, "chain/"+h.String(), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}

	var l progressLog
	st, err := f.repo.GC(l.ctx(f.ctx), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("gc/list %d/0", b+41),
		fmt.Sprintf("gc/mark %d/0", st.Reachable),
		"gc/order 39/39",
		"gc/sweep 39/39",
		"gc/cache 2/0",
	}
	if got := l.phases(t); !slices.Equal(got, want) {
		t.Errorf("GC phases %q, want %q", got, want)
	}
	if st.DerivedDropped != 1 {
		t.Errorf("GC dropped %d derived-cache entries, want 1 (the swept node's)", st.DerivedDropped)
	}

	l = progressLog{}
	rep, err := f.repo.Fsck(l.ctx(f.ctx), nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{fmt.Sprintf("fsck/list %d/0", rep.Objects), fmt.Sprintf("fsck/objects %d/%d", rep.Objects, rep.Objects), fmt.Sprintf("fsck/refs %d/0", rep.Refs)}
	if got := l.phases(t); !slices.Equal(got, want) {
		t.Errorf("Fsck phases %q, want %q", got, want)
	}

	l = progressLog{}
	if err := f.repo.Walk(l.ctx(f.ctx), []cas.Hash{hs[0]}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got, want := l.phases(t), []string{"walk/nodes 3/0"}; !slices.Equal(got, want) { // the text, its schema, the meta-schema
		t.Errorf("Walk phases %q, want %q", got, want)
	}

	l = progressLog{}
	var buf bytes.Buffer
	est, err := cas.Export(l.ctx(f.ctx), f.repo, &buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := l.phases(t)
	if len(got) != 2 || !strings.HasPrefix(got[0], "export/order ") || got[1] != fmt.Sprintf("export/write %d/%d", est.Objects, est.Objects) {
		t.Errorf("Export phases %q, want order, then write %d/%d", got, est.Objects, est.Objects)
	}

	l = progressLog{}
	g := newFixture(t)
	irep, err := cas.Import(l.ctx(g.ctx), g.repo, bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.phases(t), []string{fmt.Sprintf("import/objects %d/0", irep.Objects)}; !slices.Equal(got, want) {
		t.Errorf("Import phases %q, want %q", got, want)
	}

	// Without a ProgressFunc: nothing (and no panic on the nil reporter).
	if _, err := f.repo.GC(f.ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// TestProgressRateLimited: a phase of many quick items reports far fewer
// times than it has items, at most one report per ProgressInterval between
// its first and Final ones.
func TestProgressRateLimited(t *testing.T) {
	f := newFixture(t)
	for i := range 3000 {
		f.text(fmt.Sprintf("n%d", i))
	}
	var l progressLog
	began := time.Now()
	if _, err := f.repo.Fsck(l.ctx(f.ctx), nil); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	n := 0
	for _, p := range l.reports {
		if p.Phase == "objects" {
			n++
		}
	}
	if limit := 2 + int(took/cas.ProgressInterval) + 1; n > limit {
		t.Errorf("fsck/objects reported %d times in %v, want at most %d", n, took, limit)
	}
}

func TestProgressRateAndETA(t *testing.T) {
	for _, tc := range []struct {
		p      cas.Progress
		rate   float64
		eta    time.Duration
		etaSet bool
	}{
		{cas.Progress{Done: 50, Total: 100, Elapsed: 5 * time.Second}, 10, 5 * time.Second, true},
		{cas.Progress{Done: 50, Elapsed: 5 * time.Second}, 10, 0, false}, // no total: no ETA
		{cas.Progress{Done: 0, Total: 100, Elapsed: time.Second}, 0, 0, false},
		{cas.Progress{Done: 10, Total: 100}, 0, 0, false}, // no time yet
		{cas.Progress{Done: 100, Total: 100, Elapsed: time.Second}, 100, 0, true},
	} {
		if r := tc.p.Rate(); r != tc.rate {
			t.Errorf("%+v: Rate = %v, want %v", tc.p, r, tc.rate)
		}
		if eta, ok := tc.p.ETA(); ok != tc.etaSet || eta != tc.eta {
			t.Errorf("%+v: ETA = %v, %v; want %v, %v", tc.p, eta, ok, tc.eta, tc.etaSet)
		}
	}
}
