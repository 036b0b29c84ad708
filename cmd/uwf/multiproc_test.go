package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// uwfProcess returns a command running this test binary as the uwf binary
// (see TestMain) with a clean environment around home.
func uwfProcess(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), "UWF_TEST_MAIN=1", "UWF_HOME="+home, "UWF_STORE=", "UWF_DURABILITY=", "UWF_LOG_LEVEL=")
	return cmd
}

// TestFirstUseConcurrent starts several uwf processes on a home that does
// not exist yet: they all create (or find) the store and succeed.
func TestFirstUseConcurrent(t *testing.T) {
	home := filepath.Join(t.TempDir(), "fresh", "home")
	const n = 6
	cmds := make([]*exec.Cmd, n)
	outs := make([][2]bytes.Buffer, n)
	for i := range cmds {
		cmds[i] = uwfProcess(t, home, "cas", "put-text", "x")
		cmds[i].Stdout, cmds[i].Stderr = &outs[i][0], &outs[i][1]
	}
	for _, c := range cmds { // all start before any can finish creating the store
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	first := ""
	for i, c := range cmds {
		err := c.Wait()
		stdout, stderr := outs[i][0].String(), outs[i][1].String()
		if i == 0 {
			first = stdout
		}
		if err != nil || stderr != "" || stdout != first || len(stdout) != 14 {
			t.Errorf("process %d: %v, stdout %q (first: %q), stderr %q", i, err, stdout, first, stderr)
		}
	}
	// The store is whole: fsck finds nothing wrong.
	cmd := uwfProcess(t, home, "cas", "fsck")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.HasSuffix(string(b), ": 0 problems\n") {
		t.Errorf("fsck after concurrent first use: %v\n%s", err, b)
	}
}

// TestProcessExitCodes runs the binary to check main: exit statuses and
// stdout/stderr separation.
func TestProcessExitCodes(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string // prefix
	}{
		{[]string{"cas", "has", "EYHPV6X8XHTCS"}, 3, "no\n", ""},
		{[]string{"cas", "get", "nothash"}, 2, "", `uwf: invalid hash "nothash"`},
		{[]string{"cas", "nope"}, 2, "", `uwf: unknown subcommand "nope"`},
		{[]string{"--store", "postgres://uwf:secret@127.0.0.1:1/uwf?connect_timeout=5", "cas", "fsck"}, 1, "", "uwf: open store postgres://uwf:xxxxx@127.0.0.1:1/uwf"},
	} {
		cmd := uwfProcess(t, home, tc.args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || o.String() != tc.stdout || !strings.HasPrefix(e.String(), tc.stderr) || (tc.stderr == "") != (e.Len() == 0) {
			t.Errorf("uwf %q: exit %d, stdout %q, stderr %q; want %d, %q, %q...", tc.args, code, o.String(), e.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// runProcess runs uwf in another process and returns what it printed and
// its exit status.
func runProcess(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{o.String(), e.String(), code}
}

// slowAgent plays the review loop's roles, slowly enough that concurrent
// steps overlap.
const slowAgent = `#!/bin/sh
cat >/dev/null
sleep 0.4
case "$UWF_ROLE" in
planner) printf -- '---\nstatus: done\nsteps: [one]\n---\n' ;;
developer) printf -- '---\nstatus: done\nsummary: did it\n---\n' ;;
reviewer) printf -- '---\nstatus: approved\ncomments: fine\n---\n' ;;
esac
`

var (
	stepLine    = regexp.MustCompile(`^(\d+) (planner|developer|reviewer) \(slow\) (done|approved) -> ([0-9A-Z]{13}) `)
	doneLine    = regexp.MustCompile(`^4 done: Approved: fine\n$`) // a process that started after three commits
	movedLine   = regexp.MustCompile(`^uwf: thread [0-9A-Z]{26} moved: its head is ([0-9A-Z]{13}), not ([0-9A-Z]{13})\n$`)
	depthAtHash = regexp.MustCompile(`(?m)^(\d+) ([0-9A-Z]{13}) `)
)

// TestConcurrentSteps runs "thread step" in 4 processes at once on one
// thread: each either commits its step or exits 4 naming the head that beat
// it; the chain stays linear and the store whole.
func TestConcurrentSteps(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	agent := filepath.Join(dir, "slow.sh")
	if err := os.WriteFile(agent, []byte(slowAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("agents:\n  slow: {command: "+agent+"}\ndefaultAgent: slow\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(dir, "review-loop.yaml")
	if err := os.WriteFile(wf, []byte(reviewLoop), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runProcess(t, uwfProcess(t, home, "thread", "start", wf, "-p", "race"))
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 26 {
		t.Fatalf("thread start: %v", r)
	}

	const n = 4
	cmds := make([]*exec.Cmd, n)
	outs := make([][2]bytes.Buffer, n)
	for i := range cmds {
		cmds[i] = uwfProcess(t, home, "thread", "step", id)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i][0], &outs[i][1]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var committed, named []string
	for i, c := range cmds {
		err := c.Wait()
		stdout, stderr := outs[i][0].String(), outs[i][1].String()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		switch m, mm := stepLine.FindStringSubmatch(stdout), movedLine.FindStringSubmatch(stderr); {
		case code == 0 && m != nil && stderr == "":
			committed = append(committed, m[4])
		case code == 0 && doneLine.MatchString(stdout) && stderr == "":
			committed = append(committed, "") // the done mark: its hash is not printed
		case code == 4 && mm != nil && stdout == "":
			named = append(named, mm[1])
		default:
			t.Errorf("process %d: exit %d, stdout %q, stderr %q; want a committed step or exit 4 naming the head", i, code, stdout, stderr)
		}
	}
	t.Logf("%d steps committed, %d processes lost the race", len(committed), len(named))

	r = runProcess(t, uwfProcess(t, home, "thread", "steps", id))
	if r.code != 0 {
		t.Fatalf("thread steps: %v", r)
	}
	chain := map[string]int{}
	for i, m := range depthAtHash.FindAllStringSubmatch(r.stdout, -1) {
		if m[1] != strconv.Itoa(i) {
			t.Errorf("thread steps: line %d has depth %s:\n%s", i+1, m[1], r.stdout)
		}
		chain[m[2]] = i
	}
	if len(committed) == 0 || len(chain) != len(committed)+1 {
		t.Errorf("thread steps after %d commits:\n%s", len(committed), r.stdout)
	}
	for _, h := range append(committed, named...) {
		if _, ok := chain[h]; !ok && h != "" {
			t.Errorf("%s (committed or named as the head) is not in the chain:\n%s", h, r.stdout)
		}
	}
	r = runProcess(t, uwfProcess(t, home, "cas", "fsck"))
	if r.code != 0 || !strings.HasSuffix(r.stdout, ": 0 problems\n") {
		t.Errorf("fsck: %v", r)
	}
}

// TestStepConflict moves a thread while its step runs (the agent kills the
// thread through another uwf process): the step exits 4 naming the new
// head, and nothing it made is committed.
func TestStepConflict(t *testing.T) {
	e := newEnv(t)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	killer := e.script("killer.sh", `cat >/dev/null
UWF_TEST_MAIN=1 "$UWF_BIN" thread kill "$UWF_THREAD" --reason "killed mid-step" >/dev/null || exit 9
printf -- '---\nstatus: done\nsteps: [one]\n---\n'
`)
	e.writeConfig("agents:\n  killer: {command: " + killer + ", env: {UWF_BIN: " + bin + "}}\n")
	e.write("review-loop.yaml", reviewLoop)
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "x"))
	_, start := e.status(id)
	r := e.run("", "thread", "step", id, "--agent", "killer")
	st, head := e.status(id)
	if r.code != 4 || r.stderr != "uwf: thread "+id+" moved: its head is "+head+", not "+start+"\n" || st != "killed" {
		t.Errorf("thread step while the thread is killed: %v\nthread now %s at %s", r, st, head)
	}
	steps := e.stepsOf(id)
	if len(steps) != 2 || steps[1][2] != "mark" || steps[1][3] != "killed" {
		t.Errorf("thread steps: %q, want the start and the killed mark", steps)
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck: %q", out)
	}
}
