package registry_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
)

// putHash puts a parsed workflow in a fresh store and returns its hash.
func putHash(t *testing.T, file string, data []byte) cas.Hash {
	t.Helper()
	reg := registry.New(newRepo(t))
	res, err := reg.Put(t.Context(), mustParse(t, file, data))
	if err != nil {
		t.Fatalf("Put(%s): %v", file, err)
	}
	return res.Hash
}

// TestReformattedSameHash: key order, quoting, comments, flow or block
// style and anchors never change a workflow's hash.
func TestReformattedSameHash(t *testing.T) {
	for _, name := range []string{"review-loop.yaml", "develop.yaml"} {
		t.Run(name, func(t *testing.T) {
			other, err := os.ReadFile("testdata/reformatted/" + name)
			if err != nil {
				t.Fatal(err)
			}
			want := putHash(t, name, example(t, name))
			if got := putHash(t, "reformatted/"+name, other); got != want {
				t.Errorf("reformatted %s has hash %s, want %s", name, got, want)
			}
		})
	}
}

// TestGoldenHashes pins the hashes of the example workflows. They depend on
// the canonical encoder and the built-in schemas: run with -update after a
// deliberate change, and review the diff.
func TestGoldenHashes(t *testing.T) {
	var b strings.Builder
	for _, name := range []string{"develop.yaml", "review-loop.yaml"} {
		reg := registry.New(newRepo(t))
		res, err := reg.Put(t.Context(), mustParse(t, name, example(t, name)))
		if err != nil {
			t.Fatal(err)
		}
		st, err := reg.Show(t.Context(), res.Hash.String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s workflow %s\n", name, res.Hash)
		for _, role := range st.Workflow.RoleNames() {
			fmt.Fprintf(&b, "%s role %s schema %s\n", name, role, st.Schemas[role])
		}
	}
	const golden = "testdata/hashes.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("hashes changed (run go test -update if deliberate):\n%s\nwant:\n%s", b.String(), want)
	}
}
