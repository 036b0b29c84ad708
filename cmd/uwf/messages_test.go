package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// internalWord matches what a user-facing message must not hold: a
// library package's name used as a message prefix ("cas: not found",
// "extract: ...") and Go's context errors.
var internalWord = regexp.MustCompile(`(^|: |\(|")(cas|moderator|extract|agent|registry|store|yamldoc|disk|postgres|pgx|jsonschema): |context (canceled|deadline exceeded)`)

// TestErrorMessages sweeps the CLI's error paths: each command fails with
// its exit status and a sentence about the user's thing, without the
// library's internal words.
func TestErrorMessages(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "x", "--cwd", "/"))
	e.writeConfig("agents:\n  coder: {command: no-such-command-for-uwf}\n")
	const absent = "01JGJFGR4E00000000000000ZZ"
	for _, tc := range []struct {
		args []string
		code int
		want string // the whole of stderr
	}{
		{[]string{"thread", "show", absent}, 3, "uwf: thread " + absent + ": not found\n"},
		{[]string{"thread", "step", absent}, 3, "uwf: thread " + absent + ": not found\n"},
		{[]string{"thread", "read", absent}, 3, "uwf: thread " + absent + ": not found\n"},
		{[]string{"thread", "rm", absent}, 3, "uwf: thread " + absent + ": not found\n"},
		{[]string{"thread", "kill", absent}, 3, "uwf: thread " + absent + ": not found\n"},
		{[]string{"thread", "log", absent}, 3, "uwf: ref threads/" + absent + " has no log\n"},
		{[]string{"thread", "replay", absent}, 3, "uwf: thread " + absent + ": not found\n"},
		{[]string{"thread", "start", "nope", "-p", "x"}, 3, "uwf: workflow \"nope\": no such file, no workflow registered by that name, not a hash\n"},
		{[]string{"thread", "replay", id, "--workflow", "nope"}, 3, "uwf: workflow \"nope\": no such file, no workflow registered by that name, not a hash\n"},
		{[]string{"thread", "step", id, "--agent", "nope"}, 3, ""},
		{[]string{"thread", "fork", "0000000000001"}, 3, "uwf: fork from 0000000000001: object 0000000000001 was not found in the store\n"},
		{[]string{"workflow", "show", "nope"}, 3, "uwf: workflow \"nope\": no workflow registered by that name, and not a hash\n"},
		{[]string{"workflow", "history", "nope"}, 3, ""},
		{[]string{"workflow", "rm", "nope"}, 3, "uwf: workflow rm nope: no workflow has that name\n"},
		{[]string{"workflow", "rollback", "nope"}, 3, ""},
		{[]string{"cas", "get", "0000000000001"}, 3, "uwf: object 0000000000001 was not found in the store\n"},
		{[]string{"cas", "walk", "0000000000001"}, 3, ""},
		{[]string{"cas", "ref", "log", "nope"}, 3, "uwf: ref nope has no log\n"},
		{[]string{"cas", "schema", "get", "nope"}, 3, ""},
		{[]string{"cas", "put", "nope", "-"}, 3, ""},
		{[]string{"step", "show", "0000000000001"}, 3, "uwf: object 0000000000001 was not found in the store\n"},
		{[]string{"config", "get", "agents.nope"}, 3, "uwf: config agents.nope is not set\n"},
		{[]string{"config", "get", "defaultModel"}, 3, "uwf: config defaultModel is not set\n"},
		{[]string{"thread", "step", id, "--agent", "coder"}, 1, ""},
	} {
		r := e.run("{}", tc.args...)
		if r.code != tc.code {
			t.Errorf("uwf %s: exit %d, want %d\n%s", shellQuote(tc.args), r.code, tc.code, r.stderr)
		}
		if m := internalWord.FindString(r.stderr); m != "" {
			t.Errorf("uwf %s: stderr holds the internal words %q:\n%s", shellQuote(tc.args), m, r.stderr)
		}
		if !strings.HasPrefix(r.stderr, "uwf: ") || strings.Count(r.stderr, "uwf: ") != 1 {
			t.Errorf("uwf %s: stderr %q, want one uwf: line", shellQuote(tc.args), r.stderr)
		}
		if tc.want != "" && r.stderr != tc.want {
			t.Errorf("uwf %s: stderr\n%q\nwant\n%q", shellQuote(tc.args), r.stderr, tc.want)
		}
	}
}

// TestUserMessage pins the rewriting of internal words.
func TestUserMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"thread 01JGJFGR4E0000000000000001: cas: not found", "thread 01JGJFGR4E0000000000000001: not found"},
		{"config defaultModel is not set: cas: not found", "config defaultModel is not set"},
		{`agent "x": unknown agent: cas: not found: it is neither configured nor built in`, `agent "x": unknown agent: it is neither configured nor built in`},
		{"thread T: cas: not found: its ref threads/T is missing", "thread T: its ref threads/T is missing"},
		{"rollback w: H: not a version of this workflow: cas: not found (see: uwf workflow history w)", "rollback w: H: not a version of this workflow (see: uwf workflow history w)"},
		{"get H: cas: object corrupt: the bytes hash to G", "get H: corrupt: the bytes hash to G"},
		{"f.json: cas: too large: the file is 9 bytes", "f.json: too large: the file is 9 bytes"},
		{"cas: invalid ref name \"\": empty", "invalid ref name \"\": empty"},
		{"1 left out:\nthread T: head: get H: cas: not found\n(uwf cas fsck reports ...)", "1 left out:\nthread T: head: get H: not found\n(uwf cas fsck reports ...)"},
		{"role planner (agent a) failed: extract: the output does not start with a frontmatter block", "role planner (agent a) failed: the output does not start with a frontmatter block"},
		{"step: moderator: unknown status: \"x\"", "step: unknown status: \"x\""},
		{"walk: context canceled", "walk: interrupted"},
		{"ref x: cas: conflict", "ref x: conflict"},
		{"walk: get 0000000000001: cas: not found", "walk: object 0000000000001 was not found in the store"},
		{"log of ref a/b: cas: not found", "ref a/b has no log"},
		{"nothing internal here: agent coder", "nothing internal here: agent coder"},
	} {
		if got := userMessage(tc.in); got != tc.want {
			t.Errorf("userMessage(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
		}
	}
}

// FuzzUserMessage: rewriting any message leaves none of the sentinels'
// texts in it, and rewriting it again changes nothing.
func FuzzUserMessage(f *testing.F) {
	for _, s := range []string{
		"thread X: cas: not found", "a: cas: not found: b", "cas: not found", ": cas: not found",
		"get 0000000000001: cas: not found", "x: extract: cas: invalid: y", "cas: cas: not found",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got := userMessage(msg)
		for _, w := range internalWords {
			if strings.Contains(got, w.text) {
				t.Fatalf("userMessage(%q) = %q: still holds %q", msg, got, w.text)
			}
		}
		if again := userMessage(got); again != got {
			t.Fatalf("userMessage(%q) = %q, and again %q", msg, got, again)
		}
	})
}

// FuzzParseSince: --since never panics, and a value it takes as a
// duration or a day count is not after now.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"90m", "7d", "2026-11-25", "2026-11-25T06:00:00Z", "-1h", "d", "9999999999d"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSince(s, now)
		if err == nil && !strings.Contains(s, "-") && !strings.Contains(s, ":") && got.After(now) {
			t.Fatalf("parseSince(%q) = %v, after now", s, got)
		}
	})
}
