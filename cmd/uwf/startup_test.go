package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/jsonschema"
)

// startupMain runs uwf as main does, then writes to the file report the
// JSON Schema drafts whose meta-schemas the run compiled, and to
// report+".signals" whether it asked for SIGINT and SIGTERM, for
// TestStartupLazy.
func startupMain(report string) int {
	code := run()
	if err := os.WriteFile(report+".signals", []byte(strconv.FormatBool(signalsAsked.Load())), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "startup report:", err)
		return 1
	}
	var loaded []string
	for _, d := range []*jsonschema.Draft{jsonschema.Draft4, jsonschema.Draft6, jsonschema.Draft7, jsonschema.Draft2019, jsonschema.Draft2020} {
		if d.Loaded() {
			loaded = append(loaded, d.String())
		}
	}
	if err := os.WriteFile(report, []byte(strings.Join(loaded, "\n")), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "startup report:", err)
		return 1
	}
	return code
}

// TestStartupLazy runs uwf in a process of its own (this test binary, see
// TestMain) and checks that what a command does not use is not
// initialised: `uwf --version` opens no store, compiles no JSON Schema
// meta-schema and asks for no signals (signal.Notify starts two OS
// threads), reading a node compiles none either, and a command that
// validates compiles draft 2020-12's only (upstream's jsonschema compiled
// the five drafts' in init, on every start: internal/jsonschema/README.md).
func TestStartupLazy(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	report := filepath.Join(dir, "report")
	uwf := func(t *testing.T, env []string, args ...string) (stdout string, drafts []string, signals bool) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
		cmd.Env = append(os.Environ(), "UWF_TEST_STARTUP="+report, "UWF_HOME="+home, "UWF_STORE=", "UWF_DURABILITY=none", "UWF_LOG_LEVEL=")
		cmd.Env = append(cmd.Env, env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil || errb.Len() > 0 {
			t.Fatalf("uwf %q: %v\nstderr:\n%s", args, err, errb.String())
		}
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 {
			drafts = strings.Split(string(data), "\n")
		}
		sig, err := os.ReadFile(report + ".signals")
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), drafts, string(sig) == "true"
	}

	t.Run("version", func(t *testing.T) {
		want := "uwf version " + version() + "\n"
		for _, env := range [][]string{
			nil,
			{"UWF_STORE=postgres://uwf@127.0.0.1:1/nowhere?sslmode=disable"}, // never dialled
			{"UWF_STORE=" + filepath.Join(dir, "not-a-store-file")},
		} {
			if err := os.WriteFile(filepath.Join(dir, "not-a-store-file"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, drafts, signals := uwf(t, env, "--version")
			if out != want {
				t.Errorf("uwf --version with %q printed %q, want %q", env, out, want)
			}
			if len(drafts) > 0 {
				t.Errorf("uwf --version compiled the meta-schemas of %q", drafts)
			}
			if signals {
				t.Errorf("uwf --version asked for signals")
			}
			if _, err := os.Stat(home); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("uwf --version touched the home %s: %v", home, err)
			}
		}
	})

	t.Run("commands", func(t *testing.T) {
		h := strings.TrimSpace(func() string { out, _, _ := uwf(t, nil, "cas", "put-text", "hello"); return out }())
		tests := []struct {
			args      []string
			drafts    []string
			noSignals bool // a command that never consults its context
		}{
			{[]string{"cas", "get", h}, nil, false},
			{[]string{"cas", "ref", "list"}, nil, false},
			{[]string{"thread", "list"}, nil, false},
			{[]string{"cas", "put-text", "validated"}, []string{jsonschema.Draft2020.String()}, false},
			{[]string{"help", "cas"}, nil, true},
			{[]string{"cas", "get", "--help"}, nil, true},
		}
		for _, tt := range tests {
			_, drafts, signals := uwf(t, nil, tt.args...)
			if !slices.Equal(drafts, tt.drafts) {
				t.Errorf("uwf %q compiled the meta-schemas of %q, want %q", tt.args, drafts, tt.drafts)
			}
			if signals && tt.noSignals {
				t.Errorf("uwf %q asked for signals, which it never waits on", tt.args)
			}
		}
	})
}

// TestInitCost checks, with the runtime's init trace, that no package of
// this module does much work when the program starts (a package-level
// regexp.MustCompile, a compiled schema, a parsed template): each one's
// init allocates at most 200 times. Before issue 13, cas's made 468
// allocations (the built-in schema nodes) and the JSON Schema validator's
// 21,286 (every draft's meta-schema). The test binary's own package (package
// main with its tests' variables) is left out.
//
// It also bounds what every package's init allocates together, the
// standard library's and the dependencies' too (what a dependency's init
// costs is paid by every command): at most 1 MiB. With bluemonday (and
// gorilla/css, douceur, x/net/html) and goldmark's extension package, which
// the viewer used before, uwf allocated 1.8 MB before main; without them
// about 0.7 MB.
func TestInitCost(t *testing.T) {
	const maxAllocs = 200
	const maxTotalBytes = 1 << 20
	cmd := exec.CommandContext(t.Context(), os.Args[0], "--version")
	cmd.Env = append(os.Environ(), "UWF_TEST_MAIN=1", "GODEBUG=inittrace=1", "UWF_HOME="+filepath.Join(t.TempDir(), "home"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("uwf --version: %v\n%s", err, errb.String())
	}
	// init github.com/uncaged/uwf/cas @6.1 ms, 0.013 ms clock, 896 bytes, 10 allocs
	line := regexp.MustCompile(`^init (\S+) @.* clock, (\d+) bytes, (\d+) allocs$`)
	seen, totalBytes := 0, 0
	var heaviest []string
	for _, l := range strings.Split(errb.String(), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] == "github.com/uncaged/uwf/cmd/uwf" {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		totalBytes += n
		if n > 50_000 {
			heaviest = append(heaviest, fmt.Sprintf("%s (%d bytes)", m[1], n))
		}
		if !strings.HasPrefix(m[1], "github.com/uncaged/uwf/") {
			continue
		}
		seen++
		if n, _ := strconv.Atoi(m[3]); n > maxAllocs {
			t.Errorf("init of %s: %s allocations (%s bytes), want at most %d: make what it builds on first use", m[1], m[3], m[2], maxAllocs)
		}
	}
	t.Logf("every package's init together: %d bytes", totalBytes)
	if totalBytes > maxTotalBytes {
		t.Errorf("every package's init together allocated %d bytes, want at most %d; the heaviest: %s", totalBytes, maxTotalBytes, strings.Join(heaviest, ", "))
	}
	if seen < 5 {
		t.Fatalf("the init trace names %d packages of this module, want at least 5 (cas, internal/jsonschema, ...):\n%s", seen, errb.String())
	}
}
