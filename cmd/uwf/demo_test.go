package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/pgtest"
)

// demoParts are the labels of uwf demo's parts, in order.
var demoParts = []string{
	"== 1. ",
	"== 2. uwf workflow put examples/review-loop.yaml\n",
	"== 3. uwf thread run review-loop -p ",
	"== 4. uwf thread read ",
	"== 5. uwf thread fork ",
	"== 6. uwf workflow put examples/parallel-review.yaml\n",
	"== 7. uwf thread run parallel-review -p ",
	"== 8. uwf thread read ",
	"== 9. uwf thread list\n",
	"== 10. uwf cas gc --dry-run\n",
	"== 11. uwf cas fsck\n",
}

var demoThread = regexp.MustCompile(`(?m)^== 4\. uwf thread read ([0-9A-Z]{26})$`)

// checkDemo checks the demo's output and the store it left in e's home:
// every part is there, the thread and its fork end done, fsck is clean.
func checkDemo(t *testing.T, e *env, out string) {
	t.Helper()
	at := 0
	for _, p := range demoParts {
		i := strings.Index(out[at:], p)
		if i < 0 {
			t.Fatalf("uwf demo: part %q missing or out of order:\n%s", p, out)
		}
		at += i + len(p)
	}
	for _, want := range []string{
		"\n6 done: Approved: ",                            // the thread ends done
		"reviewer (synth) rejected",                       // after one rejection
		"reviewer (synth) approved",                       // then an approval
		"would delete:       0\n",                         // nothing to collect
		": 0 problems\n",                                  // fsck is clean
		"## 0 · start\n\nAdd a --json flag to the report", // the thread as read
		"· review · join of 2 branch(es) (parallel) ·",    // the parallel stage, read
		"- branch security-reviewer (done): thread ",      // a branch inline
	} {
		if !strings.Contains(out, want) {
			t.Errorf("uwf demo: output lacks %q:\n%s", want, out)
		}
	}
	m := demoThread.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("uwf demo: no thread id in part 4:\n%s", out)
	}
	if st, _ := e.status(m[1]); st != "done" {
		t.Errorf("demo thread %s: status %s, want done", m[1], st)
	}
	var list []struct{ ID, Status string }
	e.okJSON(&list, "thread", "list")
	if len(list) != 3 || list[0].Status != "done" || list[1].Status != "done" || list[2].Status != "done" {
		t.Errorf("after uwf demo, thread list = %+v; want the thread, its fork and the parallel-review thread (not its branches), all done", list)
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck after uwf demo: %q", out)
	}
	if out := e.ok("", "workflow", "list"); !strings.HasPrefix(out, "parallel-review ") || !strings.Contains(out, "\nreview-loop ") {
		t.Errorf("workflow list after uwf demo: %q", out)
	}
}

// TestDemo runs uwf demo in a given home.
func TestDemo(t *testing.T) {
	e := newEnv(t)
	out := e.ok("", "demo", "--home", e.home)
	if !strings.HasPrefix(out, "== 1. home: "+e.home+"\nstore: "+filepath.Join(e.home, "store")+"\n") {
		t.Errorf("uwf demo --home: first part:\n%s", out)
	}
	checkDemo(t, e, out)
	if r := e.run("", "demo", "--json"); r.code != 2 || !strings.Contains(r.stderr, "no --json output") {
		t.Errorf("uwf demo --json: %v", r)
	}
}

var freshHome = regexp.MustCompile(`^== 1\. a fresh home: (\S+) \(pass --home DIR to use another\)\n`)

// TestDemoFreshHome runs uwf demo with no home given: it makes a fresh
// temporary home and says where, and never touches the user's home.
func TestDemoFreshHome(t *testing.T) {
	e := newEnv(t)
	tmp := t.TempDir()
	userHome := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HOME", userHome)
	t.Setenv("UWF_HOME", "")
	out := e.ok("", "demo")
	m := freshHome.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("uwf demo without a home does not name a fresh one:\n%s", out)
	}
	dir := m[1]
	t.Cleanup(func() { os.RemoveAll(dir) })
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "uwf-demo-") {
		t.Errorf("uwf demo made its home at %s, want a uwf-demo-* folder in %s", dir, tmp)
	}
	if !strings.Contains(out, "\n      uwf --home "+dir+" serve ") {
		t.Errorf("the demo does not say how to see its threads in the viewer:\n%s", out)
	}
	if !strings.Contains(out, "\nNext: uwf --home "+dir+" thread show ") {
		t.Errorf("uwf demo does not say how to look further:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(userHome, ".uncaged")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("uwf demo touched the user's home: %v", err)
	}
	e.home = dir
	t.Setenv("UWF_HOME", dir)
	checkDemo(t, e, out)
}

// nextCommand returns the arguments of the demo's "Next:" line that runs
// verb (say "thread show"), its words unquoted.
func nextCommand(t *testing.T, out, verb string) []string {
	t.Helper()
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(strings.TrimPrefix(line, "Next:"))
		if !strings.HasPrefix(line, "uwf ") || !strings.Contains(line, " "+verb+" ") {
			continue
		}
		var args []string
		for _, w := range strings.Fields(line)[1:] {
			args = append(args, strings.TrimSuffix(strings.TrimPrefix(w, "'"), "'"))
		}
		return args
	}
	t.Fatalf("uwf demo: no next command %q in:\n%s", verb, out)
	return nil
}

// TestDemoNext checks the demo's closing commands for each kind of store:
// the same home, the same --store when one was given, its password hidden,
// quoted for a shell.
func TestDemoNext(t *testing.T) {
	const id, fork = "01JGJFGR4E0000000000000001", "01JGJFGR4E0000000000000002"
	at := cas.Hash(1)
	for _, tc := range []struct {
		name, home, store string
		want, notWant     []string
	}{
		{"default store", "/h", "", []string{"Next: uwf --home /h thread show " + id + "\n", "      uwf --home /h serve "}, []string{"--store", "xxxxx"}},
		{"disk store", "/h", "/elsewhere/store", []string{"Next: uwf --home /h --store /elsewhere/store thread show " + id + "\n", "uwf --home /h --store /elsewhere/store thread steps " + fork + "\n"}, []string{"xxxxx"}},
		{"a home with a space", "/my home", "", []string{"Next: uwf --home '/my home' thread show "}, nil},
		{"postgres", "/h", "postgres://uwf@db:5432/uwf?sslmode=disable&schema=x", []string{"uwf --home /h --store 'postgres://uwf@db:5432/uwf?sslmode=disable&schema=x' cas walk --tree " + at.String() + "\n"}, []string{"xxxxx"}},
		{"postgres with a password", "/h", "postgres://uwf:s3cretpw@db/uwf?sslpassword=other-secret", []string{"--store 'postgres://uwf:xxxxx@db/uwf?sslpassword=xxxxx' thread show ", "put yours back, or set UWF_STORE"}, []string{"s3cretpw", "other-secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := demoNext(tc.home, tc.store, id, fork, at)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("demoNext lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("demoNext holds %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestDemoStore runs uwf demo with --store naming a store outside the home
// (on disk, and on PostgreSQL when UWF_TEST_POSTGRES is set): the next
// commands it prints find the demo's thread.
func TestDemoStore(t *testing.T) {
	for name, store := range map[string]func(t *testing.T) string{
		"disk": func(t *testing.T) string { return filepath.Join(t.TempDir(), "elsewhere") },
		"postgres": func(t *testing.T) string {
			base, sep := pgtest.URL(t), "?"
			if strings.Contains(base, "?") {
				sep = "&"
			}
			return base + sep + "schema=" + pgtest.Schema(t, "uwf_demo_")
		},
	} {
		t.Run(name, func(t *testing.T) {
			store := store(t)
			e := newEnv(t)
			out := e.ok("", "demo", "--home", e.home, "--store", store)
			args := nextCommand(t, out, "thread show")
			if !slices.Contains(args, "--store") {
				t.Fatalf("uwf demo --store: the next commands lack --store:\n%s", out)
			}
			m := demoThread.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("uwf demo: no thread id:\n%s", out)
			}
			if show := e.ok("", args...); !strings.Contains(show, "status:   done\n") {
				t.Errorf("%s: %s", shellQuote(args), show)
			}
			if r := e.run("", "thread", "show", m[1]); r.code != 3 {
				t.Errorf("the demo's thread is in the home's own store too: %v", r)
			}
		})
	}
}
