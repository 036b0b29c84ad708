package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
)

// reviewLoop is the specification's reference workflow.
var reviewLoop = func() string {
	b, err := examples.FS.ReadFile("review-loop.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// badWorkflow has several problems, each reported at its line and column.
const badWorkflow = `name: bad
roles:
  planner:
    goal: Plan.
    frontmatter:
      type: object
      properties:
        status: { const: done }
        steps: { type: array }
      required: [status]
  helper:
    frontmatter:
      type: object
      properties:
        status: { const: done }
graph:
  $START: { new: { role: planner, prompt: "Plan." } }
  planner:
    done: { role: develper, prompt: "Do {{ stepz }}" }
    maybe: { role: $END, prompt: "" }
`

var problemLine = regexp.MustCompile(`^bad\.yaml:\d+:\d+: \S`)

// TestWorkflowGolden runs the workflow commands through three versions of
// a workflow, a removal and rollbacks, and compares everything printed with
// testdata/golden/workflow.txt.
func TestWorkflowGolden(t *testing.T) {
	e := newEnv(t)
	tr := &transcript{e: e}
	e.write("review-loop.yaml", reviewLoop)
	e.write("bad.yaml", badWorkflow)

	tr.run("", "workflow", "validate", "review-loop.yaml")
	tr.run("", "workflow", "validate", "--json", "review-loop.yaml")
	r := tr.run("", "workflow", "validate", "bad.yaml")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("validate bad.yaml: %v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) < 4 {
		t.Errorf("validate bad.yaml reported %d problems, want every one:\n%s", len(lines), r.stderr)
	}
	for _, l := range lines {
		if !problemLine.MatchString(l) {
			t.Errorf("validate bad.yaml: stderr line %q is not file:line:col: message", l)
		}
	}
	tr.run("", "workflow", "put", "bad.yaml")
	if e.objects() != nil {
		t.Errorf("validate and a failed put created the store")
	}

	v1 := firstField(tr.run("", "workflow", "put", "review-loop.yaml").stdout)
	tr.run("", "workflow", "put", "review-loop.yaml")
	tr.run("", "workflow", "put", "--json", "review-loop.yaml")
	e.clock.Advance(time.Minute)
	e.write("review-loop.yaml", strings.Replace(reviewLoop, "until approved", "until approved (v2)", 1))
	tr.run("", "workflow", "put", "--json", "review-loop.yaml")
	e.clock.Advance(time.Minute)
	e.write("review-loop.yaml", strings.Replace(reviewLoop, "maxSteps: 20", "maxSteps: 10", 1))
	v3 := firstField(tr.run("", "workflow", "put", "review-loop.yaml").stdout)
	e.write("develop.yaml", mustExample("develop.yaml"))
	tr.run("", "workflow", "put", "develop.yaml")

	tr.run("", "workflow", "show", "review-loop")
	tr.run("", "workflow", "show", v1)
	tr.run("", "workflow", "show", "--json", strings.ToLower(v3))
	tr.run("", "workflow", "list")
	tr.run("", "workflow", "list", "--json")
	tr.run("", "workflow", "history", "review-loop")
	tr.run("", "workflow", "history", "--json", "review-loop")

	e.clock.Advance(time.Minute)
	tr.run("", "workflow", "rollback", "review-loop") // to v2
	tr.run("", "workflow", "rollback", "review-loop") // back to v3, like cd -
	tr.run("", "workflow", "rollback", "review-loop", v1)
	tr.run("", "workflow", "rollback", "--json", "review-loop", v1) // already there
	tr.run("", "workflow", "rollback", "review-loop", "0000000000001")
	tr.run("", "workflow", "rm", "review-loop")
	tr.run("", "workflow", "rm", "--json", "develop")
	tr.run("", "workflow", "list")
	tr.run("", "workflow", "list", "--json")
	tr.run("", "workflow", "show", "review-loop")
	tr.run("", "workflow", "rm", "review-loop")
	tr.run("", "workflow", "rollback", "--json", "review-loop") // restores v1, the last version
	tr.run("", "workflow", "history", "review-loop")
	tr.run("", "workflow", "show", v1)
	tr.run("", "cas", "ref", "list", "workflows/")
	tr.run("", "cas", "fsck")
	golden(t, "workflow.txt", e.masked(tr.b.String()))
}

func mustExample(name string) string {
	b, err := examples.FS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestWorkflowJSON checks the --json output of every workflow command
// decodes into the documented fields.
func TestWorkflowJSON(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	var put struct {
		Name     string  `json:"name"`
		Hash     string  `json:"hash"`
		Previous *string `json:"previous"`
		Changed  bool    `json:"changed"`
	}
	e.okJSON(&put, "workflow", "put", "review-loop.yaml")
	if put.Name != "review-loop" || len(put.Hash) != 13 || put.Previous != nil || !put.Changed {
		t.Errorf("put --json = %+v", put)
	}
	e.okJSON(&put, "workflow", "put", "review-loop.yaml")
	if put.Previous == nil || *put.Previous != put.Hash || put.Changed {
		t.Errorf("put --json unchanged = %+v", put)
	}
	var val struct {
		File string `json:"file"`
		OK   bool   `json:"ok"`
	}
	e.okJSON(&val, "workflow", "validate", "review-loop.yaml")
	if val.File != "review-loop.yaml" || !val.OK {
		t.Errorf("validate --json = %+v", val)
	}
	var show struct {
		Name    string         `json:"name"`
		Hash    string         `json:"hash"`
		Payload map[string]any `json:"payload"`
	}
	e.okJSON(&show, "workflow", "show", "review-loop")
	if show.Name != "review-loop" || show.Hash != put.Hash || show.Payload["maxSteps"] != 20.0 {
		t.Errorf("show --json = %+v", show)
	}
	var list []struct {
		Name        string `json:"name"`
		Hash        string `json:"hash"`
		Updated     int64  `json:"updated"`
		Description string `json:"description"`
	}
	e.okJSON(&list, "workflow", "list")
	if len(list) != 1 || list[0].Hash != put.Hash || list[0].Updated != epoch.UnixMilli() || list[0].Description == "" {
		t.Errorf("list --json = %+v", list)
	}
	var hist []struct {
		Hash    string `json:"hash"`
		Old     string `json:"old"`
		Time    int64  `json:"time"`
		Message string `json:"message"`
	}
	e.okJSON(&hist, "workflow", "history", "review-loop")
	if len(hist) != 1 || hist[0].Hash != put.Hash || hist[0].Old != "0000000000000" || hist[0].Message != "workflow put review-loop" {
		t.Errorf("history --json = %+v", hist)
	}
	var rm struct {
		Name    string `json:"name"`
		Removed bool   `json:"removed"`
	}
	e.okJSON(&rm, "workflow", "rm", "review-loop")
	if rm.Name != "review-loop" || !rm.Removed {
		t.Errorf("rm --json = %+v", rm)
	}
	var rb struct {
		Hash string `json:"hash"`
	}
	e.okJSON(&rb, "workflow", "rollback", "review-loop")
	if rb.Hash != put.Hash {
		t.Errorf("rollback --json = %+v, want %s", rb, put.Hash)
	}
	// Empty lists are [], not null.
	e.ok("", "workflow", "rm", "review-loop")
	if out := e.okJSON(nil, "workflow", "list"); out != "[]\n" {
		t.Errorf("list --json with no workflows = %q", out)
	}
}

// TestWorkflowErrors checks the exit statuses of workflow commands that
// fail: not found 3, bad files 1, name clashes 4.
func TestWorkflowErrors(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	e.write("clash.yaml", strings.Replace(reviewLoop, "name: review-loop", "name: Review-Loop", 1))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"workflow", "show", "nope"}, 3, `"nope"`},
		{[]string{"workflow", "show", "0000000000001"}, 3, "0000000000001"},
		{[]string{"workflow", "history", "nope"}, 3, "nope has no history"},
		{[]string{"workflow", "rollback", "nope"}, 3, "nope has no history"},
		{[]string{"workflow", "rm", "nope"}, 3, "no workflow has that name"},
		{[]string{"workflow", "rollback", "review-loop"}, 3, "no earlier version"},
		{[]string{"workflow", "put", "missing.yaml"}, 1, "missing.yaml"},
		{[]string{"workflow", "validate", "missing.yaml"}, 1, "missing.yaml"},
		{[]string{"workflow", "put", "clash.yaml"}, 4, "workflows/review-loop"},
		{[]string{"thread", "start", "nope", "-p", "x"}, 3, `workflow "nope": no such file, no workflow registered by that name, not a hash`},
		{[]string{"thread", "run", "nope", "-p", "x", "--agent", "synth"}, 3, `workflow "nope"`},
	} {
		r := e.run("", tc.args...)
		if r.code != tc.code || r.stdout != "" || !strings.HasPrefix(r.stderr, "uwf: ") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("uwf %q: %v\nwant exit %d and a message containing %q", tc.args, r, tc.code, tc.want)
		}
	}
	// A content node is not a workflow: exit 1.
	h := e.okHash("", "cas", "put-text", "x")
	if r := e.run("", "workflow", "show", h.String()); r.code != 1 || !strings.Contains(r.stderr, "not a workflow node") {
		t.Errorf("workflow show <content node>: %v", r)
	}
}

// TestWorkflowListPastDamage: a workflow whose ref cannot be read, or
// whose node is missing or corrupt, is left out of workflow list and named
// on stderr; the others are printed (text and --json), and the exit status
// is 1. After the damage is repaired, the list is whole again.
func TestWorkflowListPastDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(e *env, ref string, node cas.Hash)
		want   string // on stderr, besides the workflow's name
	}{
		{"bad ref", func(e *env, ref string, _ cas.Hash) { e.flipBits(e.refPath(ref)) }, "cannot be read"},
		{"truncated ref", func(e *env, ref string, _ cas.Hash) { e.truncate(e.refPath(ref)) }, "cannot be read"},
		{"missing node", func(e *env, _ string, node cas.Hash) { e.remove(e.objectPath(node)) }, "not found"},
		{"corrupt node", func(e *env, _ string, node cas.Hash) { e.flipBits(e.objectPath(node)) }, "corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			hashes := map[string]cas.Hash{}
			for _, name := range []string{"alpha", "beta", "gamma"} {
				e.write(name+".yaml", strings.Replace(reviewLoop, "name: review-loop", "name: "+name, 1))
				out := e.ok("", "workflow", "put", name+".yaml")
				h, err := cas.ParseHash(strings.Fields(out)[0])
				if err != nil {
					t.Fatal(err)
				}
				hashes[name] = h
			}
			whole := e.ok("", "workflow", "list")
			wholeJSON := e.ok("", "workflow", "list", "--json")
			data := e.readFile(e.objectPath(hashes["beta"]))
			tc.damage(e, "workflows/beta", hashes["beta"])

			var rest []string
			for _, l := range strings.SplitAfter(whole, "\n") {
				if !strings.HasPrefix(l, "beta ") {
					rest = append(rest, l)
				}
			}
			r := e.run("", "workflow", "list")
			if r.code != 1 || r.stdout != strings.Join(rest, "") ||
				!strings.Contains(r.stderr, "beta") || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "alpha") {
				t.Errorf("workflow list with beta damaged: %v\nwant exit 1, stdout:\n%s\nand stderr naming beta (%q)", r, strings.Join(rest, ""), tc.want)
			}
			r = e.run("", "workflow", "list", "--json")
			if r.code != 1 || strings.Contains(r.stdout, "beta") || !strings.Contains(r.stdout, `"name":"alpha"`) || !strings.Contains(r.stdout, `"name":"gamma"`) {
				t.Errorf("workflow list --json with beta damaged: %v", r)
			}

			// Repair: the ref from its log, the node from its bytes.
			if strings.Contains(tc.name, "ref") {
				e.ok("", "cas", "ref", "restore", "workflows/beta")
			} else {
				e.writeFile(e.objectPath(hashes["beta"]), data)
			}
			if got := e.ok("", "workflow", "list", "--json"); got != wholeJSON {
				t.Errorf("workflow list --json after the repair:\n%s\nwant:\n%s", got, wholeJSON)
			}
		})
	}
}

// TestChildWorkflowNotRegistered: a workflow whose role runs a workflow
// not registered yet is refused (exit 1) with a problem line that says so
// in a person's words, and registers once the child is put.
func TestChildWorkflowNotRegistered(t *testing.T) {
	e := newEnv(t)
	e.write("solve-issue.yaml", mustExample("solve-issue.yaml"))
	e.write("develop.yaml", mustExample("develop.yaml"))
	r := e.run("", "workflow", "put", "solve-issue.yaml")
	want := regexp.MustCompile(`^solve-issue\.yaml:\d+:\d+: roles\.developer\.workflow: workflow develop is not registered \(register it first: uwf workflow put <file>\)\n$`)
	if r.code != 1 || !want.MatchString(r.stderr) {
		t.Errorf("put solve-issue.yaml before develop.yaml: %v\nwant exit 1 and one problem line matching %s", r, want)
	}
	e.ok("", "workflow", "put", "develop.yaml")
	e.ok("", "workflow", "put", "solve-issue.yaml")
}

// TestWorkflowWarnings: validate and put print a warning for a prompt
// field the schema does not require, on stderr, and still succeed; with
// --json the warnings are validate's list.
func TestWorkflowWarnings(t *testing.T) {
	e := newEnv(t)
	const opt = `name: opt
roles:
  a:
    frontmatter:
      type: object
      properties: {status: {const: done}, x: {type: string}}
      required: [status]
graph:
  $START: { new: { role: a, prompt: go } }
  a: { done: { role: $END, prompt: "{{ x }}" } }
`
	e.write("opt.yaml", opt)
	const want = `opt.yaml:10:36: warning: graph.a.done.prompt: field "x" is optional: no "required" of the a schema lists "x"`
	r := e.run("", "workflow", "validate", "opt.yaml")
	if r.code != 0 || r.stdout != "opt.yaml: ok\n" || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("validate: %v\nwant exit 0, ok, and on stderr %q", r, want)
	}
	r = e.run("", "workflow", "validate", "--json", "opt.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, `"warnings":["opt.yaml:10:36: graph.a.done.prompt: field \"x\" is optional`) || r.stderr != "" {
		t.Errorf("validate --json: %v", r)
	}
	r = e.run("", "workflow", "put", "opt.yaml")
	if r.code != 0 || !strings.HasSuffix(r.stdout, " opt\n") || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("put: %v", r)
	}
	// A file without warnings: nothing on stderr, an empty list.
	e.write("opt.yaml", strings.Replace(opt, "required: [status]", "required: [status, x]", 1))
	if r = e.run("", "workflow", "validate", "--json", "opt.yaml"); r.code != 0 || !strings.Contains(r.stdout, `"warnings":[]`) || r.stderr != "" {
		t.Errorf("validate --json, no warning: %v", r)
	}
}
