package disk

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// FormatVersion is the version of the on-disk layout this package reads and
// writes, recorded in the store's FORMAT file. Open refuses any other.
const FormatVersion = 1

// formatText is the FORMAT file of a new store.
var formatText = []byte("uwf store " + strconv.Itoa(FormatVersion) + "\nbackend disk\nhash xxh64\n")

// parseFormat checks a FORMAT file; the error wraps [cas.ErrFormat].
func parseFormat(b []byte) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: FORMAT: %s", cas.ErrFormat, fmt.Sprintf(format, args...))
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() {
		return bad("empty")
	}
	first := sc.Text()
	v, ok := strings.CutPrefix(first, "uwf store ")
	if !ok {
		return bad("first line %q is not \"uwf store <version>\"", first)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n != FormatVersion {
		return bad("version %q, this build knows version %d only", v, FormatVersion)
	}
	seen := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		want, known := map[string]string{"backend": "disk", "hash": "xxh64"}[key]
		switch {
		case !known:
			return bad("unknown setting %q", line)
		case val != want:
			return bad("%s %q, this build knows %q only", key, val, want)
		}
		seen[key] = true
	}
	for _, key := range []string{"backend", "hash"} {
		if !seen[key] {
			return bad("no %q line", key)
		}
	}
	return nil
}
