package agent

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadOutput feeds arbitrary stdout and stderr to every structured
// output reader: none panics, and what one reports has no negative count
// or cost (they are stored in a detail-run node, whose schema forbids
// them).
func FuzzReadOutput(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "output", "*.std*"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data), "")
		f.Add("", string(data))
	}
	f.Add(`{"type":"result","usage":{"input_tokens":-5},"total_cost_usd":-1,"result":"x"}`, "")
	f.Add(`{"type":"step_finish","part":{"tokens":{"input":1e300},"cost":"NaN"}}`, "")
	f.Add("Tokens: 99999999999999999999k sent, -1 received. Cost: $1e309 message", "")
	f.Add(strings.Repeat(`{"type":"step_finish","part":{"tokens":{"input":9007199254740992},"cost":1e308}}`+"\n", 3), "")
	f.Fuzz(func(t *testing.T, stdout, stderr string) {
		for format, read := range outputReaders {
			rep, err := read(stdout, stderr)
			if err != nil {
				continue
			}
			s := rep.session.orNil()
			if s == nil {
				continue
			}
			big := int64(1 << 53)
			if s.InputTokens < 0 || s.OutputTokens < 0 || s.CacheReadTokens < 0 || s.CacheWriteTokens < 0 ||
				s.ReasoningTokens < 0 || s.Turns < 0 || s.InputTokens > big || s.OutputTokens > big || s.CacheReadTokens > big ||
				s.CacheWriteTokens > big || s.ReasoningTokens > big || s.Turns > big || !(s.CostUSD >= 0) || s.CostUSD > math.MaxFloat64 {
				t.Errorf("%s: session %+v has a negative or unbounded field", format, s)
			}
		}
	})
}

// BenchmarkReadOutput measures reading each tool's recorded output: the
// cost a structured output adds to a run (a process start is ~1 ms).
func BenchmarkReadOutput(b *testing.B) {
	for _, tc := range []struct{ format, file string }{
		{"claude-code", "claude-code-ok.stdout"}, {"codex", "codex-ok.stdout"}, {"gemini", "gemini-ok.stdout"},
		{"opencode", "opencode-ok.stdout"}, {"aider", "aider-ok.stdout"},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "output", tc.file))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.format, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			read := outputReaders[tc.format]
			for b.Loop() {
				if _, err := read(string(data), ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
