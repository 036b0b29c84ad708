package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildTestAgent builds testdata/agent into a temporary folder and returns
// the program's path.
func buildTestAgent(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the test agent:", err)
	}
	bin := filepath.Join(t.TempDir(), "agent")
	cmd := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(filepath.Dir(goldenDir), "agent")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test agent: %v\n%s", err, out)
	}
	return bin
}

// script writes an executable shell script into e's working folder and
// returns its path.
func (e *env) script(name, body string) string {
	e.t.Helper()
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// content returns the text of the content node h.
func (e *env) content(h string) string {
	e.t.Helper()
	var n struct{ Payload string }
	e.okJSON(&n, "cas", "get", h)
	return n.Payload
}

// stepJSON is "step show --json", in part.
type stepJSON struct {
	Hash, Role, Agent, Output, OutputType, EdgePrompt, Prompt, Raw, Stderr string
	Value                                                                  map[string]any
	ExitCode                                                               int
	Attempts                                                               []string
}

// TestExternalAgent runs the review loop with an agent program configured
// as the default agent: the program receives the assembled prompts and the
// UWF_ variables, its answers become typed outputs, and the thread ends
// done after one rejection.
func TestExternalAgent(t *testing.T) {
	bin := buildTestAgent(t)
	e := newEnv(t)
	log := t.TempDir()
	e.writeConfig("agents:\n  scripted:\n    command: " + bin + "\n    env: {AGENT_LOG: " + log + "}\n    timeout: 1m\ndefaultAgent: scripted\n")
	e.write("review-loop.yaml", reviewLoop)

	r := e.run("", "thread", "run", "review-loop.yaml", "-p", "Add a --json flag to the report command")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("thread run: %v", r)
	}
	id := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "thread "))
	if st, _ := e.status(id); st != "done" {
		t.Fatalf("thread %s: status %s, want done\n%v", id, st, r)
	}

	// The chain: each role's step by the scripted agent, one rejection.
	var chain []string
	for _, f := range e.stepsOf(id) {
		chain = append(chain, strings.Join(f[2:], " "))
	}
	want := []string{
		"start",
		"step planner (scripted) done",
		"step developer (scripted) done",
		"step reviewer (scripted) rejected",
		"step developer (scripted) done",
		"step reviewer (scripted) approved",
		"mark done Approved: good",
	}
	if !slices.Equal(chain, want) {
		t.Errorf("thread steps:\n%s\nwant:\n%s", strings.Join(chain, "\n"), strings.Join(want, "\n"))
	}

	// The prompts the program received.
	runs, _ := filepath.Glob(filepath.Join(log, "*.txt"))
	if len(runs) != 5 {
		t.Fatalf("the agent ran %d times, want 5: %q", len(runs), runs)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(log, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"01-planner-0.txt", []string{
			"# Role: planner (workflow review-loop)\n",
			"## Goal\n\nYou are a planning agent.\n",
			"## Procedure\n\nAnalyse the task and write a plan.\n",
			"## Output format\n\n",
			"- `status` (required, the constant `done`)\n",
			"status: $SUSPEND\n",
			"## Task\n\nPlan this task.\n",
			"## The thread so far\n\n# Thread " + id,
			"## 0 · start\n\nAdd a --json flag to the report command\n",
		}},
		{"02-developer-0.txt", []string{
			"## Goal\n\nYou are a developer. Implement the plan.\n",
			"## Task\n\nImplement these steps:\n- add the flag\n- document it\n",
			"## 1 · planner · agent scripted · ",
			"# Plan\n\nTwo steps.\n", // the planner's body, in the thread so far
		}},
		{"03-reviewer-0.txt", []string{
			"## Goal\n\nYou review the implementation.\n",
			"- `status` (required, one of `approved`, `rejected`)\n",
			"- `comments` (required, a string)\n",
			"## Task\n\nReview this change: added the flag (change 2)\n",
		}},
		{"04-developer-0.txt", []string{
			"## Task\n\nFix what the review found: the flag has no test\n",
			"Please add a test.\n",
		}},
		{"05-reviewer-0.txt", []string{
			"## Task\n\nReview this change: added the flag (change 4)\n",
		}},
	} {
		got := read(tc.file)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("prompt %s lacks %q:\n%s", tc.file, w, got)
			}
		}
	}
	wantEnv := "UWF_THREAD=" + id + "\nUWF_ROLE=planner\nUWF_WORKFLOW=review-loop\nUWF_ATTEMPT=0\n" +
		"UWF_HOME=" + e.home + "\nUWF_STORE=" + filepath.Join(e.home, "store") + "\nUWF_DURABILITY=none\ncwd=" + e.dir + "\n"
	if got := read("01-planner-0.env"); got != wantEnv {
		t.Errorf("the agent's environment:\n%s\nwant:\n%s", got, wantEnv)
	}

	// Each output is typed by its role's schema; the detail keeps the
	// prompt, the raw output and stderr.
	var wf struct {
		Payload struct {
			Roles map[string]struct{ Frontmatter string }
		}
	}
	e.okJSON(&wf, "workflow", "show", "review-loop")
	steps := e.stepsOf(id)
	for _, row := range steps[1:6] {
		var st stepJSON
		e.okJSON(&st, "step", "show", row[1])
		schema := wf.Payload.Roles[st.Role].Frontmatter
		if st.OutputType != schema || schema == "" {
			t.Errorf("step %s (%s): output type %s, want the role's schema %s", row[1], st.Role, st.OutputType, schema)
		}
		var out struct{ Type string }
		e.okJSON(&out, "cas", "get", st.Output)
		if out.Type != schema {
			t.Errorf("output %s: type %s, want %s", st.Output, out.Type, schema)
		}
		if st.Agent != "scripted" || st.ExitCode != 0 || !strings.HasPrefix(st.Raw, "---\nstatus: ") ||
			st.Stderr != "agent: "+st.Role+", attempt 0\n" || !strings.HasPrefix(st.Prompt, "# Role: "+st.Role) || len(st.Attempts) != 0 {
			t.Errorf("step show %s: %+v", row[1], st)
		}
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck: %q", out)
	}
}

// TestAgentFailures runs failing agents through the CLI: each failure exits
// 1 naming the role, the agent and the reason, moves nothing, and leaves a
// failure node under failures/<thread> that holds every raw output.
func TestAgentFailures(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	scripts := map[string]string{
		"exit3":     e.script("exit3.sh", "cat >/dev/null\necho partial output\necho it broke >&2\nexit 3\n"),
		"slow":      e.script("slow.sh", "cat >/dev/null\nsleep 5\n"),
		"prose":     e.script("prose.sh", "cat >/dev/null\necho \"I did it (attempt $UWF_ATTEMPT).\"\n"),
		"badtype":   e.script("badtype.sh", "cat > \"$PROMPTS/prompt-$UWF_ATTEMPT.txt\"\nprintf -- '---\\nstatus: done\\nsteps: %s\\n---\\n' \"$UWF_ATTEMPT\"\n"),
		"status":    e.script("status.sh", "cat >/dev/null\nprintf -- '---\\nstatus: finished\\nsteps: [a]\\n---\\n'\n"),
		"badreason": e.script("badreason.sh", "cat >/dev/null\nprintf -- '---\\nstatus: $SUSPEND\\nreason: [a, b]\\n---\\n'\n"),
	}
	var cfg strings.Builder
	cfg.WriteString("agents:\n")
	for name, path := range scripts {
		cfg.WriteString("  " + name + ": {command: " + path)
		switch name {
		case "slow":
			cfg.WriteString(", timeout: 1s")
		case "badtype":
			cfg.WriteString(", env: {PROMPTS: " + e.dir + "}")
		}
		cfg.WriteString("}\n")
	}
	cfg.WriteString("  missing: {command: no-such-agent-for-uwf-tests}\n")
	e.writeConfig(cfg.String())

	tr := &transcript{e: e}
	for _, tc := range []struct {
		agent    string
		reason   []string // in the error
		exitCode int      // in the detail
		raws     []string // every raw output, oldest first
	}{
		{"exit3", []string{"exit status 3", "it broke"}, 3, []string{"partial output\n"}},
		{"slow", []string{"timed out after 1s"}, 124, []string{""}},
		{"missing", []string{"command not found: no-such-agent-for-uwf-tests"}, 127, []string{""}},
		{"prose", []string{"frontmatter"}, 0, []string{"I did it (attempt 0).\n", "I did it (attempt 1).\n", "I did it (attempt 2).\n"}},
		{"badtype", []string{"/steps"}, 0, []string{"---\nstatus: done\nsteps: 0\n---\n", "---\nstatus: done\nsteps: 1\n---\n", "---\nstatus: done\nsteps: 2\n---\n"}},
		{"status", []string{"finished", "done"}, 0, slices.Repeat([]string{"---\nstatus: finished\nsteps: [a]\n---\n"}, 3)},
		{"badreason", []string{"$SUSPEND", "reason must be text"}, 0, slices.Repeat([]string{"---\nstatus: $SUSPEND\nreason: [a, b]\n---\n"}, 3)},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			parent := e.t
			e.t = t
			defer func() { e.t = parent }()
			// cwd /: the start node, and so every hash, is the same in every run.
			id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "task for "+tc.agent, "--cwd", "/"))
			before := e.ok("", "thread", "show", id)
			r := tr.run("", "thread", "step", id, "--agent", tc.agent)
			tr.run("", "thread", "show", id)
			if r.code != 1 || !strings.HasPrefix(r.stderr, "uwf: thread "+id+": role planner (agent "+tc.agent+") failed: ") {
				t.Fatalf("thread step: %v\nwant exit 1 naming the role and agent", r)
			}
			for _, w := range tc.reason {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("thread step: stderr %q lacks %q", r.stderr, w)
				}
			}
			if !strings.HasSuffix(r.stdout, "1 planner ("+tc.agent+") failed after 0s\n") {
				t.Errorf("thread step: stdout %q, want a failed line", r.stdout)
			}
			// Nothing moved; show names the failure.
			after := e.ok("", "thread", "show", id)
			if !strings.HasPrefix(after, before) {
				t.Errorf("thread show before:\n%s\nafter:\n%s", before, after)
			}
			var info struct {
				Status, Head string
				Depth        int
				LastFailure  *struct {
					Hash, Head, Role, Agent, Detail, Error string
				}
			}
			e.okJSON(&info, "thread", "show", id)
			f := info.LastFailure
			if info.Status != "active" || info.Depth != 0 || f == nil || f.Head != info.Head || f.Role != "planner" || f.Agent != tc.agent {
				t.Fatalf("thread show --json after the failure: %+v (failure %+v)", info, f)
			}
			if !strings.Contains(after, "last failure: ") || !strings.Contains(after, "planner (agent "+tc.agent+")") || !strings.Contains(after, f.Hash) {
				t.Errorf("thread show does not list the failure:\n%s", after)
			}
			// failures/<id> reaches the failure node, its detail and every raw output.
			if refs := e.ok("", "cas", "ref", "list", "failures/"); !strings.Contains(refs, f.Hash+" failures/"+id+"\n") {
				t.Errorf("cas ref list failures/ = %q, want %s failures/%s", refs, f.Hash, id)
			}
			walk := e.ok("", "cas", "walk", f.Hash)
			var det struct {
				Payload struct {
					Raw, Prompt, Stderr string
					Attempts            []string
					ExitCode            int
				}
			}
			e.okJSON(&det, "cas", "get", f.Detail)
			d := det.Payload
			var raws []string
			for _, h := range append(slices.Clone(d.Attempts), d.Raw) {
				if !strings.Contains(walk, h+" content\n") {
					t.Errorf("cas walk %s does not reach the raw output %s:\n%s", f.Hash, h, walk)
				}
				raws = append(raws, e.content(h))
			}
			if !slices.Equal(raws, tc.raws) || d.ExitCode != tc.exitCode {
				t.Errorf("failure detail: raw outputs %q, exit code %d; want %q, %d", raws, d.ExitCode, tc.raws, tc.exitCode)
			}
			if !strings.Contains(walk, f.Detail+" detail\n") || !strings.Contains(e.content(d.Prompt), "# Role: planner") {
				t.Errorf("cas walk %s:\n%s\nwant the detail and the prompt", f.Hash, walk)
			}
		})
	}
	golden(t, "agent-failures.txt", e.masked(tr.b.String()))
	// A retry's prompt carries the correction.
	b, err := os.ReadFile(filepath.Join(e.dir, "prompt-1.txt"))
	if err != nil || !strings.Contains(string(b), "\n## Correction\n") || !strings.Contains(string(b), "- `steps`: got number, want array (you wrote 0)") {
		t.Errorf("the retry's prompt (%v):\n%s\nwant a correction naming steps", err, b)
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck: %q", out)
	}
}

// TestSuspend runs an agent that asks a human: the thread is suspended with
// the reason, refuses to step until resumed, and after resume -p the role
// runs again with the answer in its prompt.
func TestSuspend(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	asker := e.script("asker.sh", `prompt=$(cat)
case "$UWF_ROLE" in
planner)
	case "$prompt" in
	*"## Note from a human"*"Use PostgreSQL."*) printf -- '---\nstatus: done\nsteps: [use postgres]\n---\n' ;;
	*) printf -- '---\nstatus: $SUSPEND\nreason: Which database should I use?\n---\nI need to know.\n' ;;
	esac ;;
developer) printf -- '---\nstatus: done\nsummary: used postgres\n---\n' ;;
reviewer) printf -- '---\nstatus: approved\ncomments: fine\n---\n' ;;
esac
`)
	e.writeConfig("agents:\n  asker: {command: " + asker + "}\ndefaultAgent: asker\n")
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "Store the reports"))

	if out := e.ok("", "thread", "step", id); out != "1 suspended: Which database should I use?\n" {
		t.Errorf("thread step = %q, want it suspended", out)
	}
	show := e.ok("", "thread", "show", id)
	for _, w := range []string{"status:   suspended\n", "(mark suspended)", "reason:   Which database should I use?\n"} {
		if !strings.Contains(show, w) {
			t.Errorf("thread show lacks %q:\n%s", w, show)
		}
	}
	_, head := e.status(id)
	var mark struct {
		Payload struct{ Mark, Reason, Detail string }
	}
	e.okJSON(&mark, "cas", "get", head)
	var det struct{ Payload struct{ Raw string } }
	e.okJSON(&det, "cas", "get", mark.Payload.Detail)
	if raw := e.content(det.Payload.Raw); !strings.Contains(raw, "status: $SUSPEND") {
		t.Errorf("the suspended mark's detail holds the raw output %q", raw)
	}

	r := e.run("", "thread", "step", id)
	if r.code != 1 || !strings.Contains(r.stderr, "it is suspended (Which database should I use?)") || !strings.Contains(r.stderr, "uwf thread resume "+id) {
		t.Errorf("thread step on a suspended thread: %v\nwant exit 1 telling to resume", r)
	}
	if _, h := e.status(id); h != head {
		t.Errorf("a refused step moved the head from %s to %s", head, h)
	}

	e.okHash("", "thread", "resume", id, "-p", "Use PostgreSQL.")
	out := e.ok("", "thread", "step", id, "-n", "0")
	if !strings.HasPrefix(out, "3 planner (asker) done -> ") || !strings.HasSuffix(out, "6 done: Approved: fine\n") {
		t.Errorf("thread step -n 0 after resume:\n%s", out)
	}
	var chain []string
	for _, f := range e.stepsOf(id) {
		chain = append(chain, strings.Join(f[2:], " "))
	}
	want := []string{
		"start",
		"mark suspended Which database should I use?",
		"mark resumed Use PostgreSQL.",
		"step planner (asker) done",
		"step developer (asker) done",
		"step reviewer (asker) approved",
		"mark done Approved: fine",
	}
	if !slices.Equal(chain, want) {
		t.Errorf("thread steps:\n%s\nwant:\n%s", strings.Join(chain, "\n"), strings.Join(want, "\n"))
	}
	var st stepJSON
	e.okJSON(&st, "step", "show", e.stepsOf(id)[3][1])
	if !strings.Contains(st.Prompt, "\n## Note from a human\n\nUse PostgreSQL.\n") || st.EdgePrompt != "Plan this task." {
		t.Errorf("the planner's prompt after resume:\n%s", st.Prompt)
	}
}

// TestSuspendWithoutReason: a $SUSPEND answer without a reason suspends the
// thread at once (no retry), with a reason saying none was given.
func TestSuspendWithoutReason(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	mute := e.script("mute.sh", "cat >/dev/null\necho x >> \""+e.dir+"/calls\"\nprintf -- '---\\nstatus: $SUSPEND\\n---\\nI am stuck.\\n'\n")
	e.writeConfig("agents:\n  mute: {command: " + mute + "}\ndefaultAgent: mute\n")
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "x"))
	if out := e.ok("", "thread", "step", id); out != "1 suspended: the agent asked for a human without giving a reason\n" {
		t.Errorf("thread step = %q, want it suspended", out)
	}
	if st, _ := e.status(id); st != "suspended" {
		t.Errorf("status %q, want suspended", st)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "calls")); err != nil || string(b) != "x\n" {
		t.Errorf("the agent ran %q times (%v), want once", b, err)
	}
}

// TestStepInterrupted interrupts a step while its agent runs: uwf exits
// 130, the agent is stopped, and nothing is recorded.
func TestStepInterrupted(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	started := filepath.Join(e.dir, "started")
	sleeper := e.script("sleeper.sh", "cat >/dev/null\ntouch "+started+"\nsleep 30\n")
	e.writeConfig("agents:\n  sleeper: {command: " + sleeper + "}\n")
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "x"))
	_, head := e.status(id)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(started); err == nil || ctx.Err() != nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	begin := time.Now()
	r := e.runContext(ctx, strings.NewReader(""), "thread", "step", id, "--agent", "sleeper")
	if r.code != 130 || !strings.Contains(r.stderr, "interrupted") && !strings.Contains(r.stderr, "context canceled") {
		t.Errorf("thread step, interrupted: %v\nwant exit 130", r)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("the interrupted step took %v: the agent was not stopped", d)
	}
	if st, h := e.status(id); st != "active" || h != head {
		t.Errorf("after the interrupted step: %s at %s, want active at %s", st, h, head)
	}
	if out := e.ok("", "cas", "ref", "list", "failures/"); out != "" {
		t.Errorf("an interrupted step recorded a failure: %q", out)
	}
}

// TestAgentOpensStore: an agent written in Go opens the store it is handed
// in UWF_STORE with store.Open and finds there the very thread it is
// stepping, at the head uwf stepped it from, whatever URL form --store
// took.
func TestAgentOpensStore(t *testing.T) {
	bin := buildTestAgent(t)
	urls := map[string]func(t *testing.T, e *env) string{
		"file URL": func(t *testing.T, e *env) string {
			return "file://" + filepath.Join(e.dir, "a store") + "?durability=none"
		},
		"tilde":    func(t *testing.T, e *env) string { t.Setenv("HOME", e.dir); return "~/s" },
		"postgres": func(t *testing.T, e *env) string { return freshSchema(postgresURL(t)) },
	}
	for name, url := range urls {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			store := url(t, e)
			log := t.TempDir()
			e.writeConfig("agents:\n  scripted:\n    command: " + bin + "\n    env: {AGENT_LOG: " + log + ", AGENT_OPEN: '1'}\n    timeout: 1m\ndefaultAgent: scripted\n")
			e.write("review-loop.yaml", reviewLoop)
			r := e.run("", "--store", store, "thread", "run", "review-loop.yaml", "-p", "Add a flag")
			if r.code != 0 {
				t.Fatalf("thread run: %v", r)
			}
			id := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "thread "))
			var steps [][]string
			for line := range strings.Lines(e.ok("", "--store", store, "thread", "steps", id)) {
				steps = append(steps, strings.Fields(line))
			}
			envs, _ := filepath.Glob(filepath.Join(log, "*.env"))
			if len(envs) != 5 || len(steps) != 7 {
				t.Fatalf("%d agent runs, %d chain nodes; want 5 and 7", len(envs), len(steps))
			}
			for i, f := range envs {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				// Run i+1 stepped from the node at depth i.
				if want := "head=" + steps[i][1] + "\n"; !strings.Contains(string(b), want) {
					t.Errorf("agent run %d saw %q, want %q", i+1, b, want)
				}
			}
		})
	}
}

// TestAgentStoreFromAnotherFolder: an agent runs in the start node's cwd,
// yet the home and store it is handed are those uwf used, given relative
// to uwf's own folder, and --durability reaches it as UWF_DURABILITY
// (over an inherited one), so that store.Open opens there the very store
// uwf stepped from, as uwf itself would.
func TestAgentStoreFromAnotherFolder(t *testing.T) {
	bin := buildTestAgent(t)
	for _, tc := range []struct {
		name  string
		args  []string                // global flags, relative to uwf's folder
		store func(dir string) string // the UWF_STORE the agent gets
	}{
		{"relative home", []string{"--home", "h"}, func(dir string) string { return filepath.Join(dir, "h", "store") }},
		{"relative store path", []string{"--home", "h", "--store", "s?durability=strict"},
			func(dir string) string { return filepath.Join(dir, "s") + "?durability=strict" }},
		{"relative file URL", []string{"--home", "h", "--store", "file://a%3Fb/s"},
			func(dir string) string { return "file://" + filepath.Join(dir, "a%3Fb", "s") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.home = filepath.Join(e.dir, "h")
			t.Setenv("UWF_HOME", "")
			t.Setenv("UWF_DURABILITY", "strict") // --durability wins, for uwf and its agents
			elsewhere := t.TempDir()
			log := t.TempDir()
			e.writeConfig("agents:\n  scripted:\n    command: " + bin + "\n    env: {AGENT_LOG: " + log + ", AGENT_OPEN: '1', UWF_DURABILITY: strict}\n    timeout: 1m\ndefaultAgent: scripted\n")
			e.write("review-loop.yaml", reviewLoop)
			args := append(slices.Clone(tc.args), "--durability", "none", "thread", "run", "review-loop.yaml", "-p", "Add a flag", "--cwd", elsewhere)
			r := e.run("", args...)
			if r.code != 0 {
				t.Fatalf("thread run: %v", r)
			}
			id := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "thread "))
			var steps [][]string
			for line := range strings.Lines(e.ok("", append(slices.Clone(tc.args), "thread", "steps", id)...)) {
				steps = append(steps, strings.Fields(line))
			}
			envs, _ := filepath.Glob(filepath.Join(log, "*.env"))
			if len(envs) != 5 || len(steps) != 7 {
				t.Fatalf("%d agent runs, %d chain nodes; want 5 and 7", len(envs), len(steps))
			}
			for i, f := range envs {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{
					"UWF_HOME=" + e.home + "\n",
					"UWF_STORE=" + tc.store(e.dir) + "\n",
					"UWF_DURABILITY=none\n",
					"cwd=" + elsewhere + "\n",
					"head=" + steps[i][1] + "\n", // run i+1 stepped from the node at depth i
				} {
					if !strings.Contains(string(b), want) {
						t.Errorf("agent run %d saw:\n%s\nwant %q", i+1, b, want)
					}
				}
			}
			// Nothing was made in the agents' folder.
			if ents, err := os.ReadDir(elsewhere); err != nil || len(ents) != 0 {
				t.Errorf("the agents' folder holds %v (%v), want nothing", ents, err)
			}
		})
	}
}
