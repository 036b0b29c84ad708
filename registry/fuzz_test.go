package registry_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
)

// FuzzParse feeds Parse hostile bytes: it must never panic, must fail only
// with a *ValidationError or ErrTooLarge, and a workflow it accepts must
// validate again and report the statuses its graph uses.
func FuzzParse(f *testing.F) {
	seeds, _ := fs.Glob(examples.FS, "*.yaml")
	for _, name := range seeds {
		data, err := fs.ReadFile(examples.FS, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, pattern := range []string{"testdata/invalid/*.yaml", "testdata/reformatted/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := registry.Parse("fuzz.yaml", data)
		if err != nil {
			var ve *registry.ValidationError
			if !errors.As(err, &ve) && !errors.Is(err, cas.ErrTooLarge) {
				t.Fatalf("Parse error of type %T: %v", err, err)
			}
			if ve != nil && len(ve.Problems) == 0 {
				t.Fatalf("ValidationError without problems")
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("parsed workflow does not validate again: %v", err)
		}
		for _, role := range w.RoleNames() {
			if len(w.Statuses(role)) == 0 {
				t.Fatalf("role %s of a valid workflow pins no status", role)
			}
		}
	})
}
