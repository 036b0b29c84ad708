package castest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// refsTests are the [cas.Refs] conformance tests, each run on fresh refs.
var refsTests = []struct {
	name string
	f    func(t *testing.T, e *refsEnv)
}{
	{"CreateOnly", testCreateOnly},
	{"Move", testMove},
	{"Delete", testDelete},
	{"SameOldAndNew", testSameOldAndNew},
	{"GetAbsent", testRefGetAbsent},
	{"List", testList},
	{"ListEarlyStop", testListEarlyStop},
	{"ListBodyUsesRefs", testListBodyUsesRefs},
	{"LogEntries", testLogEntries},
	{"LogAbsent", testLogAbsent},
	{"NameGrammar", testNameGrammar},
	{"CaseClash", testCaseClash},
	{"FolderClash", testFolderClash},
	{"ClashGoneAfterDelete", testClashGoneAfterDelete},
	{"ConcurrentCAS", testConcurrentCAS},
	{"ConcurrentCreate", testConcurrentCreate},
	{"Logs", testLogs},
	{"PruneLog", testPruneLog},
	{"ImportLog", testImportLog},
	{"Replace", testReplace},
	{"ReplaceMissingCaseClash", testReplaceMissingCaseClash},
	{"CancelledContext", testRefsCancelledContext},
}

// refsEnv is what a refs test works with: the refs, their clock, and a way
// to open fresh ones for independent subtests.
type refsEnv struct {
	r    cas.Refs
	now  clock
	open func(t *testing.T) (cas.Refs, clock)
}

// fresh returns an environment with fresh, empty refs.
func (e *refsEnv) fresh(t *testing.T) *refsEnv {
	t.Helper()
	r, now := e.open(t)
	return &refsEnv{r: r, now: now, open: e.open}
}

// nowMilli reads the clock in Unix milliseconds.
func (e *refsEnv) nowMilli(t *testing.T) int64 {
	t.Helper()
	return mustNow(t, e.now).UnixMilli()
}

// hv returns a recognisable hash for refs tests; backends do not check
// that a ref's target is stored.
func hv(n uint64) cas.Hash { return cas.Hash(0xC0FFEE00 + n) }

func mustCAS(t *testing.T, r cas.Refs, name string, old, new cas.Hash, msg string) {
	t.Helper()
	if err := r.CompareAndSwap(t.Context(), name, old, new, msg); err != nil {
		t.Fatalf("CompareAndSwap(%q, %s, %s): %v", name, old, new, err)
	}
}

func mustRef(t *testing.T, r cas.Refs, name string) cas.Hash {
	t.Helper()
	h, err := r.Get(t.Context(), name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return h
}

// wantRef fails t unless ref name holds want (zero: does not exist).
func wantRef(t *testing.T, r cas.Refs, name string, want cas.Hash) {
	t.Helper()
	h, err := r.Get(t.Context(), name)
	switch {
	case want.IsZero():
		if !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Get(%q) = %s, %v; want an error wrapping ErrNotFound", name, h, err)
		}
	case err != nil || h != want:
		t.Errorf("Get(%q) = %s, %v; want %s", name, h, err, want)
	}
}

func mustLog(t *testing.T, r cas.Refs, name string) []cas.LogEntry {
	t.Helper()
	log, err := r.Log(t.Context(), name)
	if err != nil {
		t.Fatalf("Log(%q): %v", name, err)
	}
	return log
}

// wantNoLog fails t unless name has no log.
func wantNoLog(t *testing.T, r cas.Refs, name string) {
	t.Helper()
	log, err := r.Log(t.Context(), name)
	if !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Log(%q) = %v, %v; want an error wrapping ErrNotFound", name, log, err)
	}
}

// change is a log entry without its time.
type change struct {
	Old, New cas.Hash
	Message  string
}

func changes(log []cas.LogEntry) []change {
	cs := make([]change, len(log))
	for i, e := range log {
		cs[i] = change{e.Old, e.New, e.Message}
	}
	return cs
}

// wantChanges fails t unless name's log holds exactly want, ignoring times.
func wantChanges(t *testing.T, r cas.Refs, name string, want ...change) {
	t.Helper()
	if got := changes(mustLog(t, r, name)); !slices.Equal(got, want) {
		t.Errorf("Log(%q) = %v, want %v", name, got, want)
	}
}

// wantConflict fails t unless err is a *ConflictError equal to want.
func wantConflict(t *testing.T, err error, want cas.ConflictError) {
	t.Helper()
	var ce *cas.ConflictError
	if !errors.As(err, &ce) {
		t.Errorf("error = %v, want a *cas.ConflictError %+v", err, want)
		return
	}
	if !errors.Is(err, cas.ErrConflict) {
		t.Errorf("error %v does not wrap ErrConflict", err)
	}
	if *ce != want {
		t.Errorf("conflict = %+v, want %+v", *ce, want)
	}
}

func list(t *testing.T, r cas.Refs, prefix string) []cas.Ref {
	t.Helper()
	var refs []cas.Ref
	for ref, err := range r.List(t.Context(), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		refs = append(refs, ref)
	}
	return refs
}

func logNames(t *testing.T, r cas.Refs) []string {
	t.Helper()
	var names []string
	for name, err := range r.Logs(t.Context()) {
		if err != nil {
			t.Fatalf("Logs: %v", err)
		}
		names = append(names, name)
	}
	return names
}

func testCreateOnly(t *testing.T, e *refsEnv) {
	r := e.r
	mustCAS(t, r, "heads/x", 0, hv(1), "create")
	wantRef(t, r, "heads/x", hv(1))
	err := r.CompareAndSwap(t.Context(), "heads/x", 0, hv(2), "create again")
	wantConflict(t, err, cas.ConflictError{Name: "heads/x", Expected: 0, Current: hv(1)})
	wantRef(t, r, "heads/x", hv(1))
	wantChanges(t, r, "heads/x", change{0, hv(1), "create"})
}

func testMove(t *testing.T, e *refsEnv) {
	r := e.r
	mustCAS(t, r, "m", 0, hv(1), "create")
	mustCAS(t, r, "m", hv(1), hv(2), "move")
	wantRef(t, r, "m", hv(2))
	err := r.CompareAndSwap(t.Context(), "m", hv(1), hv(3), "stale")
	wantConflict(t, err, cas.ConflictError{Name: "m", Expected: hv(1), Current: hv(2)})
	wantRef(t, r, "m", hv(2))
	mustCAS(t, r, "m", hv(2), hv(1), "back")
	wantRef(t, r, "m", hv(1))
	wantChanges(t, r, "m", change{0, hv(1), "create"}, change{hv(1), hv(2), "move"}, change{hv(2), hv(1), "back"})
}

func testDelete(t *testing.T, e *refsEnv) {
	r := e.r
	ctx := t.Context()
	mustCAS(t, r, "d", 0, hv(1), "create")
	mustCAS(t, r, "d", hv(1), 0, "delete")
	wantRef(t, r, "d", 0)
	if refs := list(t, r, ""); len(refs) != 0 {
		t.Errorf("List after delete = %v, want none", refs)
	}
	wantChanges(t, r, "d", change{0, hv(1), "create"}, change{hv(1), 0, "delete"})

	err := r.CompareAndSwap(ctx, "d", hv(1), 0, "delete again")
	wantConflict(t, err, cas.ConflictError{Name: "d", Expected: hv(1), Current: 0})
	err = r.CompareAndSwap(ctx, "never", hv(5), hv(6), "move an absent ref")
	wantConflict(t, err, cas.ConflictError{Name: "never", Expected: hv(5), Current: 0})
	wantNoLog(t, r, "never")

	mustCAS(t, r, "e", 0, hv(2), "create")
	err = r.CompareAndSwap(ctx, "e", hv(1), 0, "stale delete")
	wantConflict(t, err, cas.ConflictError{Name: "e", Expected: hv(1), Current: hv(2)})
	wantRef(t, r, "e", hv(2))

	mustCAS(t, r, "d", 0, hv(3), "recreate")
	wantRef(t, r, "d", hv(3))
	wantChanges(t, r, "d", change{0, hv(1), "create"}, change{hv(1), 0, "delete"}, change{0, hv(3), "recreate"})
}

func testSameOldAndNew(t *testing.T, e *refsEnv) {
	r := e.r
	ctx := t.Context()
	mustCAS(t, r, "same", 0, hv(1), "create")
	mustCAS(t, r, "same", hv(1), hv(1), "no-op")
	wantRef(t, r, "same", hv(1))
	wantChanges(t, r, "same", change{0, hv(1), "create"})

	err := r.CompareAndSwap(ctx, "same", hv(2), hv(2), "stale no-op")
	wantConflict(t, err, cas.ConflictError{Name: "same", Expected: hv(2), Current: hv(1)})
	err = r.CompareAndSwap(ctx, "same", 0, 0, "absent no-op on a live ref")
	wantConflict(t, err, cas.ConflictError{Name: "same", Expected: 0, Current: hv(1)})

	mustCAS(t, r, "absent", 0, 0, "absent stays absent")
	wantRef(t, r, "absent", 0)
	wantNoLog(t, r, "absent")
	err = r.CompareAndSwap(ctx, "absent", hv(2), hv(2), "stale no-op on an absent ref")
	wantConflict(t, err, cas.ConflictError{Name: "absent", Expected: hv(2), Current: 0})
	if names := logNames(t, r); !slices.Equal(names, []string{"same"}) {
		t.Errorf("Logs = %v, want [same]", names)
	}
}

func testRefGetAbsent(t *testing.T, e *refsEnv) {
	h, err := e.r.Get(t.Context(), "no/such/ref")
	if !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Get(absent) = %s, %v; want an error wrapping ErrNotFound", h, err)
	}
	if !strings.Contains(err.Error(), "no/such/ref") {
		t.Errorf("Get(absent) error %q does not name the ref", err)
	}
}

// listNames are refs in byte order (not case-folded, not by segment).
var listNames = []string{"B", "a-1", "a.1", "a/x", "a/y/z", "a0", "aC", "a_b", "ab", "c/d"}

func testList(t *testing.T, e *refsEnv) {
	r := e.r
	want := make(map[string]cas.Hash)
	for i, name := range slices.Backward(listNames) { // created out of order
		want[name] = hv(uint64(i + 1))
		mustCAS(t, r, name, 0, want[name], "create")
	}
	mustCAS(t, r, "gone/x", 0, hv(99), "create")
	mustCAS(t, r, "gone/x", hv(99), 0, "delete")
	tests := []struct {
		prefix string
		names  []string
	}{
		{"", listNames},
		{"a/", []string{"a/x", "a/y/z"}},
		{"a", []string{"a-1", "a.1", "a/x", "a/y/z", "a0", "aC", "a_b", "ab"}},
		{"a/y/", []string{"a/y/z"}},
		{"a/y/z", []string{"a/y/z"}},
		{"B", []string{"B"}},
		{"A", nil},
		{"b", nil},
		{"gone/", nil},
		{"zz", nil},
	}
	for _, tc := range tests {
		refs := list(t, r, tc.prefix)
		var names []string
		for _, ref := range refs {
			names = append(names, ref.Name)
			if ref.Hash != want[ref.Name] {
				t.Errorf("List(%q) lists %s at %s, want %s", tc.prefix, ref.Name, ref.Hash, want[ref.Name])
			}
		}
		if !slices.Equal(names, tc.names) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, names, tc.names)
		}
	}
}

func testListEarlyStop(t *testing.T, e *refsEnv) {
	for i := range 5 {
		mustCAS(t, e.r, fmt.Sprintf("r%d", i), 0, hv(uint64(i+1)), "create")
	}
	n := 0
	for _, err := range e.r.List(t.Context(), "") { // an iterator that ignores a false yield panics here
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		n++
		break
	}
	for _, err := range e.r.Logs(t.Context()) {
		if err != nil {
			t.Fatalf("Logs: %v", err)
		}
		n++
		break
	}
	if n != 2 {
		t.Errorf("loops ran %d times before break, want 2", n)
	}
}

func testListBodyUsesRefs(t *testing.T, e *refsEnv) {
	r := e.r
	for i := range 3 {
		mustCAS(t, r, fmt.Sprintf("l/%d", i), 0, hv(uint64(i+1)), "create")
	}
	ctx := t.Context()
	var errs []error
	within(t, 5*time.Second, "loops over List and Logs that change refs", func() {
		for ref, err := range r.List(ctx, "l/") {
			if err != nil {
				errs = append(errs, err)
				return
			}
			if _, err := r.Get(ctx, ref.Name); err != nil {
				errs = append(errs, fmt.Errorf("Get inside List: %w", err))
			}
			if err := r.CompareAndSwap(ctx, ref.Name, ref.Hash, ref.Hash+100, "moved while listing"); err != nil {
				errs = append(errs, fmt.Errorf("CompareAndSwap inside List: %w", err))
			}
			if err := r.CompareAndSwap(ctx, "new/"+ref.Name, 0, ref.Hash, "created while listing"); err != nil {
				errs = append(errs, fmt.Errorf("CompareAndSwap inside List: %w", err))
			}
		}
		for name, err := range r.Logs(ctx) {
			if err != nil {
				errs = append(errs, err)
				return
			}
			if _, err := r.Log(ctx, name); err != nil {
				errs = append(errs, fmt.Errorf("Log inside Logs: %w", err))
			}
			if !strings.HasPrefix(name, "l/") {
				continue
			}
			if err := r.ImportLog(ctx, "imported/"+name, []cas.LogEntry{{New: hv(7), Time: 1, Message: "imported while listing"}}); err != nil {
				errs = append(errs, fmt.Errorf("ImportLog inside Logs: %w", err))
			}
		}
	})
	for _, err := range errs {
		t.Error(err)
	}
	for i := range 3 {
		wantRef(t, r, fmt.Sprintf("l/%d", i), hv(uint64(i+1))+100)
	}
}

func testLogEntries(t *testing.T, e *refsEnv) {
	r := e.r
	messages := []string{
		"",
		"line one\nline two\r\nline three\n",
		"ünïcødé ✓ 日本語 🚀",
		`"quoted" \backslash\ {"json": true} <html>&amp;`,
		"tab\tand\u2028separator",
		strings.Repeat("long message ", 1000),
	}
	type bound struct{ lo, hi int64 }
	var want []change
	var bounds []bound
	cur := cas.Hash(0)
	for i, msg := range messages {
		next := hv(uint64(i + 1))
		if i == len(messages)-1 {
			next = 0 // the last change deletes the ref
		}
		lo := e.nowMilli(t)
		mustCAS(t, r, "logged/ref", cur, next, msg)
		bounds = append(bounds, bound{lo, e.nowMilli(t)})
		want = append(want, change{cur, next, msg})
		cur = next
	}
	log := mustLog(t, r, "logged/ref")
	if got := changes(log); !slices.Equal(got, want) {
		t.Fatalf("Log = %q, want %q", got, want)
	}
	for i, entry := range log {
		if entry.Time < bounds[i].lo || entry.Time > bounds[i].hi {
			t.Errorf("entry %d: Time = %d, want within [%d, %d] (Unix ms by the store's clock)", i, entry.Time, bounds[i].lo, bounds[i].hi)
		}
		if i > 0 && entry.Time < log[i-1].Time {
			t.Errorf("entry %d: Time %d is before the previous entry's %d", i, entry.Time, log[i-1].Time)
		}
	}
	log[0].Message = "mutated"
	log[0].New = hv(999)
	if again := mustLog(t, r, "logged/ref"); !slices.Equal(changes(again), want) {
		t.Errorf("after mutating a Log result, Log = %q, want %q", changes(again), want)
	}
}

func testLogAbsent(t *testing.T, e *refsEnv) {
	wantNoLog(t, e.r, "never/changed")
	if names := logNames(t, e.r); len(names) != 0 {
		t.Errorf("fresh refs: Logs = %q, want none", names)
	}
}

func testNameGrammar(t *testing.T, e *refsEnv) {
	valid := []string{
		"a", "Z", "0", "a/b", "a.b-c_d", "a..b", "a_", "9-", "A/b/C/d",
		"threads/01ARZ3NDEKTSV4RRFFQ69G5FAV",
		strings.Repeat("x", cas.MaxRefNameLen),
		strings.Repeat("ab/", 66) + "ab", // 200 characters in 67 segments
	}
	invalid := []string{
		"", strings.Repeat("x", cas.MaxRefNameLen+1), strings.Repeat("ab/", 66) + "abc",
		"/a", "a/", "a//b", "/", "-a", ".a", "_a", "a/.b", "a/-b", "a/_b", ".", "..", "a/../b", "a/./b",
		"a b", " a", "a\x00", "a\n", "ä", "aä", `a\b`, "a:b", "a*", "a~", "a@{1}", "a^", "a?", "a[b]", "a%2Fb",
	}
	ctx := t.Context()
	for _, name := range valid {
		t.Run(fmt.Sprintf("valid %.20q", name), func(t *testing.T) {
			mustCAS(t, e.r, name, 0, hv(1), "create")
			wantRef(t, e.r, name, hv(1))
			if refs := list(t, e.r, name); len(refs) != 1 || refs[0].Name != name {
				t.Errorf("List(%q) = %v, want just the ref", name, refs)
			}
			mustCAS(t, e.r, name, hv(1), 0, "delete")
			wantChanges(t, e.r, name, change{0, hv(1), "create"}, change{hv(1), 0, "delete"})
		})
	}
	for _, name := range invalid {
		t.Run(fmt.Sprintf("invalid %.20q", name), func(t *testing.T) {
			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, cas.ErrInvalidRefName) {
					t.Errorf("%s(%q) error = %v, want one wrapping ErrInvalidRefName", op, name, err)
				}
			}
			_, err := e.r.Get(ctx, name)
			check("Get", err)
			check("CompareAndSwap", e.r.CompareAndSwap(ctx, name, 0, hv(1), "create"))
			check("CompareAndSwap(delete)", e.r.CompareAndSwap(ctx, name, hv(1), 0, "delete"))
			_, err = e.r.Log(ctx, name)
			check("Log", err)
			check("ImportLog", e.r.ImportLog(ctx, name, []cas.LogEntry{{New: hv(1), Time: 1}}))
		})
	}
	if refs := list(t, e.r, ""); len(refs) != 0 {
		t.Errorf("after the name table, List = %v, want none", refs)
	}
	want := slices.Clone(valid)
	slices.Sort(want)
	if names := logNames(t, e.r); !slices.Equal(names, want) {
		t.Errorf("Logs = %q, want the valid names %q", names, want)
	}
}

func testCaseClash(t *testing.T, e *refsEnv) {
	r := e.r
	ctx := t.Context()
	mustCAS(t, r, "Ab", 0, hv(1), "create")
	for _, name := range []string{"ab", "AB", "aB"} {
		err := r.CompareAndSwap(ctx, name, 0, hv(2), "clash")
		wantConflict(t, err, cas.ConflictError{Name: name, Expected: 0, Current: 0, Clash: "Ab"})
		wantRef(t, r, name, 0)
		wantNoLog(t, r, name)
	}
	mustCAS(t, r, "Ab", hv(1), hv(3), "the existing ref still moves")
	err := r.ImportLog(ctx, "ab", []cas.LogEntry{{Old: 0, New: hv(4), Time: e.nowMilli(t), Message: "import"}})
	wantConflict(t, err, cas.ConflictError{Name: "ab", Clash: "Ab"})
	wantRef(t, r, "ab", 0)
	wantNoLog(t, r, "ab")
	if refs := list(t, r, ""); len(refs) != 1 || refs[0] != (cas.Ref{Name: "Ab", Hash: hv(3)}) {
		t.Errorf("List = %v, want just Ab", refs)
	}
}

func testFolderClash(t *testing.T, e *refsEnv) {
	ctx := t.Context()
	clash := []struct{ existing, new string }{
		{"a/b", "a/b/c"},
		{"a/b/c", "a/b"},
		{"A/b", "a/B/c"},
		{"a/B/c", "A/b"},
		{"x/y/z", "x"},
		{"x", "x/y/z"},
		{"X", "x/y"},
	}
	for i, tc := range clash {
		p := fmt.Sprintf("clash%d/", i) // independent cases in one store
		existing, name := p+tc.existing, p+tc.new
		t.Run(tc.existing+" then "+tc.new, func(t *testing.T) {
			mustCAS(t, e.r, existing, 0, hv(1), "create")
			err := e.r.CompareAndSwap(ctx, name, 0, hv(2), "clash")
			wantConflict(t, err, cas.ConflictError{Name: name, Current: 0, Clash: existing})
			wantRef(t, e.r, name, 0)
			wantNoLog(t, e.r, name)
			wantRef(t, e.r, existing, hv(1))
		})
	}
	coexist := [][]string{
		{"a/b", "a/bc", "a/b-c", "a/b.c", "ab", "a/c/b"},
		{"x/y", "x/Y2", "x.y", "xy/z"},
	}
	for i, names := range coexist {
		p := fmt.Sprintf("coexist%d/", i)
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			for _, name := range names {
				mustCAS(t, e.r, p+name, 0, hv(1), "create")
			}
			if refs := list(t, e.r, p); len(refs) != len(names) {
				t.Errorf("List(%q) = %v, want %d refs", p, refs, len(names))
			}
		})
	}
}

func testClashGoneAfterDelete(t *testing.T, e *refsEnv) {
	pairs := []struct{ first, second string }{
		{"a/b", "a/b/c"},
		{"a/b/c", "a/b"},
		{"Ab", "ab"},
		{"A/b", "a/B/c"},
	}
	for i, tc := range pairs {
		p := fmt.Sprintf("p%d/", i)
		first, second := p+tc.first, p+tc.second
		t.Run(tc.first+" then "+tc.second, func(t *testing.T) {
			r := e.r
			mustCAS(t, r, first, 0, hv(1), "create first")
			mustCAS(t, r, first, hv(1), 0, "delete first")
			mustCAS(t, r, second, 0, hv(2), "create second")
			wantRef(t, r, second, hv(2))
			wantRef(t, r, first, 0)
			wantChanges(t, r, first, change{0, hv(1), "create first"}, change{hv(1), 0, "delete first"})
			wantChanges(t, r, second, change{0, hv(2), "create second"})
			names := logNames(t, r)
			if !slices.Contains(names, first) || !slices.Contains(names, second) {
				t.Errorf("Logs = %q, want both %q and %q", names, first, second)
			}
			err := r.CompareAndSwap(t.Context(), first, 0, hv(3), "recreate first")
			wantConflict(t, err, cas.ConflictError{Name: first, Clash: second})
			mustCAS(t, r, second, hv(2), 0, "delete second")
			mustCAS(t, r, first, 0, hv(3), "recreate first")
			wantRef(t, r, first, hv(3))
		})
	}
}

func testConcurrentCAS(t *testing.T, e *refsEnv) {
	const workers, per = 8, 25
	r := e.r
	ctx := t.Context()
	mustCAS(t, r, "counter", 0, 1, "start")
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			cur, err := r.Get(ctx, "counter")
			if err != nil {
				errs[w] = err
				return
			}
			for done, tries := 0, 0; done < per; tries++ {
				if tries > 100*workers*per {
					errs[w] = fmt.Errorf("worker %d: gave up after %d tries", w, tries)
					return
				}
				err := r.CompareAndSwap(ctx, "counter", cur, cur+1, fmt.Sprintf("worker %d", w))
				var ce *cas.ConflictError
				switch {
				case err == nil:
					done++
					cur++
				case errors.As(err, &ce) && ce.Current != 0:
					cur = ce.Current // the conflict carries what to retry from
				default:
					errs[w] = fmt.Errorf("worker %d: CompareAndSwap(%s, %s): %w", w, cur, cur+1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	wantRef(t, r, "counter", 1+workers*per)
	log := mustLog(t, r, "counter")
	if len(log) != 1+workers*per {
		t.Fatalf("the log has %d entries, want %d: one per successful change", len(log), 1+workers*per)
	}
	for i, entry := range log {
		if entry.Old != cas.Hash(i) || entry.New != cas.Hash(i+1) {
			t.Errorf("entry %d = {%d -> %d}, want {%d -> %d}", i, entry.Old, entry.New, i, i+1)
		}
		if i > 0 && entry.Time < log[i-1].Time {
			t.Errorf("entry %d: Time %d is before the previous entry's %d", i, entry.Time, log[i-1].Time)
		}
	}
}

func testConcurrentCreate(t *testing.T, e *refsEnv) {
	ctx := t.Context()
	t.Run("same name", func(t *testing.T) {
		const n = 16
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = e.r.CompareAndSwap(ctx, "same/x", 0, hv(uint64(i+1)), "create") })
		}
		wg.Wait()
		winner := mustRef(t, e.r, "same/x")
		wins := 0
		for i, err := range errs {
			if err == nil {
				wins++
				if hv(uint64(i+1)) != winner {
					t.Errorf("creator %d succeeded, but the ref holds %s", i, winner)
				}
				continue
			}
			wantConflict(t, err, cas.ConflictError{Name: "same/x", Current: winner})
		}
		if wins != 1 {
			t.Errorf("%d creators succeeded, want 1", wins)
		}
		wantChanges(t, e.r, "same/x", change{0, winner, "create"})
	})
	t.Run("clashing names", func(t *testing.T) {
		// Every two of these clash: their lower-case forms lie on one chain.
		names := []string{"k/a", "k/A", "k/a/b", "k/A/b/c", "k/a/B/c/d"}
		const each = 3
		errs := make([]error, len(names)*each)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = e.r.CompareAndSwap(ctx, names[i%len(names)], 0, hv(uint64(i+1)), "create") })
		}
		wg.Wait()
		refs := list(t, e.r, "k/")
		if len(refs) != 1 {
			t.Fatalf("List(k/) = %v, want exactly one of the clashing refs", refs)
		}
		wins := 0
		for i, err := range errs {
			if err == nil {
				wins++
				if got := (cas.Ref{Name: names[i%len(names)], Hash: hv(uint64(i + 1))}); got != refs[0] {
					t.Errorf("creator of %v succeeded, but List holds %v", got, refs[0])
				}
				continue
			}
			var ce *cas.ConflictError
			if !errors.As(err, &ce) {
				t.Errorf("create %s: %v, want a *cas.ConflictError", names[i%len(names)], err)
			}
		}
		if wins != 1 {
			t.Errorf("%d creators succeeded, want 1", wins)
		}
	})
}

func testLogs(t *testing.T, e *refsEnv) {
	r := e.r
	if names := logNames(t, r); len(names) != 0 {
		t.Fatalf("fresh refs: Logs = %q, want none", names)
	}
	mustCAS(t, r, "z/1", 0, hv(1), "create")
	mustCAS(t, r, "a/1", 0, hv(1), "create")
	mustCAS(t, r, "m", 0, hv(1), "create")
	mustCAS(t, r, "B", 0, hv(1), "create")
	mustCAS(t, r, "a/1", hv(1), 0, "delete")
	mustCAS(t, r, "never", 0, 0, "a no-op logs nothing")
	if names, want := logNames(t, r), []string{"B", "a/1", "m", "z/1"}; !slices.Equal(names, want) {
		t.Errorf("Logs = %q, want %q (sorted, deleted refs included)", names, want)
	}
}

// pruneCase builds one ref's log for a PruneLog test.
type pruneCase struct {
	name    string
	build   []change // applied in order; Message is the step's label
	keep    []string // labels of the entries kept
	removed int
}

func buildLog(t *testing.T, r cas.Refs, name string, steps []change) {
	t.Helper()
	for _, c := range steps {
		mustCAS(t, r, name, c.Old, c.New, c.Message)
	}
}

func wantLabels(t *testing.T, r cas.Refs, name string, labels []string) {
	t.Helper()
	log, err := r.Log(t.Context(), name)
	if labels == nil {
		if !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Log(%q) = %v, %v; want it removed (ErrNotFound)", name, changes(log), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Log(%q): %v", name, err)
	}
	var got []string
	for _, entry := range log {
		got = append(got, entry.Message)
	}
	if !slices.Equal(got, labels) {
		t.Errorf("Log(%q) keeps %q, want %q", name, got, labels)
	}
}

func mustPrune(t *testing.T, r cas.Refs, before time.Time) int {
	t.Helper()
	n, err := r.PruneLog(t.Context(), before)
	if err != nil {
		t.Fatalf("PruneLog(%v): %v", before, err)
	}
	return n
}

func testPruneLog(t *testing.T, e *refsEnv) {
	a, b, c := hv(1), hv(2), hv(3)
	cases := []pruneCase{
		{"live", []change{{0, a, "create"}, {a, b, "move"}, {b, c, "newest"}}, []string{"create", "newest"}, 1},
		{"single", []change{{0, a, "create"}}, []string{"create"}, 0},
		{"dead", []change{{0, a, "create"}, {a, 0, "delete"}}, nil, 2},
		{"reborn", []change{{0, a, "create"}, {a, 0, "delete"}, {0, b, "recreate"}, {b, c, "newest"}}, []string{"recreate", "newest"}, 2},
		{"reborn-newest", []change{{0, a, "create"}, {a, 0, "delete"}, {0, b, "recreate"}}, []string{"recreate"}, 2},
	}
	t.Run("cutoff in the future", func(t *testing.T) {
		e := e.fresh(t)
		want := 0
		for _, pc := range cases {
			buildLog(t, e.r, pc.name, pc.build)
			want += pc.removed
		}
		future := mustNow(t, e.now).Add(time.Hour)
		if n := mustPrune(t, e.r, future); n != want {
			t.Errorf("PruneLog(an hour ahead) = %d, want %d", n, want)
		}
		var live []string
		for _, pc := range cases {
			wantLabels(t, e.r, pc.name, pc.keep)
			if pc.keep != nil {
				live = append(live, pc.name)
			}
		}
		slices.Sort(live)
		if names := logNames(t, e.r); !slices.Equal(names, live) {
			t.Errorf("Logs = %q, want %q", names, live)
		}
		wantRef(t, e.r, "live", c)
		wantRef(t, e.r, "reborn", c)
		wantRef(t, e.r, "dead", 0)
		if n := mustPrune(t, e.r, future); n != 0 {
			t.Errorf("a second PruneLog = %d, want 0", n)
		}
	})
	t.Run("cutoff in the past", func(t *testing.T) {
		e := e.fresh(t)
		past := mustNow(t, e.now).Add(-time.Hour)
		for _, pc := range cases {
			buildLog(t, e.r, pc.name, pc.build)
		}
		if n := mustPrune(t, e.r, past); n != 0 {
			t.Errorf("PruneLog(an hour ago) = %d, want 0", n)
		}
		for _, pc := range cases {
			var all []string
			for _, c := range pc.build {
				all = append(all, c.Message)
			}
			wantLabels(t, e.r, pc.name, all)
		}
	})
	t.Run("cutoff between entries", func(t *testing.T) {
		e := e.fresh(t)
		r := e.r
		buildLog(t, r, "live", []change{{0, a, "old create"}, {a, b, "old move"}})
		buildLog(t, r, "deleted-late", []change{{0, a, "old create"}})
		buildLog(t, r, "deleted-early", []change{{0, a, "old create"}, {a, 0, "old delete"}})
		buildLog(t, r, "recreated", []change{{0, a, "old create"}, {a, 0, "old delete"}})
		var last int64
		for _, name := range []string{"live", "deleted-late", "deleted-early", "recreated"} {
			log := mustLog(t, r, name)
			last = max(last, log[len(log)-1].Time)
		}
		// A cutoff on a millisecond boundary after every old entry; the new
		// entries come later by the same clock, so none is older.
		cutoff := time.UnixMilli(waitPastMilli(t, e.now, last).UnixMilli())
		buildLog(t, r, "live", []change{{b, c, "new move"}, {c, a, "new newest"}})
		buildLog(t, r, "deleted-late", []change{{a, 0, "new delete"}})
		buildLog(t, r, "recreated", []change{{0, b, "new create"}})
		if n := mustPrune(t, r, cutoff); n != 1+1+2+2 {
			t.Errorf("PruneLog(cutoff) = %d, want 6", n)
		}
		wantLabels(t, r, "live", []string{"old create", "new move", "new newest"})
		wantLabels(t, r, "deleted-late", []string{"new delete"})
		wantLabels(t, r, "deleted-early", nil)
		wantLabels(t, r, "recreated", []string{"new create"})
	})
	t.Run("cutoff per prefix", func(t *testing.T) {
		e := e.fresh(t)
		r := e.r
		now := mustNow(t, e.now)
		past, future := now.Add(-time.Hour), now.Add(time.Hour)
		buildLog(t, r, "runs/a", []change{{0, a, "create"}, {a, b, "move"}, {b, c, "newest"}})
		buildLog(t, r, "runs/gone", []change{{0, a, "create"}, {a, 0, "delete"}})
		buildLog(t, r, "runs/keep/x", []change{{0, a, "create"}, {a, b, "move"}})
		buildLog(t, r, "runsx", []change{{0, a, "create"}, {a, b, "move"}})
		buildLog(t, r, "threads/y", []change{{0, a, "create"}, {a, b, "move"}})
		// runs/ is pruned up to an hour ahead, but runs/keep/ (the longer
		// prefix) and the rest only up to an hour ago: nothing of theirs.
		n, err := r.PruneLog(t.Context(), past,
			cas.PrefixCutoff{Prefix: "runs/keep/", Before: past}, cas.PrefixCutoff{Prefix: "runs/", Before: future})
		if err != nil || n != 1+2 {
			t.Errorf("PruneLog(runs/ an hour ahead, the rest an hour ago) = %d, %v; want 3", n, err)
		}
		wantLabels(t, r, "runs/a", []string{"create", "newest"})
		wantLabels(t, r, "runs/gone", nil)
		wantLabels(t, r, "runs/keep/x", []string{"create", "move"})
		wantLabels(t, r, "runsx", []string{"create", "move"})
		wantLabels(t, r, "threads/y", []string{"create", "move"})
		wantRef(t, r, "runs/a", c)
		// The default cutoff applies to the names no prefix matches.
		for _, name := range []string{"runs/keep/x", "runsx", "threads/y"} {
			buildLog(t, r, name, []change{{b, c, "newest"}})
		}
		if n, err := r.PruneLog(t.Context(), future, cas.PrefixCutoff{Prefix: "runs/", Before: past}); err != nil || n != 2 {
			t.Errorf("PruneLog(an hour ahead but runs/) = %d, %v; want 2 (the moves of runsx and threads/y)", n, err)
		}
		wantLabels(t, r, "runs/keep/x", []string{"create", "move", "newest"})
		wantLabels(t, r, "runsx", []string{"create", "newest"})
		wantLabels(t, r, "threads/y", []string{"create", "newest"})
	})
}

func mustImport(t *testing.T, r cas.Refs, name string, entries ...cas.LogEntry) {
	t.Helper()
	if err := r.ImportLog(t.Context(), name, entries); err != nil {
		t.Fatalf("ImportLog(%q, %d entries): %v", name, len(entries), err)
	}
}

func wantLog(t *testing.T, r cas.Refs, name string, want ...cas.LogEntry) {
	t.Helper()
	if got := mustLog(t, r, name); !slices.Equal(got, want) {
		t.Errorf("Log(%q) =\n\t%v\nwant\n\t%v", name, got, want)
	}
}

func testImportLog(t *testing.T, e *refsEnv) {
	a, b, c, d := hv(1), hv(2), hv(3), hv(4)
	t.Run("creates an absent ref", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t) - 3_600_000
		entries := []cas.LogEntry{
			{Old: 0, New: a, Time: base, Message: "create"},
			{Old: a, New: b, Time: base + 1000, Message: "move\nwith ünïcødé"},
		}
		mustImport(t, e.r, "imp/x", entries...)
		wantLog(t, e.r, "imp/x", entries...)
		wantRef(t, e.r, "imp/x", b)
		mustImport(t, e.r, "imp/x", entries...)
		wantLog(t, e.r, "imp/x", entries...)
		wantRef(t, e.r, "imp/x", b)
		mustCAS(t, e.r, "imp/x", b, c, "the imported ref moves on")
		if log := mustLog(t, e.r, "imp/x"); len(log) != 3 || log[2].Old != b || log[2].New != c {
			t.Errorf("after a move, Log = %v", log)
		}
	})
	t.Run("dedupes, and what links nowhere goes before the creation", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t) - 3_600_000
		e1 := cas.LogEntry{Old: 0, New: a, Time: base, Message: "one"}
		e2 := cas.LogEntry{Old: a, New: b, Time: base + 10, Message: "two"}
		e3 := cas.LogEntry{Old: b, New: c, Time: base + 20, Message: "three"}
		mustImport(t, e.r, "imp/y", e2, e1, e1, e3)
		wantLog(t, e.r, "imp/y", e1, e2, e3)
		wantRef(t, e.r, "imp/y", c)
		e2same := cas.LogEntry{Old: a, New: b, Time: base + 10, Message: "two, again"} // same time, other message
		e0 := cas.LogEntry{Old: 0, New: d, Time: base - 10, Message: "zero"}
		tie1 := cas.LogEntry{Old: c, New: a, Time: base + 30, Message: "tie first"}
		tie2 := cas.LogEntry{Old: a, New: d, Time: base + 30, Message: "tie second"}
		mustImport(t, e.r, "imp/y", e2same, e3, e0, tie1, tie2)
		// e0 is a creation: it goes first. e2same would break e1 -> e2, and
		// tie1 -> tie2 would move the ref: they link nowhere, so they go
		// before the current creation (e1), by time.
		wantLog(t, e.r, "imp/y", e0, e2same, tie1, tie2, e1, e2, e3)
		wantRef(t, e.r, "imp/y", c) // created by the first import, never moved
	})
	t.Run("a run keeps its order whatever its times", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t) - 3_600_000
		batch := func(tag string) []cas.LogEntry {
			var entries []cas.LogEntry
			for i := range 40 {
				entries = append(entries, cas.LogEntry{Old: hv(uint64(i)), New: hv(uint64(i + 1)), Time: base + int64(i*7%3), Message: fmt.Sprintf("%s %d", tag, i)})
			}
			return entries
		}
		first, second := batch("first"), batch("second")
		mustImport(t, e.r, "imp/stable", first...)
		wantRef(t, e.r, "imp/stable", hv(40))
		// The second run ends at the ref's value: it links at the end.
		mustImport(t, e.r, "imp/stable", second...)
		if got, want := mustLog(t, e.r, "imp/stable"), slices.Concat(first, second); !slices.Equal(got, want) {
			t.Errorf("Log = %v,\nwant %v\n(each run in its given order, the second after the first)", changes(got), changes(want))
		}
		wantRef(t, e.r, "imp/stable", hv(40))
	})
	t.Run("times that go backwards", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t)
		// A source whose clock stepped back twice.
		entries := []cas.LogEntry{
			{Old: 0, New: a, Time: base, Message: "create"},
			{Old: a, New: b, Time: base - 5000, Message: "after a step back"},
			{Old: b, New: c, Time: base - 10000, Message: "after another"},
		}
		mustImport(t, e.r, "imp/back", entries...)
		wantLog(t, e.r, "imp/back", entries...)
		wantRef(t, e.r, "imp/back", c)
		// Given out of order, the entries still go where they link.
		mustImport(t, e.r, "imp/shuffled", entries[2], entries[0], entries[1])
		wantLog(t, e.r, "imp/shuffled", entries...)
		wantRef(t, e.r, "imp/shuffled", c)
		// A live ref whose own clock is ahead of the source's: a detour
		// from and back to its value goes at its end, whatever its times.
		mustCAS(t, e.r, "imp/live", 0, a, "create")
		own := mustLog(t, e.r, "imp/live")[0]
		detour := []cas.LogEntry{{Old: a, New: d, Time: own.Time - 20000, Message: "out"}, {Old: d, New: a, Time: own.Time - 30000, Message: "back"}}
		mustImport(t, e.r, "imp/live", detour...)
		wantLog(t, e.r, "imp/live", own, detour[0], detour[1])
		wantRef(t, e.r, "imp/live", a)
	})
	t.Run("A->B->A moves", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t) - 3_600_000
		hist := []cas.LogEntry{
			{Old: 0, New: a, Time: base, Message: "create"},
			{Old: a, New: b, Time: base + 10, Message: "to b"},
			{Old: b, New: a, Time: base + 20, Message: "back to a"},
			{Old: a, New: b, Time: base + 30, Message: "to b again"},
			{Old: b, New: a, Time: base + 40, Message: "back again"},
		}
		mustImport(t, e.r, "imp/aba", hist...)
		wantLog(t, e.r, "imp/aba", hist...)
		wantRef(t, e.r, "imp/aba", a)
		mustImport(t, e.r, "imp/aba", hist[1:3]...) // already there
		wantLog(t, e.r, "imp/aba", hist...)
		// A detour a -> c -> a links wherever the log is at a; its time
		// picks the place.
		early := []cas.LogEntry{{Old: a, New: c, Time: base + 5, Message: "early out"}, {Old: c, New: a, Time: base + 6, Message: "early back"}}
		late := []cas.LogEntry{{Old: a, New: c, Time: base + 50, Message: "late out"}, {Old: c, New: a, Time: base + 60, Message: "late back"}}
		mid := []cas.LogEntry{{Old: a, New: d, Time: base + 25, Message: "mid out"}, {Old: d, New: a, Time: base + 26, Message: "mid back"}}
		// (Given together they would be one run: each returns to a.)
		for _, detour := range [][]cas.LogEntry{late, early, mid} {
			mustImport(t, e.r, "imp/aba", detour...)
		}
		wantLog(t, e.r, "imp/aba", hist[0], early[0], early[1], hist[1], hist[2], mid[0], mid[1], hist[3], hist[4], late[0], late[1])
		wantRef(t, e.r, "imp/aba", a)
	})
	t.Run("delete and recreate", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t) - 3_600_000
		gone := []cas.LogEntry{{Old: 0, New: a, Time: base + 10, Message: "create"}, {Old: a, New: 0, Time: base + 20, Message: "delete"}}
		mustImport(t, e.r, "imp/again", gone...)
		wantRef(t, e.r, "imp/again", 0)
		// A later incarnation, deleted and created once more, follows the
		// delete and restores the ref.
		later := []cas.LogEntry{{Old: 0, New: b, Time: base + 30, Message: "recreate"}, {Old: b, New: 0, Time: base + 40, Message: "delete again"}, {Old: 0, New: c, Time: base + 50, Message: "create again"}}
		mustImport(t, e.r, "imp/again", later...)
		wantLog(t, e.r, "imp/again", slices.Concat(gone, later)...)
		wantRef(t, e.r, "imp/again", c)
		// An earlier incarnation links before every creation; its time
		// puts it first.
		earlier := []cas.LogEntry{{Old: 0, New: d, Time: base, Message: "first life"}, {Old: d, New: 0, Time: base + 5, Message: "first death"}}
		mustImport(t, e.r, "imp/again", earlier...)
		wantLog(t, e.r, "imp/again", slices.Concat(earlier, gone, later)...)
		wantRef(t, e.r, "imp/again", c)
		// Live, a delete from elsewhere cannot go at the end (it would move
		// the ref): it goes where its new links, before the first creation.
		mustCAS(t, e.r, "imp/again", c, d, "own move")
		own := mustLog(t, e.r, "imp/again")[7]
		wrong := cas.LogEntry{Old: d, New: 0, Time: own.Time + 10, Message: "deleted elsewhere"}
		mustImport(t, e.r, "imp/again", wrong)
		wantLog(t, e.r, "imp/again", slices.Concat([]cas.LogEntry{wrong}, earlier, gone, later, []cas.LogEntry{own})...)
		wantRef(t, e.r, "imp/again", d)
	})
	t.Run("logs that diverged", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t) - 3_600_000
		common := cas.LogEntry{Old: 0, New: a, Time: base, Message: "create"}
		here := []cas.LogEntry{common, {Old: a, New: b, Time: base + 10, Message: "here"}}
		there := []cas.LogEntry{common, {Old: a, New: c, Time: base + 5, Message: "there"}, {Old: c, New: d, Time: base + 20, Message: "there again"}}
		// Live here: the other branch goes before the creation, the ref
		// stays.
		mustImport(t, e.r, "imp/div", here...)
		mustImport(t, e.r, "imp/div", there...)
		wantLog(t, e.r, "imp/div", there[1], there[2], here[0], here[1])
		wantRef(t, e.r, "imp/div", b)
		// Deleted here: the same, and the ref stays deleted.
		deleted := append(slices.Clone(here), cas.LogEntry{Old: b, New: 0, Time: base + 30, Message: "deleted here"})
		mustImport(t, e.r, "imp/div-gone", deleted...)
		mustImport(t, e.r, "imp/div-gone", there...)
		wantLog(t, e.r, "imp/div-gone", there[1], there[2], deleted[0], deleted[1], deleted[2])
		wantRef(t, e.r, "imp/div-gone", 0)
		// Both directions give one log per side, whatever the backend.
		mustImport(t, e.r, "imp/div-other", there...)
		mustImport(t, e.r, "imp/div-other", here...)
		wantLog(t, e.r, "imp/div-other", here[1], there[0], there[1], there[2])
		wantRef(t, e.r, "imp/div-other", d)
	})
	t.Run("never moves an existing ref", func(t *testing.T) {
		e := e.fresh(t)
		mustCAS(t, e.r, "imp/live", 0, c, "create")
		own := mustLog(t, e.r, "imp/live")[0]
		older := []cas.LogEntry{
			{Old: 0, New: a, Time: own.Time - 2000, Message: "old create"},
			{Old: a, New: 0, Time: own.Time - 1000, Message: "old delete"},
		}
		newer := cas.LogEntry{Old: c, New: d, Time: own.Time + 1000, Message: "elsewhere"}
		mustImport(t, e.r, "imp/live", append(older, newer)...)
		wantRef(t, e.r, "imp/live", c)
		// newer would move the ref: it goes before the creation.
		wantLog(t, e.r, "imp/live", older[0], older[1], newer, own)
	})
	t.Run("restores a deleted ref only from a newer entry", func(t *testing.T) {
		e := e.fresh(t)
		mustCAS(t, e.r, "imp/del", 0, a, "create")
		mustCAS(t, e.r, "imp/del", a, 0, "delete")
		own := mustLog(t, e.r, "imp/del")
		older := cas.LogEntry{Old: 0, New: b, Time: own[0].Time - 1000, Message: "older"}
		mustImport(t, e.r, "imp/del", older)
		wantRef(t, e.r, "imp/del", 0)
		wantLog(t, e.r, "imp/del", older, own[0], own[1])
		newer := cas.LogEntry{Old: 0, New: c, Time: own[1].Time + 1000, Message: "restored"}
		mustImport(t, e.r, "imp/del", newer)
		wantRef(t, e.r, "imp/del", c)
		wantLog(t, e.r, "imp/del", older, own[0], own[1], newer)
	})
	t.Run("a log ending in a delete creates nothing", func(t *testing.T) {
		e := e.fresh(t)
		base := e.nowMilli(t)
		entries := []cas.LogEntry{{Old: 0, New: a, Time: base, Message: "create"}, {Old: a, New: 0, Time: base + 1, Message: "delete"}}
		mustImport(t, e.r, "imp/gone", entries...)
		wantRef(t, e.r, "imp/gone", 0)
		wantLog(t, e.r, "imp/gone", entries...)
		if names := logNames(t, e.r); !slices.Equal(names, []string{"imp/gone"}) {
			t.Errorf("Logs = %q, want [imp/gone]", names)
		}
	})
	t.Run("empty", func(t *testing.T) {
		e := e.fresh(t)
		mustImport(t, e.r, "imp/empty")
		wantNoLog(t, e.r, "imp/empty")
		wantRef(t, e.r, "imp/empty", 0)
	})
	t.Run("clash", func(t *testing.T) {
		e := e.fresh(t)
		mustCAS(t, e.r, "Imp/z", 0, a, "create")
		base := e.nowMilli(t)
		err := e.r.ImportLog(t.Context(), "imp/z/deeper", []cas.LogEntry{{Old: 0, New: b, Time: base, Message: "create"}})
		wantConflict(t, err, cas.ConflictError{Name: "imp/z/deeper", Clash: "Imp/z"})
		wantNoLog(t, e.r, "imp/z/deeper")
		history := []cas.LogEntry{{Old: 0, New: b, Time: base, Message: "create"}, {Old: b, New: 0, Time: base + 1, Message: "delete"}}
		mustImport(t, e.r, "imp/Z", history...) // creates no ref, so no clash
		wantLog(t, e.r, "imp/Z", history...)
		wantRef(t, e.r, "imp/Z", 0)
	})
}

func testRefsCancelledContext(t *testing.T, e *refsEnv) {
	r := e.r
	mustCAS(t, r, "present", 0, hv(1), "create")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	// These must fail: they list.
	strict := func(t *testing.T, op string, seq func(yield func(string, error) bool)) {
		t.Helper()
		n := 0
		for item, err := range seq {
			n++
			if err == nil {
				t.Errorf("%s(cancelled ctx) listed %q", op, item)
			} else if !errors.Is(err, context.Canceled) {
				t.Errorf("%s(cancelled ctx) error = %v, want one wrapping context.Canceled", op, err)
			}
		}
		if n == 0 {
			t.Errorf("%s(cancelled ctx) yielded nothing, want the context's error", op)
		}
	}
	strict(t, "List", func(yield func(string, error) bool) {
		for ref, err := range r.List(ctx, "") {
			if !yield(ref.Name, err) {
				return
			}
		}
	})
	strict(t, "Logs", func(yield func(string, error) bool) {
		for name, err := range r.Logs(ctx) {
			if !yield(name, err) {
				return
			}
		}
	})

	// These may succeed; if they fail, the error is the context's and a
	// failed change changed nothing.
	lenient := func(op string, err error) bool {
		t.Helper()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s(cancelled ctx) error = %v, want nil or one wrapping context.Canceled", op, err)
		}
		return err != nil
	}
	_, err := r.Get(ctx, "present")
	lenient("Get", err)
	_, err = r.Log(ctx, "present")
	lenient("Log", err)
	if lenient("CompareAndSwap", r.CompareAndSwap(ctx, "present", hv(1), hv(2), "cancelled")) {
		wantRef(t, r, "present", hv(1))
		wantChanges(t, r, "present", change{0, hv(1), "create"})
	}
	if lenient("ImportLog", r.ImportLog(ctx, "imported", []cas.LogEntry{{New: hv(3), Time: 1, Message: "cancelled"}})) {
		wantNoLog(t, r, "imported")
	}
	_, err = r.PruneLog(ctx, time.Unix(0, 0))
	lenient("PruneLog", err)
}

// testReplace: Replace sets or deletes a ref whatever it holds, logging
// the value it had, and changes nothing when there is nothing to change.
func testReplace(t *testing.T, e *refsEnv) {
	r := e.r
	ctx := t.Context()
	replace := func(name string, h cas.Hash, msg string) {
		t.Helper()
		if err := r.Replace(ctx, name, h, msg); err != nil {
			t.Fatalf("Replace(%q, %s): %v", name, h, err)
		}
	}
	replace("n", hv(1), "set")
	wantRef(t, r, "n", hv(1))
	replace("n", hv(1), "same")
	replace("n", hv(2), "move")
	wantRef(t, r, "n", hv(2))
	replace("n", 0, "rm")
	wantRef(t, r, "n", 0)
	replace("n", 0, "rm again")
	wantChanges(t, r, "n", change{0, hv(1), "set"}, change{hv(1), hv(2), "move"}, change{hv(2), 0, "rm"})
	replace("never", 0, "rm")
	wantNoLog(t, r, "never")
	if refs := list(t, r, ""); len(refs) != 0 {
		t.Errorf("List = %v, want none", refs)
	}

	mustCAS(t, r, "Case", 0, hv(3), "create")
	wantConflict(t, r.Replace(ctx, "case", hv(4), "x"), cas.ConflictError{Name: "case", Clash: "Case"})
	wantConflict(t, r.Replace(ctx, "case/x", hv(4), "x"), cas.ConflictError{Name: "case/x", Clash: "Case"})
	wantRef(t, r, "Case", hv(3))
	wantNoLog(t, r, "case")
	if err := r.Replace(ctx, "../x", hv(1), ""); !errors.Is(err, cas.ErrInvalidRefName) {
		t.Errorf("Replace(../x) = %v, want ErrInvalidRefName", err)
	}
}

// testReplaceMissingCaseClash: a missing ref (dropped behind the refs'
// back) whose name another ref took since, in another case, cannot be
// restored (the name clashes), but can be cleared: Replace to zero records
// it as deleted, leaving the other ref alone, and its log is then pruned
// like any deleted ref's. Refs that do not implement [RefDropper] skip it.
func testReplaceMissingCaseClash(t *testing.T, e *refsEnv) {
	d, ok := e.r.(RefDropper)
	if !ok {
		t.Skipf("%T does not implement castest.RefDropper", e.r)
	}
	r := e.r
	ctx := t.Context()
	mustCAS(t, r, "foo", 0, hv(1), "create")
	if !d.DropRef("foo") {
		t.Fatal("DropRef(foo) found no ref")
	}
	wantRef(t, r, "foo", 0)
	// Foo holds foo's value: foo's entries must not read as Foo's.
	mustCAS(t, r, "Foo", 0, hv(1), "create other")
	wantConflict(t, r.Replace(ctx, "foo", hv(1), "restore"), cas.ConflictError{Name: "foo", Clash: "Foo"})
	wantChanges(t, r, "foo", change{0, hv(1), "create"})
	if err := r.Replace(ctx, "foo", 0, "rm --force"); err != nil {
		t.Fatalf("Replace(foo, 0) of a missing ref whose path Foo took: %v", err)
	}
	wantChanges(t, r, "foo", change{0, hv(1), "create"}, change{hv(1), 0, "rm --force"})
	wantRef(t, r, "Foo", hv(1))
	wantChanges(t, r, "Foo", change{0, hv(1), "create other"})
	// Again: nothing more to record.
	if err := r.Replace(ctx, "foo", 0, "rm again"); err != nil {
		t.Fatalf("Replace(foo, 0) again: %v", err)
	}
	wantChanges(t, r, "foo", change{0, hv(1), "create"}, change{hv(1), 0, "rm --force"})
	// Foo moves on and its log stays its own.
	mustCAS(t, r, "Foo", hv(1), hv(2), "move")
	wantRef(t, r, "Foo", hv(2))
	wantChanges(t, r, "Foo", change{0, hv(1), "create other"}, change{hv(1), hv(2), "move"})
	wantChanges(t, r, "foo", change{0, hv(1), "create"}, change{hv(1), 0, "rm --force"})
	// foo is deleted now: pruning removes its log whole, and keeps Foo's.
	if n := mustPrune(t, r, mustNow(t, e.now).Add(time.Hour)); n != 2 {
		t.Errorf("PruneLog(an hour ahead) = %d, want foo's 2 entries", n)
	}
	wantNoLog(t, r, "foo")
	wantChanges(t, r, "Foo", change{0, hv(1), "create other"}, change{hv(1), hv(2), "move"})
}
