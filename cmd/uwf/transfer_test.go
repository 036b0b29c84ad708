package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestTransferGolden records export and import between two disk stores:
// the tar itself is binary, so the transcript shows what the commands
// print.
func TestTransferGolden(t *testing.T) {
	e := newEnv(t)
	tr := &transcript{e: e}
	setupNotes(e)
	note := strings.TrimSpace(e.ok("", "cas", "ref", "list", "schemas/note"))
	noteHash, _, _ := strings.Cut(note, " ")

	r := e.run("", "cas", "export")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "objects/") {
		t.Fatalf("export: exit %d, stderr %q", r.code, r.stderr)
	}
	tar := r.stdout
	fmt.Fprintf(&tr.b, "$ uwf cas export > store.tar\nstderr:\n%sexit 0\n\n", indentBlock(r.stderr))
	if again := e.run("", "cas", "export"); again.stdout != tar {
		t.Error("two exports of one store differ")
	}
	importCmd := func(args ...string) result {
		r := e.run(tar, append([]string{"--store", "other"}, args...)...)
		fmt.Fprintf(&tr.b, "$ uwf --store other %s < store.tar\n", shellQuote(args))
		if r.stdout != "" {
			fmt.Fprintf(&tr.b, "stdout:\n%s", indentBlock(r.stdout))
		}
		if r.stderr != "" {
			fmt.Fprintf(&tr.b, "stderr:\n%s", indentBlock(r.stderr))
		}
		fmt.Fprintf(&tr.b, "exit %d\n\n", r.code)
		return r
	}
	if r := importCmd("cas", "import"); r.code != 0 {
		t.Errorf("import: %v", r)
	}
	if r := importCmd("cas", "import", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"created":[]`) {
		t.Errorf("second import: %v", r)
	}
	tr.run("", "--store", "other", "cas", "fsck")
	if other := e.run("", "--store", "other", "cas", "export"); other.stdout != tar {
		// The built-in schema refs' logs were written by each store
		// when it was made: only they may differ, and not here, since
		// the test clock is the same for both.
		t.Error("the imported store exports a different tar")
	}
	// A ref that differs: reported (exit 4), then forced.
	tr.run("", "--store", "other", "cas", "put-text", "elsewhere")
	e.write("note2.yaml", noteSchema+"minProperties: 2\n")
	e.ok("", "--store", "other", "cas", "schema", "put", "note2.yaml", "--name", "note")
	if r := importCmd("cas", "import"); r.code != 4 || !strings.Contains(r.stdout, "schemas/note") {
		t.Errorf("import over a differing ref: %v", r)
	}
	if r := importCmd("cas", "import", "--force"); r.code != 0 {
		t.Errorf("import --force: %v", r)
	}
	tr.run("", "--store", "other", "cas", "ref", "log", "schemas/note")
	if got := strings.TrimSpace(e.ok("", "--store", "other", "cas", "ref", "list", "schemas/note")); !strings.HasPrefix(got, noteHash) {
		t.Errorf("after --force, schemas/note = %q, want %s", got, noteHash)
	}
	// A bad tar.
	tr.run("not a tar", "--store", "other", "cas", "import")
	golden(t, "transfer.txt", tr.b.String())
}
