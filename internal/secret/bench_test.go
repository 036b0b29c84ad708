package secret_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/secret"
)

// benchTexts are what an agent's output looks like: plain text, and a
// tool's JSON output (its answer a JSON string full of \n and \"
// escapes), about 64 KiB each, one with a secret the tool \u-escaped.
func benchTexts() map[string]string {
	var b strings.Builder
	for b.Len() < 64<<10 {
		b.WriteString("The function reads the config, checks \"every\" field and returns C:/path/to/file on line 42.\n")
	}
	plain := b.String()
	js, _ := json.Marshal(map[string]any{"type": "result", "result": plain, "session_id": "4f9c2d1e-0000", "usage": map[string]int{"input_tokens": 1200}})
	escaped := strings.Replace(string(js), "line 42", `key sk-\u0061nt-bench-0123456789`, 1)
	return map[string]string{"plain": plain, "json": string(js), "json-escaped-secret": escaped}
}

// BenchmarkMaskerString masks agent output with six known secrets (an API
// key, a store password and four config values).
func BenchmarkMaskerString(b *testing.B) {
	m := secret.New("sk-ant-bench-0123456789", "hunter2hunter2", "ghp_abcdefghijklmnop", "xoxb-1234-5678-abcdef", "AKIAABCDEFGHIJKLMNOP", "p@ss/w0rd:xyz")
	for name, text := range benchTexts() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				m.String(text)
			}
		})
	}
}
