//go:build !unix

package disk_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas/disk"
)

// TestUnsupportedPlatform: where there is no flock(2), Create and Open fail
// with a clear error wrapping errors.ErrUnsupported, and make nothing.
func TestUnsupportedPlatform(t *testing.T) {
	dir := t.TempDir()
	for name, f := range map[string]func(string, *disk.Options) (*disk.Store, error){
		"Create": disk.Create, "Open": disk.Open, "OpenOrCreate": disk.OpenOrCreate,
	} {
		s, err := f(dir, nil)
		if s != nil || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "PostgreSQL") {
			t.Errorf("%s = %v, %v; want an error wrapping errors.ErrUnsupported that names the alternative", name, s, err)
		}
	}
}
