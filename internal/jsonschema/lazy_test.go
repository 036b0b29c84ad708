package jsonschema

import (
	"errors"
	"os"
	"sync"
	"testing"
)

// TestMain checks, before any test makes a compiler, that loading the
// package compiled no meta-schema: upstream did it in init.
func TestMain(m *testing.M) {
	if DraftsLoaded() {
		os.Stderr.WriteString("the drafts' meta-schemas were compiled before the first NewCompiler\n")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestDraftsLoadOnFirstCompiler checks that the first NewCompiler, from any
// number of goroutines at once, loads every draft's meta-schema and vocabulary
// schemas before returning, so that schemas are validated against them.
func TestDraftsLoadOnFirstCompiler(t *testing.T) {
	var wg sync.WaitGroup
	compilers := make([]*Compiler, 8)
	for i := range compilers {
		wg.Go(func() { compilers[i] = NewCompiler() })
	}
	wg.Wait()
	if !DraftsLoaded() {
		t.Fatal("DraftsLoaded is false after NewCompiler")
	}
	for _, d := range []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020} {
		if d.sch == nil {
			t.Errorf("%s: meta-schema not compiled", d)
		}
		for name, s := range d.allVocabs {
			if s == nil {
				t.Errorf("%s: vocabulary %s not compiled", d, name)
			}
		}
	}

	tests := []struct {
		name   string
		schema any
		valid  bool
	}{
		{"valid", map[string]any{"type": "object", "minProperties": 1.0}, true},
		{"type not a type name", map[string]any{"type": "objekt"}, false},
		{"minProperties negative", map[string]any{"minProperties": -1.0}, false},
		{"properties not an object", map[string]any{"properties": []any{}}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compilers[i%len(compilers)]
			c.DefaultDraft(Draft2020)
			url := "mem:///" + tt.name + ".json"
			if err := c.AddResource(url, tt.schema); err != nil {
				t.Fatal(err)
			}
			_, err := c.Compile(url)
			if tt.valid && err != nil {
				t.Fatalf("Compile: %v", err)
			}
			var sve *SchemaValidationError
			if !tt.valid && !errors.As(err, &sve) {
				t.Fatalf("Compile = %v, want a *SchemaValidationError (the draft's meta-schema rejects it)", err)
			}
		})
	}
}
