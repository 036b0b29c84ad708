package main

import (
	"errors"
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

// TestHelp checks that help goes to stdout, exits 0, creates nothing, and
// lists the exit codes.
func TestHelp(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{}, {"--help"}, {"-h"}, {"help"}, {"cas"}, {"cas", "--help"}, {"help", "cas"},
		{"cas", "get", "--help"}, {"cas", "get", "x", "--help"}, {"help", "cas", "get"},
		{"cas", "help", "get"}, {"cas", "schema", "put", "--help"}, {"cas", "schema"},
		{"--json", "cas", "gc", "-h"},
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
