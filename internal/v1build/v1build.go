// Package v1build builds, for tests, the uwf binary of the last release
// that knows format version 1 only (commit fe9658e), from the clone's own
// history, so tests can check what that binary does with the stores later
// builds write.
package v1build

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Commit is the version-1 release: the commit whose binary wrote the
// fixtures in cmd/uwf/testdata/format-v1.
const Commit = "fe9658e"

// Binary builds the uwf binary of [Commit] into a temporary folder and
// returns its path. Where that cannot be done without the network (no git
// or go, a clone without the commit, such as a shallow clone, or modules
// missing from the module cache) it skips the test with a message saying
// why, except under CI (CI=true), where it fails the test instead: CI must
// run it (.ci/run checks the history and fills the module cache first).
// The build runs offline (GOPROXY=off, GOFLAGS=-mod=mod) and with
// -trimpath, so the build cache serves repeated runs.
func Binary(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"git", "go", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip(t, "building the version-1 binary needs %s: %v", tool, err)
		}
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		skip(t, "not in a git clone, cannot build the version-1 binary (commit %s): %v", Commit, err)
	}
	root := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", Commit+"^{commit}").Run(); err != nil {
		skip(t, "the clone lacks commit %s (a shallow clone?): cannot build the version-1 binary; fetch the full history (git fetch --unshallow) to run this test", Commit)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", Commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var archiveErr, untarErr bytes.Buffer
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v: %s", Commit, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("extract commit %s: %v: %s", Commit, err, untarErr.String())
	}
	bin := filepath.Join(dir, "uwf-v1")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/uwf")
	build.Dir = src
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := build.CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("GOPROXY=off")) || bytes.Contains(out, []byte("module lookup disabled")) {
			skip(t, "the version-1 binary needs modules that are not in the module cache, and tests stay offline (download them with go mod download in a checkout of commit %s): %s", Commit, out)
		}
		t.Fatalf("build the version-1 binary (commit %s): %v\n%s", Commit, err, out)
	}
	return bin
}

// skip skips t with the message, or fails it under CI (CI=true), where
// the version-1 binary must be built.
func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+"\nCI=true: this test must run, not skip (see .ci/run)", args...)
	}
	t.Skipf(format, args...)
}
