package moderator_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/uncaged/uwf/moderator"
)

// FuzzRender checks that Render never panics and agrees with Fields: both
// accept the same templates, and an output holding every field Fields names
// renders without error.
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		"", "Plan this task.", "{{ steps }}", "{{summary}} {{ review.comments }}", "{{ steps.0 }}",
		"{{", "{{ }}", "}}", "{ {{ a }} }", "{{{ a }}}", "{{ a..b }}", "{{ a.0.b }} {{ a }}",
		"{{ 0 }}", "{{ a\xff }}", "x {{ a }", "{{ status }}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, template string) {
		fields, ferr := moderator.Fields(template)
		got, rerr := moderator.Render(template, output)
		if (ferr != nil) != errors.Is(rerr, moderator.ErrBadTemplate) {
			t.Fatalf("Fields(%q) error = %v but Render error = %v", template, ferr, rerr)
		}
		if ferr != nil {
			if !errors.Is(ferr, moderator.ErrBadTemplate) {
				t.Fatalf("Fields(%q) error = %v, want %v", template, ferr, moderator.ErrBadTemplate)
			}
			return
		}
		if len(fields) == 0 && (rerr != nil || got != template) {
			t.Fatalf("Render(%q) = %q, %v; a template without fields renders as itself", template, got, rerr)
		}

		// Build an output holding every field, objects all the way down.
		full := map[string]any{}
		for _, f := range fields {
			m := full
			segs := strings.Split(f, ".")
			for _, s := range segs[:len(segs)-1] {
				next, ok := m[s].(map[string]any)
				if !ok {
					next = map[string]any{}
					m[s] = next
				}
				m = next
			}
			if _, ok := m[segs[len(segs)-1]]; !ok {
				m[segs[len(segs)-1]] = "v"
			}
		}
		if _, err := moderator.Render(template, full); err != nil {
			t.Fatalf("Render(%q) on an output with all of %q: %v", template, fields, err)
		}
		if rerr == nil {
			// Every field of a successful render is present in output.
			for _, f := range fields {
				if _, err := moderator.Render("{{"+f+"}}", output); err != nil {
					t.Fatalf("Render(%q) succeeded but field %q is missing: %v", template, f, err)
				}
			}
		}
	})
}
