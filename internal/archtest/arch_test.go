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
	"cas":          {"github.com/cespare/xxhash/v2", "github.com/santhosh-tekuri/jsonschema/v6", "golang.org/x/text", "gopkg.in/yaml.v3"},
	"cas/castest":  {"cas"},
	"cas/disk":     {"cas"},
	"cas/postgres": {"cas", "github.com/jackc/pgx/v5"},
	"moderator":    {},
	"roleschema":   {},
	"extract":      {"cas", "roleschema"},
	"agent":        {"cas", "config", "roleschema"},
	"config":       {"cas", "gopkg.in/yaml.v3"},
	"registry":     {"cas", "moderator", "roleschema", "gopkg.in/yaml.v3"},
	"examples":     {},
	"thread":       {"cas", "registry", "config", "moderator", "agent", "extract", "github.com/oklog/ulid/v2"},
	"store":        {"cas", "cas/disk", "cas/postgres"},
	"cmd/uwf": {"cas", "store", "registry", "config", "moderator", "roleschema", "agent", "extract", "thread", "examples",
		"github.com/urfave/cli/v2", "github.com/oklog/ulid/v2", "gopkg.in/yaml.v3"},
}

// internalAllowed lists what internal helpers may import besides the
// standard library and each other; one not listed may use only those.
var internalAllowed = map[string][]string{
	"internal/yamldoc":    {"cas", "gopkg.in/yaml.v3"}, // registry's and config's YAML files
	"internal/atomicfile": {"golang.org/x/sys"},        // renameat2, syncfs, flock on every Unix architecture
}

type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func TestImportLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		internal := rel == "internal" || strings.HasPrefix(rel, "internal/")
		rules, known := allowed[rel]
		if internal {
			rules = internalAllowed[rel]
		}
		if !known && !internal {
			t.Errorf("package %s is not in the import table: add it to docs/ARCHITECTURE.md and this test", p.ImportPath)
			continue
		}
		seen++
		for _, imp := range p.Imports {
			if isStd(imp) {
				continue
			}
			irel, ours := strings.CutPrefix(imp, module+"/")
			switch {
			case ours && (irel == "internal" || strings.HasPrefix(irel, "internal/")):
				// Any package may use internal helpers.
			case ours && !slices.Contains(rules, irel):
				t.Errorf("%s imports %s, which the layer table does not allow", rel, irel)
			case !ours && !allowedModule(rules, imp):
				t.Errorf("%s imports third-party %s, which the layer table does not allow", rel, imp)
			}
		}
	}
	if seen == 0 {
		t.Fatal("go list found no packages")
	}
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
