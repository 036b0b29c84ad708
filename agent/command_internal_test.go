package agent

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestCommandCheck(t *testing.T) {
	if err := NewCommand("sh", CommandSpec{Command: "sh"}).Check(""); err != nil {
		t.Errorf("Check(sh) = %v", err)
	}
	err := NewCommand("gone", CommandSpec{Command: "no-such-agent-xyz"}).Check("")
	if !errors.Is(err, exec.ErrNotFound) || err.Error() != `agent gone: command no-such-agent-xyz: exec: "no-such-agent-xyz": executable file not found in $PATH` {
		t.Errorf("Check(no-such-agent-xyz) = %v, want one naming it and wrapping exec.ErrNotFound", err)
	}
}

// TestBuffersCutAtLines: a buffer that dropped bytes returns whole lines
// only, when it holds a line break, so no secret is kept in part.
func TestBuffersCutAtLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		max    int
		tail   string // tailBuffer's String
		head   string // limitedBuffer's String
	}{
		{"fits", []string{"ab\n", "cd\n"}, 10, "ab\ncd\n", "ab\ncd\n"},
		{"cut inside a line", []string{"secret-1\nline two\n"}, 12, "line two\n", "secret-1\n"},
		{"cut over two writes", []string{"hunter22\n", "ok\n", "tail"}, 10, "ok\ntail", "hunter22\n"},
		{"no line break: kept whole", []string{"abcdefghijkl"}, 5, "hijkl", "abcde"},
		{"only a trailing break", []string{"abcdefgh\n"}, 5, "efgh\n", "abcde"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := &tailBuffer{max: tc.max}
			lb := &limitedBuffer{max: tc.max, full: func() {}}
			for _, w := range tc.writes {
				tb.Write([]byte(w))
				lb.Write([]byte(w))
			}
			if cut := len(strings.Join(tc.writes, "")) > tc.max; tb.wasCut() != cut || lb.overflowed() != cut {
				t.Errorf("%q, max %d: tailBuffer cut %v, limitedBuffer overflowed %v; want both %v", tc.writes, tc.max, tb.wasCut(), lb.overflowed(), cut)
			}
			if got := tb.String(); got != tc.tail {
				t.Errorf("tailBuffer(%q, max %d) = %q, want %q", tc.writes, tc.max, got, tc.tail)
			}
			if got := lb.String(); got != tc.head {
				t.Errorf("limitedBuffer(%q, max %d) = %q, want %q", tc.writes, tc.max, got, tc.head)
			}
		})
	}
}
