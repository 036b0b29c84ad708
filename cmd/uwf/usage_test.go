package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestUsageErrors checks that every kind of usage error exits 2, prints one
// line on stderr that points at --help, prints nothing on stdout, and never
// creates the store.
func TestUsageErrors(t *testing.T) {
	e := newEnv(t)
	e.write("s.json", `{"type":"string"}`)
	const h = "EYHPV6X8XHTCS"
	const id = "01JGJFGR4E0000000000000001"
	const badID = `invalid thread id "xyz": want a ULID`
	for _, tc := range []struct {
		args []string
		want string // in the message
	}{
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"cas", "nope"}, `unknown subcommand "nope"`},
		{[]string{"cas", "schema", "nope"}, `unknown subcommand "nope"`},
		{[]string{"cas", "ref", "nope"}, `unknown subcommand "nope"`},
		{[]string{"help", "nope"}, `no help topic "nope"`},
		{[]string{"cas", "help", "nope"}, `no help topic "nope"`},
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"--bogus", "cas", "get", h}, "unknown flag --bogus"},
		{[]string{"cas", "get", h, "--bogus"}, "unknown flag --bogus"},
		{[]string{"cas", "get", "--bogus=1", h}, "unknown flag --bogus=1"},
		{[]string{"cas", "put-text", "-x"}, "unknown flag -x"},
		{[]string{"cas", "get"}, "want 1 argument <hash>, got 0"},
		{[]string{"cas", "get", h, h}, "want at most 1 argument <hash>, got 2"},
		{[]string{"cas", "get", "--batch", h}, "want no arguments"},
		{[]string{"cas", "get", "--batch", "--json"}, "--json cannot be combined with --batch"},
		{[]string{"cas", "put", "content"}, "want 2 arguments <type> <file|->, got 1"},
		{[]string{"cas", "put", "--batch"}, "want 1 argument <type>, got 0"},
		{[]string{"cas", "put", "--batch", "content", "--json"}, "--json cannot be combined with --batch"},
		{[]string{"cas", "put-text"}, "want 1 argument <text|->, got 0"},
		{[]string{"cas", "has"}, "want 1 argument <hash>, got 0"},
		{[]string{"cas", "refs", h, "x"}, "want at most 1 argument"},
		{[]string{"cas", "walk"}, "want 1 argument <hash>, got 0"},
		{[]string{"cas", "gc", "x"}, "want no arguments"},
		{[]string{"cas", "gc", "--grace"}, "flag --grace needs a value"},
		{[]string{"cas", "gc", "--grace", "soon"}, `invalid --grace: "soon"`},
		{[]string{"cas", "gc", "--grace", "-1h"}, `invalid --grace: "-1h"`},
		{[]string{"cas", "gc", "--log-retention", "7x"}, `invalid --log-retention: "7x"`},
		{[]string{"cas", "gc", "--dry-run=maybe"}, "invalid boolean value"},
		{[]string{"cas", "fsck", "x"}, "want no arguments"},
		{[]string{"cas", "schema", "put", "s.json"}, "--name is required"},
		{[]string{"cas", "schema", "put", "--name", "s"}, "want 1 argument <file|->, got 0"},
		{[]string{"cas", "schema", "get"}, "want 1 argument <name|hash>, got 0"},
		{[]string{"cas", "schema", "list", "x"}, "want no arguments"},
		{[]string{"cas", "ref", "list", "a", "b"}, "want at most 1 argument [prefix], got 2"},
		{[]string{"cas", "ref", "log"}, "want 1 argument <name>, got 0"},
		{[]string{"--log-level", "loud", "cas", "has", h}, `invalid --log-level "loud"`},
		{[]string{"--durability", "sometimes", "cas", "has", h}, `invalid durability "sometimes"`},
		{[]string{"--store", "s3://bucket/x", "cas", "has", h}, `unknown scheme "s3"`},
		{[]string{"--store", "file://", "cas", "has", h}, "no path"},
		{[]string{"--store", "file://" + e.home + "?durability=none&y=1", "cas", "has", h}, `unknown or repeated parameter "y"`},
		{[]string{"--store", "file://" + e.home + "?durability=maybe", "cas", "has", h}, `invalid durability "maybe"`},
		{[]string{"--store", e.home + "?durability=maybe", "--durability", "none", "cas", "has", h}, `invalid durability "maybe"`},

		// workflow
		{[]string{"workflow", "nope"}, `unknown subcommand "nope"`},
		{[]string{"workflow", "put"}, "want 1 argument <file>, got 0"},
		{[]string{"workflow", "put", "a.yaml", "b.yaml"}, "want at most 1 argument <file>, got 2"},
		{[]string{"workflow", "validate"}, "want 1 argument <file>, got 0"},
		{[]string{"workflow", "show"}, "want 1 argument <name|hash>, got 0"},
		{[]string{"workflow", "show", "--", "../x"}, `invalid workflow "../x": neither a workflow name nor a hash`},
		{[]string{"workflow", "list", "x"}, "want no arguments"},
		{[]string{"workflow", "history", "a b"}, `invalid workflow name "a b"`},
		{[]string{"workflow", "rollback"}, "want at least 1 argument <name> [hash], got 0"},
		{[]string{"workflow", "rollback", "a b"}, `invalid workflow name "a b"`},
		{[]string{"workflow", "rollback", "review-loop", "xyz"}, `invalid hash "xyz"`},
		{[]string{"workflow", "rollback", "review-loop", h, h}, "want at most 2 arguments"},
		{[]string{"workflow", "rm", "../x"}, `invalid workflow name "../x"`},
		{[]string{"workflow", "put", "--bogus", "a.yaml"}, "unknown flag --bogus"},

		// thread: bad ids and hashes
		{[]string{"thread", "nope"}, `unknown subcommand "nope"`},
		{[]string{"thread", "show", "xyz"}, badID},
		{[]string{"thread", "show", id + "X"}, "invalid thread id"},
		{[]string{"thread", "show", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"}, "invalid thread id"}, // overflows
		{[]string{"thread", "step", "xyz"}, badID},
		{[]string{"thread", "steps", h}, `invalid thread id "` + h + `"`},
		{[]string{"thread", "read", "xyz"}, badID},
		{[]string{"thread", "kill", "xyz"}, badID},
		{[]string{"thread", "resume", "xyz", "-p", "go"}, badID},
		{[]string{"thread", "rm", "xyz"}, badID},
		{[]string{"thread", "replay", "xyz"}, badID},
		{[]string{"thread", "log", "xyz"}, badID},
		{[]string{"thread", "fork", "xyz"}, badID},
		{[]string{"thread", "fork", "UUUUUUUUUUUUU"}, `invalid hash "UUUUUUUUUUUUU"`},
		{[]string{"thread", "read", id, "--before", "xyz"}, `invalid hash "xyz"`},
		{[]string{"step", "nope"}, `unknown subcommand "nope"`},
		{[]string{"step", "show"}, "want 1 argument <step-hash>, got 0"},
		{[]string{"step", "show", "xyz"}, `invalid hash "xyz"`},
		{[]string{"step", "show", h, h}, "want at most 1 argument"},
		// thread: fork's two forms
		{[]string{"thread", "fork", id}, "fork <thread> needs --at <depth>"},
		{[]string{"thread", "fork", h, "--at", "2"}, "--at goes with a thread id, not a hash"},
		{[]string{"thread", "fork", id, "--at", "-1"}, "invalid --at -1"},
		{[]string{"thread", "fork", id, "--at", "x"}, `invalid value "x" for flag -at`},
		// thread: numbers and statuses
		{[]string{"thread", "step", id, "-n", "-1"}, "invalid -n -1"},
		{[]string{"thread", "step", id, "-n", "two"}, `invalid value "two" for flag -n`},
		{[]string{"thread", "step", id, "--seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"thread", "list", "--limit", "-1"}, "--limit and --offset must not be negative"},
		{[]string{"thread", "list", "--offset", "-3"}, "--limit and --offset must not be negative"},
		{[]string{"thread", "list", "--status", "bogus"}, `invalid --status "bogus"`},
		{[]string{"thread", "list", "x"}, "want no arguments"},
		{[]string{"thread", "read", id, "--quota", "-5"}, "invalid --quota -5"},
		{[]string{"thread", "read", id, "--quota", "0"}, "invalid --quota 0"},
		// thread: prompts, agents, arguments
		{[]string{"thread", "start", "review-loop"}, "-p <prompt> is required"},
		{[]string{"thread", "run", "review-loop", "--agent", "synth"}, "-p <prompt> is required"},
		{[]string{"thread", "start", "-p", "x"}, "want 1 argument <workflow>, got 0"},
		{[]string{"thread", "start", "a", "b", "-p", "x"}, "want at most 1 argument <workflow>"},
		{[]string{"thread", "start", "a", "-p"}, "flag -p needs a value"},
		{[]string{"thread", "step", id, "--agent", "replay:xyz"}, `invalid --agent "replay:xyz"`},
		{[]string{"thread", "run", "review-loop", "-p", "x", "--agent", "replay:"}, `invalid --agent "replay:"`},
		{[]string{"thread", "step", id, "--bogus"}, "unknown flag --bogus"},
		{[]string{"thread", "show", id, "--at", "1"}, "unknown flag --at"},
		{[]string{"thread", "list", "-n", "1"}, "unknown flag -n"},

		// config, demo
		{[]string{"config", "nope"}, `unknown subcommand "nope"`},
		{[]string{"config", "get"}, "want 1 argument <path>, got 0"},
		{[]string{"config", "get", "a..b"}, `invalid setting path "a..b"`},
		{[]string{"config", "set", "defaultAgent"}, "want 2 arguments <path> <value>, got 1"},
		{[]string{"config", "set", ".a", "b"}, `invalid setting path ".a"`},
		{[]string{"config", "list", "x"}, "want no arguments"},
		{[]string{"demo", "x"}, "want no arguments"},
		{[]string{"demo", "--json"}, "uwf demo has no --json output"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := e.run("", tc.args...)
			if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "uwf: ") ||
				strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) ||
				!strings.Contains(r.stderr, "--help'") {
				t.Errorf("uwf %q: %v\nwant exit 2, one line on stderr containing %q and a pointer to --help", tc.args, r, tc.want)
			}
			if _, err := os.Stat(e.home); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("uwf %q created %s", tc.args, e.home)
			}
		})
	}
}

// TestFlagsAfterArguments checks that a command's flags work before or
// after its arguments, and global flags anywhere.
func TestFlagsAfterArguments(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	var ids []string
	for i := range 3 {
		ids = append(ids, strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", fmt.Sprint("task ", i))))
	}
	e.ok("", "thread", "step", ids[0], "-n", "0", "--agent", "synth")
	for _, args := range [][]string{
		{"thread", "list", "--limit", "2"},
		{"thread", "list", "--limit=2"},
		{"--json", "thread", "list", "--limit", "2"},
		{"thread", "--json", "list", "--limit", "2"},
		{"thread", "list", "--limit", "2", "--json"},
	} {
		out := e.ok("", args...)
		if n := strings.Count(out, ids[2]) + strings.Count(out, ids[1]); n != 2 || strings.Contains(out, ids[0]) {
			t.Errorf("uwf %q:\n%s\nwant the 2 newest threads", args, out)
		}
	}
	a := e.ok("", "thread", "read", ids[0], "--quota", "100")
	b := e.ok("", "thread", "read", "--quota", "100", ids[0])
	c := e.ok("", "thread", "read", "--quota=100", "--", ids[0])
	if a != b || a != c || !strings.Contains(a, "(older entries not shown: ") {
		t.Errorf("thread read ID --quota 100 =\n%s\n--quota 100 ID =\n%s\n--quota=100 -- ID =\n%s", a, b, c)
	}
	// -p takes the next argument whatever it looks like.
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "--verbose is broken"))
	if out := e.ok("", "thread", "show", id, "--json"); !strings.Contains(out, `"prompt":"--verbose is broken"`) {
		t.Errorf("thread start -p --verbose...: %s", out)
	}
	fork := strings.TrimSpace(e.ok("", "thread", "fork", ids[0], "--at", "2"))
	if out := e.ok("", "thread", "steps", fork); strings.Count(out, "\n") != 3 {
		t.Errorf("thread fork ID --at 2, then steps:\n%s", out)
	}
}

// TestHelp checks that help goes to stdout, exits 0, creates nothing, and
// lists the exit codes.
func TestHelp(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{}, {"--help"}, {"-h"}, {"help"}, {"cas"}, {"cas", "--help"}, {"help", "cas"},
		{"cas", "get", "--help"}, {"cas", "get", "x", "--help"}, {"help", "cas", "get"},
		{"cas", "help", "get"}, {"cas", "schema", "put", "--help"}, {"cas", "schema"},
		{"--json", "cas", "gc", "-h"},
		{"workflow"}, {"thread"}, {"step"}, {"config"}, {"help", "thread", "fork"}, {"thread", "help", "run"},
		{"thread", "step", "xyz", "--help"}, {"demo", "-h"},
	} {
		r := e.run("", args...)
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "USAGE:") {
			t.Errorf("uwf %q: %v", args, r)
		}
	}
	if out := e.ok("", "--help"); !strings.Contains(out, "EXIT CODES:") || !strings.Contains(out, "130") {
		t.Errorf("uwf --help does not list the exit codes:\n%s", out)
	}
	if _, err := os.Stat(e.home); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("help created %s", e.home)
	}
	var all strings.Builder
	for _, args := range [][]string{
		{"--help"}, {"cas", "--help"}, {"cas", "get", "--help"}, {"cas", "put", "--help"},
		{"cas", "put-text", "--help"}, {"cas", "has", "--help"}, {"cas", "refs", "--help"},
		{"cas", "walk", "--help"}, {"cas", "gc", "--help"}, {"cas", "fsck", "--help"},
		{"cas", "schema", "--help"}, {"cas", "schema", "put", "--help"}, {"cas", "schema", "get", "--help"},
		{"cas", "schema", "list", "--help"}, {"cas", "ref", "--help"}, {"cas", "ref", "list", "--help"},
		{"cas", "ref", "log", "--help"},
		{"workflow", "--help"}, {"workflow", "put", "--help"}, {"workflow", "validate", "--help"},
		{"workflow", "show", "--help"}, {"workflow", "list", "--help"}, {"workflow", "history", "--help"},
		{"workflow", "rollback", "--help"}, {"workflow", "rm", "--help"},
		{"thread", "--help"}, {"thread", "start", "--help"}, {"thread", "run", "--help"},
		{"thread", "step", "--help"}, {"thread", "show", "--help"}, {"thread", "list", "--help"},
		{"thread", "steps", "--help"}, {"thread", "read", "--help"}, {"thread", "fork", "--help"},
		{"thread", "kill", "--help"}, {"thread", "resume", "--help"}, {"thread", "rm", "--help"},
		{"thread", "replay", "--help"}, {"thread", "log", "--help"},
		{"step", "--help"}, {"step", "show", "--help"},
		{"config", "--help"}, {"config", "list", "--help"}, {"config", "get", "--help"}, {"config", "set", "--help"},
		{"demo", "--help"},
	} {
		all.WriteString("$ uwf " + strings.Join(args, " ") + "\n" + e.ok("", args...) + "\n")
	}
	out := all.String()
	out = strings.ReplaceAll(out, version(), "VERSION")
	golden(t, "help.txt", out)
}

func TestVersion(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		if out := e.ok("", args...); !strings.HasPrefix(out, "uwf version ") {
			t.Errorf("uwf %q = %q", args, out)
		}
	}
}

// TestStartRunFlags: thread run takes thread start's flags, declared once,
// plus the step loop's.
func TestStartRunFlags(t *testing.T) {
	e := newEnv(t)
	options := func(cmd string) []string {
		help := e.ok("", "thread", cmd, "--help")
		_, opts, ok := strings.Cut(help, "OPTIONS:")
		if !ok {
			t.Fatalf("thread %s --help has no OPTIONS:\n%s", cmd, help)
		}
		var lines []string
		for _, l := range strings.Split(opts, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--help") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	// start: -p, --cwd, --agent (with --queue), --queue; run: the same
	// first three, then --seed, --input and --detach.
	start, run := options("start"), options("run")
	if len(start) != 4 || len(run) != 6 || !strings.HasPrefix(start[3], "--queue") || !strings.HasPrefix(run[5], "--detach") {
		t.Fatalf("thread start options %q, run options %q: want -p, --cwd, --agent and --queue, and run --seed, --input and --detach for --queue", start, run)
	}
	for i, l := range start[:3] {
		if run[i] != l {
			t.Errorf("thread run option %q, thread start has %q", run[i], l)
		}
	}
}
