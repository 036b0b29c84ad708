package v1build_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/v1build"
)

// TestBinaryCannotBuild runs itself in a child process where the
// version-1 binary cannot be built (no tools on PATH, not in a git clone,
// a clone without the commit) and checks the outcome: a skip saying why,
// or under CI (CI=true) a failure.
func TestBinaryCannotBuild(t *testing.T) {
	if os.Getenv("V1BUILD_CHILD") == "1" {
		t.Log("built " + v1build.Binary(t))
		return
	}
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	notGit := t.TempDir()
	noCommit := t.TempDir()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs git to make a clone without the commit: %v", err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = noCommit
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args, err, out)
		}
	}
	for _, c := range []struct {
		name string
		dir  string
		env  []string
		want string
	}{
		{"no tools", notGit, []string{"PATH="}, "building the version-1 binary needs git"},
		{"not a git clone", notGit, nil, "not in a git clone"},
		{"a clone without the commit", noCommit, nil, "the clone lacks commit " + v1build.Commit},
	} {
		for _, ci := range []bool{false, true} {
			name := c.name
			if ci {
				name += " under CI"
			}
			t.Run(name, func(t *testing.T) {
				cmd := exec.Command(exe, "-test.run=^TestBinaryCannotBuild$", "-test.v")
				cmd.Dir = c.dir
				var env []string
				for _, kv := range os.Environ() {
					if !strings.HasPrefix(kv, "GIT_") {
						env = append(env, kv)
					}
				}
				env = append(env, "V1BUILD_CHILD=1", "CI=", "GIT_CEILING_DIRECTORIES="+filepath.Dir(c.dir))
				if ci {
					env = append(env, "CI=true")
				}
				cmd.Env = append(env, c.env...)
				out, err := cmd.CombinedOutput()
				skipped := strings.Contains(string(out), "--- SKIP")
				if (err != nil) != ci || skipped == ci || !strings.Contains(string(out), c.want) {
					t.Errorf("err = %v, output:\n%s\nwant %s and %q", err, out, map[bool]string{true: "a failure", false: "a skip"}[ci], c.want)
				}
				if ci && !strings.Contains(string(out), "CI=true: this test must run") {
					t.Errorf("the failure under CI does not say why:\n%s", out)
				}
			})
		}
	}
}
