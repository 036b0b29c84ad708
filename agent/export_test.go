package agent

import "strings"

// WriteYAML exposes the YAML writer of synth and the format instruction to
// the tests.
func WriteYAML(v any) string {
	var b strings.Builder
	writeYAML(&b, v, 0)
	return b.String()
}
