package jsonschema

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

var drafts = []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020}

// TestMain checks, before any test runs, that loading the package compiled
// no meta-schema: upstream compiled all of them in init.
func TestMain(m *testing.M) {
	for _, d := range drafts {
		if d.Loaded() {
			fmt.Fprintf(os.Stderr, "%s: meta-schema compiled at start-up\n", d)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// compile compiles doc as a schema of the default draft d.
func compile(c *Compiler, d *Draft, name string, doc any) error {
	c.DefaultDraft(d)
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return err
	}
	_, err := c.Compile(url)
	return err
}

// TestDraftsLoadOnFirstUse checks that a draft's meta-schemas are compiled
// when a schema of that draft is first compiled, from any number of
// goroutines at once, and only that draft's; and that schemas are then
// validated against them.
func TestDraftsLoadOnFirstUse(t *testing.T) {
	c := NewCompiler()
	for _, d := range drafts {
		if d.Loaded() {
			t.Fatalf("%s: loaded by NewCompiler", d)
		}
	}

	// Draft 2020-12 first, from 8 goroutines at once (go test -race).
	valid := map[string]any{"type": "object", "minProperties": 1.0}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = compile(NewCompiler(), Draft2020, fmt.Sprint("valid", i), valid) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, d := range drafts {
		if d.Loaded() != (d == Draft2020) {
			t.Errorf("%s: Loaded() = %v after compiling a 2020-12 schema", d, d.Loaded())
		}
	}
	if Draft2020.sch == nil || len(Draft2020.vocabSchemas) != len(Draft2020.allVocabs) {
		t.Fatalf("draft 2020-12: meta-schema %v, %d of %d vocabulary schemas", Draft2020.sch, len(Draft2020.vocabSchemas), len(Draft2020.allVocabs))
	}
	for name, s := range Draft2020.vocabSchemas {
		if s == nil {
			t.Errorf("draft 2020-12: vocabulary %s not compiled", name)
		}
	}

	tests := []struct {
		name   string
		draft  *Draft
		schema any
	}{
		{"type not a type name", Draft2020, map[string]any{"type": "objekt"}},
		{"minProperties negative", Draft2020, map[string]any{"minProperties": -1.0}},
		{"properties not an object", Draft2020, map[string]any{"properties": []any{}}},
		{"draft-07 type", Draft7, map[string]any{"type": "objekt"}},
		{"draft-04 required empty", Draft4, map[string]any{"required": []any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compile(c, tt.draft, tt.name, tt.schema)
			var sve *SchemaValidationError
			if !errors.As(err, &sve) {
				t.Fatalf("Compile = %v, want a *SchemaValidationError (the draft's meta-schema rejects it)", err)
			}
			if !tt.draft.Loaded() {
				t.Errorf("%s: not loaded after compiling one of its schemas", tt.draft)
			}
		})
	}
}
