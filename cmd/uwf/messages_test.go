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
