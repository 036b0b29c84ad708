package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/uncaged/uwf"

// allowed lists, for each package of this module, the packages of this module
// and the third-party modules it may import directly (besides the standard
// library and internal/...). It is the table in docs/ARCHITECTURE.md.
var allowed = map[string][]string{
	"cas":            {"github.com/cespare/xxhash/v2", "golang.org/x/text", "gopkg.in/yaml.v3"},
	"cas/castest":    {"cas"},
	"cas/disk":       {"cas"},
	"cas/postgres":   {"cas", "github.com/jackc/pgx/v5"},
	"moderator":      {},
	"roleschema":     {},
	"extract":        {"cas", "roleschema"},
	"agent":          {"cas", "config", "roleschema"},
	"config":         {"cas", "gopkg.in/yaml.v3"},
	"registry":       {"cas", "moderator", "roleschema", "gopkg.in/yaml.v3"},
	"examples":       {},
	"bench/backends": {"cas"}, // benchmarks comparing the backends (their tests import them)
	"serve":          {"thread", "registry", "config", "cas", "store", "serve/web"},
	// the viewer: pages rendered on the server from the engine; goldmark
	// renders markdown, which the viewer's own allowlist sanitises
	// (untrusted store text)
	"serve/web": {"thread", "registry", "moderator", "extract", "cas", "github.com/yuin/goldmark"},
	// the claim loop (SPEC §1): never serve
	"worker": {"thread", "registry", "config", "cas", "store"},
	"thread": {"cas", "registry", "config", "moderator", "agent", "extract", "github.com/oklog/ulid/v2"},
	"store":  {"cas", "cas/disk", "cas/postgres"},
	"cmd/uwf": {"cas", "store", "registry", "config", "moderator", "roleschema", "agent", "extract", "thread", "examples", "serve", "worker",
		"github.com/urfave/cli/v2", "github.com/oklog/ulid/v2", "gopkg.in/yaml.v3",
		"golang.org/x/term"}, // uwf init's hidden API-key prompt
}

// internalAllowed lists what internal helpers may import besides the
// standard library and each other; one not listed may use only those.
var internalAllowed = map[string][]string{
	"internal/yamldoc":    {"cas", "gopkg.in/yaml.v3"}, // registry's and config's YAML files
	"internal/atomicfile": {"golang.org/x/sys"},        // renameat2, syncfs, flock on every Unix architecture
	"internal/pgtest":     {"github.com/jackc/pgx/v5"}, // tests' schemas on the test server, dropped after
	"internal/dirnotify":  {"golang.org/x/sys"},        // inotify, waking the disk store's watchers
	"internal/progress":   {"cas", "golang.org/x/sys"}, // cas.Progress on stderr; x/sys tells a terminal
	"internal/usermsg":    {"cas"},                     // errors in the user's words, for the CLI, the HTTP API and the worker's log

	// santhosh-tekuri/jsonschema v6.0.3, whose messages use x/text
	"internal/jsonschema": {"golang.org/x/text"},
	// goldmark's Table, Strikethrough and TaskList extensions (v1.8.7), without
	// the extension package's init
	"internal/gfm":             {"github.com/yuin/goldmark"},
	"internal/jsonschema/kind": {"golang.org/x/text"},
	"internal/browsertest":     {"github.com/chromedp/chromedp", "github.com/chromedp/cdproto"}, // the viewer's tests in a real headless Chromium
	"internal/proctest":        {"thread", "cas"},                                               // run records' logs, for the tests of workers and servers
}

// testAlso lists what the tests of every package may import besides what
// the package itself may: the conformance suite, the store opener and the
// backends (a backend matrix needs them, and pgx to reach behind a
// PostgreSQL store's back: drop a schema, damage a row), and the bundled
// example workflows (fixtures). It is the second table in
// docs/ARCHITECTURE.md.
var testAlso = []string{"cas/castest", "store", "cas/disk", "cas/postgres", "github.com/jackc/pgx/v5", "examples"}

// testOnly lists what one package's tests may import besides testAlso:
// the viewer's tests drive a real headless Chromium; serve's tests make
// thread IDs of their own (fixed, for golden files, and in the viewer's,
// so what the synth agent makes up is the same each run); uwf's tests draw
// progress bars on a pseudo-terminal; the viewer's fuzz tests parse the
// sanitiser's output with golang.org/x/net/html, as a browser parses it.
var testOnly = map[string][]string{
	"cmd/uwf":   {"github.com/creack/pty", "golang.org/x/sys"}, // uwf init's questions and the progress bars on a real pseudo-terminal (x/sys: its echo flag)
	"serve/web": {"github.com/oklog/ulid/v2", "github.com/chromedp/chromedp", "golang.org/x/net/html"},
	"serve":     {"github.com/oklog/ulid/v2", "github.com/chromedp/chromedp"},
}

// testNever lists what a package's tests may not import even so: the
// backends' tests never import each other (a cross-backend benchmark lives
// in bench/backends).
var testNever = map[string][]string{
	"cas/disk":     {"cas/postgres", "github.com/jackc/pgx/v5"},
	"cas/postgres": {"cas/disk"},
}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string // of the package's own _test.go files
	XTestImports []string // of its package <name>_test files
}

// listPackages returns every package of the module, by go list.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var ps []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		t.Fatal("go list found no packages")
	}
	return ps
}

func TestImportLayers(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		rules, known := rulesOf(rel)
		if !known {
			t.Errorf("package %s is not in the import table: add it to docs/ARCHITECTURE.md and this test", p.ImportPath)
			continue
		}
		for _, why := range violations(rel, p.Imports, rules, nil) {
			t.Errorf("%s %s, which the layer table does not allow", rel, why)
		}
	}
}

// TestTestImports checks the imports of every package's tests: what the
// package may import, plus testAlso, minus testNever.
func TestTestImports(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		rules, known := rulesOf(rel)
		if !known {
			continue // TestImportLayers reports it
		}
		rules = append(append(append(slices.Clone(rules), testAlso...), testOnly[rel]...), rel) // an external test imports its own package
		imports := append(slices.Clone(p.TestImports), p.XTestImports...)
		for _, why := range violations(rel, imports, rules, testNever[rel]) {
			t.Errorf("tests of %s: %s, which the test import table does not allow", rel, why)
		}
	}
}

// TestRules checks the rules the tables above rely on, against a made-up
// package, so that a broken checker cannot pass every package.
func TestRules(t *testing.T) {
	for _, c := range []struct {
		rel     string
		imports []string
		rules   []string
		never   []string
		bad     int
	}{
		{"agent", []string{"fmt", module + "/cas", module + "/internal/secret"}, []string{"cas"}, nil, 0},
		{"agent", []string{module + "/extract"}, []string{"cas"}, nil, 1},
		{"agent", []string{module + "/thread", "github.com/x/y"}, []string{"cas"}, nil, 2},
		{"cas", []string{"github.com/cespare/xxhash/v2"}, []string{"github.com/cespare/xxhash/v2"}, nil, 0},
		{"cas", []string{"github.com/cespare/xxhash/v2/sub"}, []string{"github.com/cespare/xxhash/v2"}, nil, 0},
		{"cas", []string{"github.com/cespare/xxhash/v3"}, []string{"github.com/cespare/xxhash/v2"}, nil, 1},
		{"cas/disk", []string{module + "/cas/postgres"}, append([]string{"cas"}, testAlso...), testNever["cas/disk"], 1},
		{"cas/disk", []string{"github.com/jackc/pgx/v5/pgxpool"}, append([]string{"cas"}, testAlso...), testNever["cas/disk"], 1},
		{"cas/postgres", []string{module + "/cas/disk"}, append([]string{"cas"}, testAlso...), testNever["cas/postgres"], 1},
		{"thread", []string{module + "/cas/disk", module + "/store"}, append([]string{"cas"}, testAlso...), nil, 0},
	} {
		if got := violations(c.rel, c.imports, c.rules, c.never); len(got) != c.bad {
			t.Errorf("violations(%s, %v) = %q, want %d", c.rel, c.imports, got, c.bad)
		}
	}
}

// rulesOf returns the imports the table allows the package rel.
func rulesOf(rel string) (rules []string, known bool) {
	if rel == "internal" || strings.HasPrefix(rel, "internal/") {
		return internalAllowed[rel], true
	}
	rules, known = allowed[rel]
	return rules, known
}

// violations says which of imports the rules do not allow (or never
// forbids): standard packages and internal helpers are always allowed.
func violations(rel string, imports, rules, never []string) []string {
	var out []string
	for _, imp := range imports {
		if isStd(imp) {
			continue
		}
		irel, ours := strings.CutPrefix(imp, module+"/")
		switch {
		case ours && slices.Contains(never, irel), !ours && allowedModule(never, imp):
			out = append(out, "imports "+imp+" (the backends' tests never import each other)")
		case ours && (irel == "internal" || strings.HasPrefix(irel, "internal/")):
			// Any package may use internal helpers.
		case ours && !slices.Contains(rules, irel):
			out = append(out, "imports "+irel)
		case !ours && !allowedModule(rules, imp):
			out = append(out, "imports third-party "+imp)
		}
	}
	return out
}

func allowedModule(rules []string, imp string) bool {
	for _, r := range rules {
		if imp == r || strings.HasPrefix(imp, r+"/") {
			return true
		}
	}
	return false
}

// isStd reports whether an import path belongs to the standard library: its
// first element has no dot.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// heavyInit lists packages uwf must not link, with why: a package's init
// runs on every start of every command (Go has no lazy package init), and
// these spend about a millisecond or more in theirs on what uwf does
// without them (issue 13; bench/README.md, start-up).
var heavyInit = map[string]string{
	"github.com/microcosm-cc/bluemonday":    "regexps and maps at init; serve/web sanitises goldmark's output with its own allowlist",
	"github.com/gorilla/css/scanner":        "bluemonday's CSS scanner, regexps at init",
	"github.com/aymerick/douceur/parser":    "bluemonday's CSS parser",
	"golang.org/x/net/html":                 "bluemonday's parser; serve/web's tests use it, the binary does not",
	"github.com/yuin/goldmark/extension":    "linkify's regexps at init; internal/gfm holds the three extensions the viewer uses",
	"github.com/santhosh-tekuri/jsonschema": "every draft's meta-schema compiled at init; internal/jsonschema compiles on first use",
}

// TestStartupDeps checks that the uwf binary links none of heavyInit.
func TestStartupDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/cmd/uwf").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps %s/cmd/uwf listed %d packages, want the whole program's", module, len(deps))
	}
	for _, d := range deps {
		for p, why := range heavyInit {
			if d == p || strings.HasPrefix(d, p+"/v") && !strings.Contains(strings.TrimPrefix(d, p+"/v"), "/") {
				t.Errorf("uwf links %s (imported through %s): %s", d, importers(deps, d), why)
			}
		}
	}
}

// importers names, by go list, the packages among deps that import p.
func importers(deps []string, p string) string {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		return "?"
	}
	var by []string
	for _, l := range strings.Split(string(out), "\n") {
		name, imports, ok := strings.Cut(l, ": ")
		if ok && slices.Contains(strings.Fields(imports), p) {
			by = append(by, name)
		}
	}
	if len(by) == 0 {
		return "a dependency"
	}
	return strings.Join(by, ", ")
}
