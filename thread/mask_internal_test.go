package thread

import (
	"strings"
	"testing"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/internal/secret"
)

// TestMaskResultAtCuts: a secret straddling the cut of a command's output
// or stderr leaves no part of it in the recorded text, and the text says
// what was cut.
func TestMaskResultAtCuts(t *testing.T) {
	const sec = "QZJWVK-secret-XPLM"
	m := secret.New(sec)
	for _, tc := range []struct {
		name        string
		in          agent.Result
		raw, stderr string
	}{
		{"not cut", agent.Result{Raw: "a " + sec + " b", Stderr: "e " + sec},
			"a ******** b", "e ********"},
		{"output cut inside the secret", agent.Result{Raw: "out: " + sec[:9], RawCut: true},
			"out: \n[... output cut here: the rest was dropped, and the 9 bytes before the cut, which could hold part of a secret]\n", ""},
		{"output cut at a line break", agent.Result{Raw: "one " + sec + "\ntwo\n", RawCut: true},
			"one ********\ntwo\n[... output cut here: the rest was dropped]\n", ""},
		{"output cut, nothing kept", agent.Result{Raw: sec[:4], RawCut: true},
			"[... output cut here: the rest was dropped, and the 4 bytes before the cut, which could hold part of a secret]\n", ""},
		{"stderr cut inside the secret", agent.Result{Stderr: sec[11:] + " and " + sec + " end", StderrCut: true},
			"", "[... stderr cut here: what came before was dropped, and the 7 bytes after the cut, which could hold part of a secret]\n and ******** end"},
		{"stderr cut, no secret there", agent.Result{Stderr: "tail of a log\n", StderrCut: true},
			"", "[... stderr cut here: what came before was dropped]\ntail of a log\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := maskResult(m, &tc.in)
			if got.Raw != tc.raw || got.Stderr != tc.stderr {
				t.Errorf("maskResult(%+v):\nraw    %q\nstderr %q\nwant\nraw    %q\nstderr %q", tc.in, got.Raw, got.Stderr, tc.raw, tc.stderr)
			}
			for _, part := range []string{sec[:3], sec[len(sec)-3:]} {
				if strings.Contains(got.Raw+got.Stderr, part) {
					t.Errorf("maskResult(%+v) keeps %q of the secret: %q %q", tc.in, part, got.Raw, got.Stderr)
				}
			}
		})
	}
	if maskResult(m, nil) != nil {
		t.Error("maskResult(nil) is not nil")
	}
}
