package disk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

func hashOf(s string) cas.Hash { return cas.Sum([]byte(s)) }

func TestRefsCompareAndSwap(t *testing.T) {
	clk := newClock()
	s := newStore(t, &disk.Options{Now: clk.Now})
	r := s.Refs()
	ctx := t.Context()
	a, b, c := hashOf("a"), hashOf("b"), hashOf("c")

	if _, err := r.Get(ctx, "threads/x"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Get(absent) error = %v", err)
	}
	if _, err := r.Log(ctx, "threads/x"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Log(absent) error = %v", err)
	}
	mustCAS(t, r, "threads/x", 0, a, "create")
	wantConflict(t, r.CompareAndSwap(ctx, "threads/x", 0, b, "again"), a, "")
	clk.Add(time.Second)
	mustCAS(t, r, "threads/x", a, b, "move")
	ce := wantConflict(t, r.CompareAndSwap(ctx, "threads/x", a, c, "stale"), b, "")
	if ce.Expected != a || ce.Name != "threads/x" {
		t.Errorf("conflict = %+v", *ce)
	}
	mustCAS(t, r, "threads/x", b, b, "no-op") // not logged
	if h, err := r.Get(ctx, "threads/x"); err != nil || h != b {
		t.Fatalf("Get = %v, %v; want %s", h, err, b)
	}
	clk.Add(time.Second)
	mustCAS(t, r, "threads/x", b, 0, "delete")
	if _, err := r.Get(ctx, "threads/x"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Get(deleted) error = %v", err)
	}
	wantConflict(t, r.CompareAndSwap(ctx, "threads/x", b, c, "gone"), 0, "")
	mustCAS(t, r, "threads/x", 0, 0, "absent stays absent")

	t0 := newClock().Now().UnixMilli()
	want := []cas.LogEntry{
		{Old: 0, New: a, Time: t0, Message: "create"},
		{Old: a, New: b, Time: t0 + 1000, Message: "move"},
		{Old: b, New: 0, Time: t0 + 2000, Message: "delete"},
	}
	if got := mustLog(t, r, "threads/x"); !reflect.DeepEqual(got, want) {
		t.Fatalf("Log = %+v\nwant %+v", got, want)
	}
	// A delete removes the emptied folder; the log stays.
	if _, err := os.Stat(filepath.Join(s.Dir(), "refs", "threads")); !os.IsNotExist(err) {
		t.Errorf("refs/threads not removed after its last ref: %v", err)
	}
	if names := logNames(t, r); !slices.Equal(names, []string{"threads/x"}) {
		t.Errorf("Logs = %v", names)
	}
}

func logNames(t *testing.T, r cas.Refs) []string {
	t.Helper()
	var names []string
	for n, err := range r.Logs(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

func listRefs(t *testing.T, r cas.Refs, prefix string) []string {
	t.Helper()
	var names []string
	for ref, err := range r.List(t.Context(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, ref.Name+"="+ref.Hash.String()[:3])
	}
	return names
}

func TestRefsInvalidNames(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	ctx := t.Context()
	for _, name := range []string{"", "/a", "a/", "a//b", "../x", "a/../b", ".a", "a b", "a\x00", strings.Repeat("a", 201)} {
		if _, err := r.Get(ctx, name); !errors.Is(err, cas.ErrInvalidRefName) {
			t.Errorf("Get(%q) error = %v", name, err)
		}
		if err := r.CompareAndSwap(ctx, name, 0, hashOf("x"), ""); !errors.Is(err, cas.ErrInvalidRefName) {
			t.Errorf("CompareAndSwap(%q) error = %v", name, err)
		}
		if _, err := r.Log(ctx, name); !errors.Is(err, cas.ErrInvalidRefName) {
			t.Errorf("Log(%q) error = %v", name, err)
		}
		if err := r.ImportLog(ctx, name, []cas.LogEntry{{New: hashOf("x")}}); !errors.Is(err, cas.ErrInvalidRefName) {
			t.Errorf("ImportLog(%q) error = %v", name, err)
		}
	}
}

func TestRefsClash(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	ctx := t.Context()
	x, y := hashOf("x"), hashOf("y")
	mustCAS(t, r, "Case/Name", 0, x, "")
	tests := []struct{ name, clash string }{
		{"case/name", "Case/Name"},
		{"CASE/NAME", "Case/Name"},
		{"Case/Name/child", "Case/Name"}, // below a ref
		{"case/NAME/child/deeper", "Case/Name"},
		{"Case", "Case/Name"}, // above a ref
		{"CASE", "Case/Name"},
	}
	for _, tc := range tests {
		err := r.CompareAndSwap(ctx, tc.name, 0, y, "")
		wantConflict(t, err, 0, tc.clash)
		if !strings.Contains(err.Error(), "clashes") {
			t.Errorf("clash error %q does not say so", err)
		}
		if _, err := r.Get(ctx, tc.name); !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Get(%q) after a refused create: %v", tc.name, err)
		}
	}
	// Moving a name that differs only in case is a plain conflict: that
	// ref does not exist.
	wantConflict(t, r.CompareAndSwap(ctx, "case/name", x, y, ""), 0, "")
	// Siblings and names that merely share a prefix are fine.
	mustCAS(t, r, "Case/Name2", 0, y, "")
	mustCAS(t, r, "Case/Other/deep", 0, y, "")
	mustCAS(t, r, "CaseName", 0, y, "")
	if got := listRefs(t, r, ""); len(got) != 4 {
		t.Errorf("List = %v", got)
	}
	// After the clashing ref is deleted, the other spelling may be created.
	mustCAS(t, r, "Case/Name", x, 0, "")
	mustCAS(t, r, "case/name/child", 0, y, "")
	wantConflict(t, r.CompareAndSwap(ctx, "Case/Name", 0, x, ""), 0, "case/name/child")
}

func TestRefsEmptyFolderLeftByCrash(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	// A crash between removing refs/a/b and removing the emptied folder
	// leaves refs/a empty: it must not block creating "a".
	if err := os.MkdirAll(filepath.Join(s.Dir(), "refs", "a", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(t.Context(), "a"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Get(folder) error = %v", err)
	}
	mustCAS(t, r, "A", 0, hashOf("x"), "")
	if h, err := r.Get(t.Context(), "A"); err != nil || h != hashOf("x") {
		t.Fatalf("Get = %v, %v", h, err)
	}
}

func TestRefsList(t *testing.T) {
	s := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	r := s.Refs()
	for i, n := range []string{"threads/B", "threads/a", "threads/C", "workflows/x", "schemas/content", "threads2", "Threads/x/y"} {
		// "Threads/x/y" shares the folder refs/threads with "threads/B":
		// a folder is not a ref, so they do not clash.
		mustCAS(t, r, n, 0, hashOf(fmt.Sprint(i)), "")
	}
	names := func(prefix string) []string {
		var out []string
		for ref, err := range r.List(t.Context(), prefix) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ref.Name)
		}
		return out
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"Threads/x/y", "schemas/content", "threads/B", "threads/C", "threads/a", "threads2", "workflows/x"}},
		{"threads/", []string{"threads/B", "threads/C", "threads/a"}},
		{"threads", []string{"threads/B", "threads/C", "threads/a", "threads2"}},
		{"Threads/", []string{"Threads/x/y"}},
		{"threads/a", []string{"threads/a"}},
		{"threads/a/", nil},
		{"threads/B/x/", nil},
		{"nothing/", nil},
		{"../", nil},
		{"../../etc/", nil},
		{"w", []string{"workflows/x"}},
	}
	for _, tc := range tests {
		if got := names(tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
	var got cas.Ref
	for ref := range r.List(t.Context(), "threads/") {
		got = ref
		break
	}
	if got.Name != "threads/B" || got.Hash != hashOf("0") {
		t.Errorf("first of List = %+v", got)
	}
}

func TestRefsLogsListsDeleted(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	x := hashOf("x")
	mustCAS(t, r, "b/live", 0, x, "")
	mustCAS(t, r, "a/deleted", 0, x, "")
	mustCAS(t, r, "a/deleted", x, 0, "")
	mustCAS(t, r, "Case", 0, x, "")
	mustCAS(t, r, "Case", x, 0, "")
	mustCAS(t, r, "case", 0, x, "") // the same log file as "Case"
	if got, want := logNames(t, r), []string{"Case", "a/deleted", "b/live", "case"}; !slices.Equal(got, want) {
		t.Errorf("Logs = %q, want %q", got, want)
	}
	if got := mustLog(t, r, "case"); len(got) != 1 || got[0].New != x {
		t.Errorf("Log(case) = %+v", got)
	}
	if got := mustLog(t, r, "Case"); len(got) != 2 {
		t.Errorf("Log(Case) = %+v", got)
	}
	if _, err := r.Log(t.Context(), "CASE"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Log(CASE) error = %v", err)
	}
}

// appendRaw appends text to the log file of name.
func appendRaw(t *testing.T, s *disk.Store, name, text string) {
	t.Helper()
	f, err := os.OpenFile(logFile(s, name), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func readLogFile(t *testing.T, s *disk.Store, name string) string {
	t.Helper()
	b, err := os.ReadFile(logFile(s, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRefLogTornLine(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	x, y := hashOf("x"), hashOf("y")
	mustCAS(t, r, "r", 0, x, "one")
	before := readLogFile(t, s, "r")
	appendRaw(t, s, "r", `{"old":"`+x.String()+`","new":"`+y.String()+`","ti`)
	if got := mustLog(t, r, "r"); len(got) != 1 || got[0].New != x {
		t.Fatalf("Log with a torn line = %+v", got)
	}
	mustCAS(t, r, "r", x, y, "two")
	after := readLogFile(t, s, "r")
	if !strings.HasPrefix(after, before) || strings.Count(after, "\n") != 2 || strings.Contains(after, `"ti{`) || strings.Contains(after[len(before):], `"ti`+"\n") {
		t.Fatalf("the torn line was not truncated:\n%s", after)
	}
	if got := mustLog(t, r, "r"); len(got) != 2 || got[1].Message != "two" {
		t.Fatalf("Log = %+v", got)
	}
	// A malformed complete line is reported, not skipped.
	appendRaw(t, s, "r", "not json\n")
	if _, err := r.Log(t.Context(), "r"); err == nil {
		t.Fatal("Log accepted a malformed line")
	}
}

func TestRefLogTornLineLong(t *testing.T) {
	// The torn tail and the last complete line span more than the reader's
	// first window.
	s := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	r := s.Refs()
	x, y := hashOf("x"), hashOf("y")
	long := strings.Repeat("m", 9000)
	mustCAS(t, r, "r", 0, x, long)
	appendRaw(t, s, "r", strings.Repeat("z", 10000))
	mustCAS(t, r, "r", x, y, long)
	got := mustLog(t, r, "r")
	if len(got) != 2 || got[0].Message != long || got[1].Message != long {
		t.Fatalf("Log = %d entries", len(got))
	}
}

func TestRefLogUncommittedIntent(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, r cas.Refs) cas.Hash // returns the ref's value
		intent   func(cur cas.Hash) (old, new cas.Hash)
		next     func(t *testing.T, r cas.Refs, cur cas.Hash)
		wantLogs int  // visible entries before the next change
		kept     bool // the line is not an intent: kept by the next change
	}{
		{
			name:     "move",
			setup:    func(t *testing.T, r cas.Refs) cas.Hash { mustCAS(t, r, "ref", 0, hashOf("a"), ""); return hashOf("a") },
			intent:   func(cur cas.Hash) (cas.Hash, cas.Hash) { return cur, hashOf("lost") },
			next:     func(t *testing.T, r cas.Refs, cur cas.Hash) { mustCAS(t, r, "ref", cur, hashOf("b"), "next") },
			wantLogs: 1,
		},
		{
			// With no ref file, a creation line cannot be told from a ref
			// file deleted by hand: it is shown and kept.
			name:     "create",
			setup:    func(t *testing.T, r cas.Refs) cas.Hash { return 0 },
			intent:   func(cas.Hash) (cas.Hash, cas.Hash) { return 0, hashOf("lost") },
			next:     func(t *testing.T, r cas.Refs, cur cas.Hash) { mustCAS(t, r, "ref", 0, hashOf("b"), "next") },
			wantLogs: 1,
			kept:     true,
		},
		{
			name:     "delete",
			setup:    func(t *testing.T, r cas.Refs) cas.Hash { mustCAS(t, r, "ref", 0, hashOf("a"), ""); return hashOf("a") },
			intent:   func(cur cas.Hash) (cas.Hash, cas.Hash) { return cur, 0 },
			next:     func(t *testing.T, r cas.Refs, cur cas.Hash) { mustCAS(t, r, "ref", cur, hashOf("b"), "next") },
			wantLogs: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, nil)
			r := s.Refs()
			cur := tc.setup(t, r)
			old, new := tc.intent(cur)
			line := fmt.Sprintf(`{"old":%q,"new":%q,"time":1,"message":"crashed","name":"ref"}`+"\n", old, new)
			if cur.IsZero() {
				os.MkdirAll(filepath.Dir(logFile(s, "ref")), 0o755)
				os.WriteFile(logFile(s, "ref"), nil, 0o644)
			}
			appendRaw(t, s, "ref", line)
			got, err := r.Log(t.Context(), "ref")
			if err != nil || len(got) != tc.wantLogs {
				t.Fatalf("Log = %+v, %v; want %d entries", got, err, tc.wantLogs)
			}
			if tc.kept != (got[len(got)-1].Message == "crashed") {
				t.Fatalf("Log = %+v; showing the crashed line: %v, want %v", got, !tc.kept, tc.kept)
			}
			tc.next(t, r, cur)
			if text := readLogFile(t, s, "ref"); tc.kept != strings.Contains(text, "crashed") {
				t.Fatalf("the crashed line kept: %v, want %v:\n%s", !tc.kept, tc.kept, text)
			}
			got = mustLog(t, r, "ref")
			if len(got) != tc.wantLogs+1 || got[len(got)-1].Message != "next" {
				t.Fatalf("Log = %+v", got)
			}
		})
	}
}

// TestRefLogCommittedNotIntent: a newest entry that matches the ref is kept
// even when an older value comes back.
func TestRefLogCommittedNotIntent(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	a, b := hashOf("a"), hashOf("b")
	mustCAS(t, r, "ref", 0, a, "")
	mustCAS(t, r, "ref", a, b, "")
	mustCAS(t, r, "ref", b, a, "back")
	if got := mustLog(t, r, "ref"); len(got) != 3 || got[2].Message != "back" {
		t.Fatalf("Log = %+v", got)
	}
}

func TestPruneLog(t *testing.T) {
	clk := newClock()
	s := newStore(t, &disk.Options{Now: clk.Now})
	r := s.Refs()
	ctx := t.Context()
	h := func(i int) cas.Hash { return hashOf(fmt.Sprint(i)) }
	step := func() { clk.Add(time.Hour) }

	// live: created, moved 3 times, deleted, re-created, moved twice.
	mustCAS(t, r, "live", 0, h(1), "create")
	step()
	mustCAS(t, r, "live", h(1), h(2), "")
	step()
	mustCAS(t, r, "live", h(2), 0, "delete")
	step()
	mustCAS(t, r, "live", 0, h(3), "recreate")
	step()
	mustCAS(t, r, "live", h(3), h(4), "")
	step()
	mustCAS(t, r, "live", h(4), h(5), "newest")
	// gone: deleted long ago. recent: deleted recently, with old history.
	mustCAS(t, r, "gone", 0, h(1), "")
	mustCAS(t, r, "gone", h(1), 0, "")
	mustCAS(t, r, "recent", 0, h(1), "old")
	step()
	mustCAS(t, r, "young", 0, h(1), "young")
	mustCAS(t, r, "recent", h(1), 0, "recent delete")
	young := clk.Now()

	n, err := r.PruneLog(ctx, young)
	if err != nil {
		t.Fatal(err)
	}
	msgs := func(name string) []string {
		var out []string
		for _, e := range mustLog(t, r, name) {
			out = append(out, e.Message)
		}
		return out
	}
	if got, want := msgs("live"), []string{"recreate", "newest"}; !slices.Equal(got, want) {
		t.Errorf("live log after prune = %q, want %q", got, want)
	}
	if _, err := r.Log(ctx, "gone"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("a deleted ref's old log survived: %v", err)
	}
	if got, want := msgs("recent"), []string{"recent delete"}; !slices.Equal(got, want) {
		t.Errorf("recent log after prune = %q, want %q", got, want)
	}
	if got, want := msgs("young"), []string{"young"}; !slices.Equal(got, want) {
		t.Errorf("young log after prune = %q, want %q", got, want)
	}
	// live: 6 -> 2; gone: 2 -> 0; recent: 2 -> 1.
	if n != 4+2+1 {
		t.Errorf("PruneLog removed %d entries, want 7", n)
	}
	if _, err := os.Stat(logFile(s, "gone")); !os.IsNotExist(err) {
		t.Errorf("the emptied log file remains: %v", err)
	}
	if names := logNames(t, r); !slices.Equal(names, []string{"live", "recent", "young"}) {
		t.Errorf("Logs = %v", names)
	}
	// Nothing more to prune.
	if n, err := r.PruneLog(ctx, young); n != 0 || err != nil {
		t.Errorf("second PruneLog = %d, %v", n, err)
	}
	// Later, everything old goes but the live refs' newest and creation
	// entries.
	clk.Add(24 * time.Hour)
	if n, err := r.PruneLog(ctx, clk.Now()); n != 1 || err != nil {
		t.Errorf("third PruneLog = %d, %v; want 1 (recent's log)", n, err)
	}
	if got, want := msgs("live"), []string{"recreate", "newest"}; !slices.Equal(got, want) {
		t.Errorf("live log = %q, want %q", got, want)
	}
	if got, want := msgs("young"), []string{"young"}; !slices.Equal(got, want) {
		t.Errorf("young log = %q, want %q", got, want)
	}
}

func TestImportLog(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	ctx := t.Context()
	a, b, c := hashOf("a"), hashOf("b"), hashOf("c")
	hist := []cas.LogEntry{
		{Old: 0, New: a, Time: 100, Message: "create"},
		{Old: a, New: b, Time: 200, Message: "move"},
	}
	// Absent ref: created at the newest New, with no new entry.
	if err := r.ImportLog(ctx, "imported/x", hist); err != nil {
		t.Fatal(err)
	}
	if h, err := r.Get(ctx, "imported/x"); err != nil || h != b {
		t.Fatalf("Get after import = %v, %v; want %s", h, err, b)
	}
	if got := mustLog(t, r, "imported/x"); !reflect.DeepEqual(got, hist) {
		t.Fatalf("Log = %+v", got)
	}
	// Importing again adds nothing; duplicates inside the input are kept once.
	if err := r.ImportLog(ctx, "imported/x", append(hist, hist[1])); err != nil {
		t.Fatal(err)
	}
	if got := mustLog(t, r, "imported/x"); !reflect.DeepEqual(got, hist) {
		t.Fatalf("Log after re-import = %+v", got)
	}
	// Merged by cas.MergeLog: a detour back to the ref's value goes at the
	// end, a creation linking to the first entry before it, and an entry
	// that would move the live ref links nowhere: before its creation.
	more := []cas.LogEntry{
		{Old: b, New: c, Time: 300, Message: "later"},
		{Old: b, New: b, Time: 200, Message: "same time"},
		{Old: 0, New: 0, Time: 50, Message: "earliest"},
	}
	if err := r.ImportLog(ctx, "imported/x", more); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range mustLog(t, r, "imported/x") {
		msgs = append(msgs, e.Message)
	}
	if want := []string{"earliest", "later", "create", "move", "same time"}; !slices.Equal(msgs, want) {
		t.Fatalf("merged log = %q, want %q", msgs, want)
	}
	// An existing ref is never moved, and its imported entries are not
	// mistaken for an uncommitted intent.
	if h, _ := r.Get(ctx, "imported/x"); h != b {
		t.Fatalf("ImportLog moved an existing ref to %s", h)
	}
	mustCAS(t, r, "imported/x", b, a, "after import")
	if got := mustLog(t, r, "imported/x"); len(got) != 6 {
		t.Fatalf("Log after a move = %+v", got)
	}

	// A deleted ref's history: no ref is created.
	gone := []cas.LogEntry{{Old: 0, New: a, Time: 1}, {Old: a, New: 0, Time: 2}}
	if err := r.ImportLog(ctx, "gone", gone); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "gone"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("ImportLog created a deleted ref: %v", err)
	}
	if got := mustLog(t, r, "gone"); !reflect.DeepEqual(got, gone) {
		t.Fatalf("Log(gone) = %+v", got)
	}
	if err := r.ImportLog(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}

	// A clash refuses the creation and changes nothing.
	mustCAS(t, r, "Clash", 0, a, "")
	err := r.ImportLog(ctx, "clash/below", hist)
	wantConflict(t, err, 0, "Clash")
	if _, err := r.Log(ctx, "clash/below"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("a refused import left a log: %v", err)
	}
	err = r.ImportLog(ctx, "clash", hist)
	wantConflict(t, err, 0, "Clash")
}

func TestRefsConcurrentIncrements(t *testing.T) {
	s := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	const goroutines, each = 8, 15
	initCounter(t, s, "counter")
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			if err := increment(context.Background(), s, "counter", each); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	checkCounter(t, s, "counter", goroutines*each)
}

// initCounter creates ref name at the counter 0.
func initCounter(t *testing.T, s *disk.Store, name string) {
	t.Helper()
	h := mustPut(t, s, []byte("0"))
	mustCAS(t, s.Refs(), name, 0, h, "0")
}

// increment adds n to the counter at ref name, one compare-and-swap at a
// time, retrying on conflicts. The ref points at the decimal text of the
// counter.
func increment(ctx context.Context, s *disk.Store, name string, n int) error {
	r := s.Refs()
	for done := 0; done < n; {
		cur, err := r.Get(ctx, name)
		if err != nil {
			return err
		}
		b, err := s.Get(ctx, cur)
		if err != nil {
			return err
		}
		var v int
		if _, err := fmt.Sscan(string(b), &v); err != nil {
			return err
		}
		next, err := s.Put(ctx, []byte(fmt.Sprint(v+1)))
		if err != nil {
			return err
		}
		err = r.CompareAndSwap(ctx, name, cur, next, fmt.Sprint(v+1))
		if errors.Is(err, cas.ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		done++
	}
	return nil
}

// checkCounter checks that the counter reached total with no lost update:
// its log holds every step 0 -> 1 -> ... -> total, in order.
func checkCounter(t *testing.T, s *disk.Store, name string, total int) {
	t.Helper()
	r := s.Refs()
	if h, err := r.Get(t.Context(), name); err != nil || h != hashOf(fmt.Sprint(total)) {
		t.Fatalf("counter = %v, %v; want %d", h, err, total)
	}
	log := mustLog(t, r, name)
	if len(log) != total+1 {
		t.Fatalf("log has %d entries, want %d", len(log), total+1)
	}
	for i, e := range log {
		var old cas.Hash
		if i > 0 {
			old = hashOf(fmt.Sprint(i - 1))
		}
		if e.Old != old || e.New != hashOf(fmt.Sprint(i)) || e.Message != fmt.Sprint(i) {
			t.Fatalf("log entry %d = %+v, want %d -> %d", i, e, i-1, i)
		}
		if i > 0 && e.Time < log[i-1].Time {
			t.Fatalf("log entry %d is older than entry %d", i, i-1)
		}
	}
}

// TestRefLogNamesLikeLogFiles: a ref named like another's log file keeps a
// log of its own.
func TestRefLogNamesLikeLogFiles(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	x := hashOf("x")
	for _, name := range []string{"x", "x.jsonl/y", "x@.jsonl", "a/x.jsonl", "a/x"} {
		err := r.CompareAndSwap(t.Context(), name, 0, x, name)
		if strings.Contains(name, "@") {
			if !errors.Is(err, cas.ErrInvalidRefName) {
				t.Errorf("CompareAndSwap(%q) = %v, want ErrInvalidRefName", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("CompareAndSwap(%q): %v", name, err)
		}
	}
	for _, name := range []string{"x", "x.jsonl/y"} {
		if got := mustLog(t, r, name); len(got) != 1 || got[0].Message != name {
			t.Errorf("Log(%q) = %+v", name, got)
		}
	}
}

// TestImportLogSharedFile imports into a log file that also holds the lines
// of a name differing only in case: every line keeps its place, so the
// file's last line is still the live ref's, and no line of the deleted
// name is taken for an uncommitted intent of the live one.
func TestImportLogSharedFile(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	ctx := t.Context()
	a := hashOf("a")
	mustCAS(t, r, "foo", 0, a, "create")
	mustCAS(t, r, "foo", a, 0, "delete")
	mustCAS(t, r, "Foo", 0, a, "create in other case")
	foo, Foo := mustLog(t, r, "foo"), mustLog(t, r, "Foo")
	stray := cas.LogEntry{Old: hashOf("x"), New: hashOf("y"), Time: 1, Message: "stray"}
	if err := r.ImportLog(ctx, "foo", []cas.LogEntry{stray}); err != nil {
		t.Fatal(err)
	}
	// The stray links nowhere: before foo's (last) creation.
	if got, want := mustLog(t, r, "foo"), []cas.LogEntry{stray, foo[0], foo[1]}; !slices.Equal(got, want) {
		t.Errorf("Log(foo) = %v, want %v", got, want)
	}
	if got := mustLog(t, r, "Foo"); !slices.Equal(got, Foo) {
		t.Errorf("Log(Foo) = %v, want %v", got, Foo)
	}
	if h, err := r.Get(ctx, "Foo"); err != nil || h != a {
		t.Errorf("Get(Foo) = %v, %v; want %v", h, err, a)
	}
	if _, err := r.Get(ctx, "foo"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Get(foo) error = %v, want not found", err)
	}
}
