package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestReorderArgs(t *testing.T) {
	app := commandTree(newApp(io.Discard, io.Discard))
	for _, tc := range []struct {
		in, want string // space-separated; "_" stands for an empty argument
	}{
		{"uwf", "uwf"},
		{"uwf cas get H", "uwf cas get H"},
		{"uwf cas get H --json", "uwf --json cas get H"},
		{"uwf cas get --json H", "uwf --json cas get H"},
		{"uwf --json cas get H", "uwf --json cas get H"},
		{"uwf cas --json get H", "uwf --json cas get H"},
		{"uwf cas get H --store /s --home=/h", "uwf --store=/s --home=/h cas get H"},
		{"uwf cas get H --store _", "uwf --store= cas get H"},
		{"uwf cas get H --log-level debug", "uwf --log-level=debug cas get H"},
		{"uwf cas get -json H", "uwf -json cas get H"},
		{"uwf cas get --batch", "uwf cas get --batch"},
		{"uwf cas walk H --tree", "uwf cas walk --tree H"},
		{"uwf cas walk H --tree=false", "uwf cas walk --tree=false H"},
		{"uwf cas gc --grace 0 --dry-run", "uwf cas gc --grace=0 --dry-run"},
		{"uwf cas gc --grace -1h", "uwf cas gc --grace=-1h"},
		{"uwf cas schema put f.yaml --name n", "uwf cas schema put --name=n f.yaml"},
		{"uwf cas schema put --name n f.yaml --json", "uwf --json cas schema put --name=n f.yaml"},
		{"uwf cas put content -", "uwf cas put content -"},
		{"uwf cas put-text -- -x", "uwf cas put-text -- -x"},
		{"uwf cas put-text -- --json", "uwf cas put-text -- --json"},
		{"uwf --json cas put-text -- a b", "uwf --json cas put-text a b"},
		{"uwf cas get H --help", "uwf cas get --help"},
		{"uwf cas get -h -- -x", "uwf cas get -h"},
		{"uwf cas get -h", "uwf cas get -h"},
		{"uwf help", "uwf --help"},
		{"uwf help cas", "uwf cas --help"},
		{"uwf help cas schema put", "uwf cas schema put --help"},
		{"uwf cas help get", "uwf cas get --help"},
		{"uwf --version", "uwf --version"},
	} {
		in := fields(tc.in)
		got, err := reorderArgs(app, in)
		if err != nil {
			t.Errorf("reorderArgs(%q): %v", in, err)
			continue
		}
		if want := fields(tc.want); !slices.Equal(got, want) {
			t.Errorf("reorderArgs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReorderArgsErrors(t *testing.T) {
	app := commandTree(newApp(io.Discard, io.Discard))
	for _, tc := range []struct {
		in, want string
	}{
		{"uwf nope", `unknown command "nope" (see 'uwf --help')`},
		{"uwf cas nope", `unknown subcommand "nope" (see 'uwf cas --help')`},
		{"uwf cas schema nope x", `unknown subcommand "nope" (see 'uwf cas schema --help')`},
		{"uwf --nope cas", `unknown flag --nope (see 'uwf --help')`},
		{"uwf cas get H --nope", `unknown flag --nope (see 'uwf cas get --help')`},
		{"uwf cas put-text -x", `unknown flag -x (put -- before an argument that starts with -) (see 'uwf cas put-text --help')`},
		{"uwf cas get ---json H", `unknown flag ---json (see 'uwf cas get --help')`},
		{"uwf --tree cas walk H", `unknown flag --tree (see 'uwf --help')`},
		{"uwf cas get --tree H", `unknown flag --tree (see 'uwf cas get --help')`},
		{"uwf cas gc --grace", `flag --grace needs a value (see 'uwf cas gc --help')`},
		{"uwf cas get H --store", `flag --store needs a value (see 'uwf cas get --help')`},
		{"uwf help nope", `no help topic "nope" (see 'uwf --help')`},
		{"uwf help cas get x", `no help topic "x": uwf cas get has no subcommands (see 'uwf cas get --help')`},
	} {
		in := fields(tc.in)
		got, err := reorderArgs(app, in)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("reorderArgs(%q) = %q, %v; want a usage error", in, got, err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("reorderArgs(%q) error = %q, want %q", in, err, tc.want)
		}
	}
}

func fields(s string) []string {
	f := strings.Fields(s)
	for i := range f {
		if f[i] == "_" {
			f[i] = ""
		}
	}
	return f
}

// TestArgumentOrder runs the same commands with flags in every position
// people put them, in-process.
func TestArgumentOrder(t *testing.T) {
	e := newEnv(t)
	h := e.okHash("", "cas", "put-text", "hello").String()
	wantJSON := `{"hash":"` + h + `","type":"` + contentHash(t, e) + `","payload":"hello"}` + "\n"
	for _, args := range [][]string{
		{"--json", "cas", "get", h},
		{"cas", "--json", "get", h},
		{"cas", "get", "--json", h},
		{"cas", "get", h, "--json"},
		{"cas", "get", h, "--json=true"},
		{"cas", "get", h, "--json", "--log-level", "error"},
		{"cas", "get", h, "--log-level=error", "--json"},
		{"--home", e.home, "cas", "get", h, "--json"},
		{"cas", "get", h, "--home", e.home, "--json"},
		{"cas", "get", h, "--store", e.storeDir(), "--json"},
		{"cas", "get", "--store", "file://" + e.storeDir() + "?durability=none", h, "--json"},
		{"cas", "get", h, "--durability", "strict", "--json"},
		{"cas", "get", "--json", "--", h},
	} {
		r := e.run("", args...)
		if r.code != 0 || r.stdout != wantJSON || r.stderr != "" {
			t.Errorf("uwf %q: %v\nwant stdout %q", args, r, wantJSON)
		}
	}
	for _, args := range [][]string{
		{"cas", "put-text", "--", "-x"},
		{"cas", "put-text", "--json", "--", "-x"},
		{"--json", "cas", "put-text", "--", "-x"},
	} {
		r := e.run("", args...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("uwf %q: %v", args, r)
		}
	}
	if got := e.ok("", "cas", "get", e.okHash("", "cas", "put-text", "--", "-x").String()); !strings.Contains(got, `"payload":"-x"`) {
		t.Errorf("put-text -- -x stored %s", got)
	}
	// A command's flags after its arguments, and a value flag whose value
	// looks like an argument.
	tree := e.ok("", "cas", "walk", "--tree", h)
	for _, args := range [][]string{
		{"cas", "walk", h, "--tree"},
		{"cas", "walk", h, "--log-level", "warn", "--tree"},
		{"--log-level", "warn", "cas", "walk", "--tree", h},
	} {
		if got := e.ok("", args...); got != tree {
			t.Errorf("uwf %q printed %q, want %q", args, got, tree)
		}
	}
}

func contentHash(t *testing.T, e *env) string {
	t.Helper()
	out := e.ok("", "cas", "schema", "list")
	for line := range strings.Lines(out) {
		if name, h, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == "content" {
			return h
		}
	}
	t.Fatalf("no content schema in %q", out)
	return ""
}
