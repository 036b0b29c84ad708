package pgtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/pgtest"
)

// TestURL runs itself in a child process with each environment and checks
// the outcome: the URL, a skip, or a failure under CI.
func TestURL(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		t.Log("url=" + pgtest.URL(t))
		return
	}
	for _, c := range []struct {
		name string
		env  []string
		fail bool
		want string
	}{
		{"set", []string{pgtest.EnvVar + "=postgres://x@127.0.0.1:1/db", "CI="}, false, "url=postgres://x@127.0.0.1:1/db"},
		{"unset", []string{pgtest.EnvVar + "=", "CI="}, false, "SKIP"},
		{"unset under CI", []string{pgtest.EnvVar + "=", "CI=true"}, true, "the PostgreSQL tests must run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestURL$", "-test.v")
			cmd.Env = append(os.Environ(), append(c.env, "PGTEST_CHILD=1")...)
			out, err := cmd.CombinedOutput()
			if (err != nil) != c.fail || !strings.Contains(string(out), c.want) {
				t.Errorf("err = %v, output:\n%s\nwant failure %v and %q", err, out, c.fail, c.want)
			}
		})
	}
}
