package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestComposeCLI runs a parallel stage with a failing branch through the
// CLI: run fails (exit 1) naming it, thread list shows the branches under
// their parent (not as threads of their own), thread show and --json name
// them, and once the agent works a step joins and the thread ends done.
func TestComposeCLI(t *testing.T) {
	e := newEnv(t)
	agent := e.script("agent.sh", `cat >/dev/null
if [ "$UWF_ROLE" = flaky ] && [ ! -e "$FIXED" ]; then echo "flaky broke" >&2; exit 3; fi
printf -- '---\nstatus: ok\n---\n'
`)
	fixed := e.dir + "/fixed"
	e.writeConfig("agents:\n  sh:\n    command: " + agent + "\n    env: {FIXED: " + fixed + "}\ndefaultAgent: sh\n")
	e.write("w.yaml", `name: fan
roles:
  both: { parallel: [steady, flaky] }
  steady: { frontmatter: { properties: { status: { const: ok } }, required: [status] } }
  flaky: { frontmatter: { properties: { status: { const: ok } }, required: [status] } }
graph:
  $START: { new: { role: both, prompt: Go. } }
  both: { ok: { role: $END } }
`)
	e.ok("", "workflow", "put", "w.yaml")
	r := e.run("", "thread", "run", "fan", "-p", "task")
	if r.code != 1 || !strings.Contains(r.stderr, "branch flaky") || !strings.Contains(r.stderr, "flaky broke") {
		t.Fatalf("thread run: %+v", r)
	}
	id := regexp.MustCompile(`thread ([0-9A-Z]{26})`).FindStringSubmatch(r.stdout + r.stderr)
	if id == nil {
		t.Fatalf("no thread id in %q", r.stdout+r.stderr)
	}
	list := e.ok("", "thread", "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 3 ||
		!strings.HasPrefix(lines[0], id[1]+" active") ||
		!strings.Contains(lines[1], "  branch steady: ") || !strings.HasSuffix(lines[1], " done") ||
		!strings.Contains(lines[2], "  branch flaky: ") || !strings.HasSuffix(lines[2], " active") {
		t.Errorf("thread list:\n%s", list)
	}
	show := e.ok("", "thread", "show", id[1])
	if !strings.Contains(show, "head:     ") || !strings.Contains(show, "(call)") || !strings.Contains(show, "branch:   flaky: thread ") {
		t.Errorf("thread show:\n%s", show)
	}
	var sj struct {
		Branches []struct{ Key, Thread, Status string }
	}
	e.okJSON(&sj, "thread", "show", id[1])
	if len(sj.Branches) != 2 || sj.Branches[0].Key != "steady" || sj.Branches[0].Status != "done" || sj.Branches[1].Status != "active" {
		t.Errorf("thread show --json branches = %+v", sj.Branches)
	}
	var child struct {
		Parent struct{ Thread, Key string }
	}
	e.okJSON(&child, "thread", "show", sj.Branches[1].Thread)
	if child.Parent.Thread != id[1] || child.Parent.Key != "flaky" {
		t.Errorf("the branch's parent = %+v", child.Parent)
	}
	e.write("fixed", "")
	e.ok("", "thread", "step", id[1], "-n", "0")
	if st, _ := e.status(id[1]); st != "done" {
		t.Errorf("after the fix: status %s", st)
	}
	steps := e.ok("", "thread", "steps", id[1])
	if !strings.Contains(steps, " call both (parallel)\n") || !strings.Contains(steps, " join both ok\n") {
		t.Errorf("thread steps:\n%s", steps)
	}
	// After the join: show counts and lists both children (joined), and
	// list --parent lists them as threads, in the call's order.
	show = e.ok("", "thread", "show", id[1])
	if !strings.Contains(show, "children: 2\n") || !strings.Contains(show, "  "+sj.Branches[0].Thread+" done      parallel both/steady at depth 1\n") ||
		!strings.Contains(show, "  "+sj.Branches[1].Thread+" done      parallel both/flaky at depth 1\n") {
		t.Errorf("thread show after the join:\n%s", show)
	}
	var joined struct {
		ChildCount int
		Children   []struct {
			Thread, Status, CallRole, Mode string
			Joined                         bool
		}
	}
	e.okJSON(&joined, "thread", "show", id[1])
	if joined.ChildCount != 2 || len(joined.Children) != 2 || !joined.Children[1].Joined || joined.Children[1].Thread != sj.Branches[1].Thread || joined.Children[1].Mode != "parallel" {
		t.Errorf("thread show --json children = %+v", joined)
	}
	kids := e.ok("", "thread", "list", "--parent", id[1])
	if lines := strings.Split(strings.TrimSpace(kids), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], sj.Branches[0].Thread+" done") || !strings.HasPrefix(lines[1], sj.Branches[1].Thread+" done") {
		t.Errorf("thread list --parent:\n%s", kids)
	}
	if kids := e.ok("", "thread", "list", "--parent", id[1], "--offset", "1"); !strings.HasPrefix(kids, sj.Branches[1].Thread+" done") || strings.Count(kids, "\n") != 1 {
		t.Errorf("thread list --parent --offset 1:\n%s", kids)
	}
	if r := e.run("", "thread", "list", "--parent", "nope"); r.code != 2 {
		t.Errorf("thread list --parent nope: %+v", r)
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck: %q", out)
	}
}
