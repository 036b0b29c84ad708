package cas_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is intended):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestBuiltinHashes pins the meta-schema and the built-in schemas: they are
// constants of the store format, and any change to their bytes is a
// format change (docs/FORMAT.md).
func TestBuiltinHashes(t *testing.T) {
	var b strings.Builder
	for _, bi := range cas.Builtins() {
		fmt.Fprintf(&b, "%s %s %s\n", bi.Name, bi.Hash, bi.Node)
	}
	golden(t, "builtins.txt", b.String())
	if cas.Sum(cas.MetaSchemaNode()) != cas.MetaSchema {
		t.Error("the meta-schema node does not hash to MetaSchema")
	}
	for _, name := range []string{"meta", "content", "workflow", "start", "step", "mark", "detail", "failure"} {
		if !cas.IsBuiltinName(name) {
			t.Errorf("IsBuiltinName(%q) = false", name)
		}
	}
	if cas.IsBuiltinName("note") {
		t.Error(`IsBuiltinName("note") = true`)
	}
}
