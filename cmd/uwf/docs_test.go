package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsExamples keeps the examples of docs/CLI.md true: in every code
// block that starts with "$ uwf", each command must be one of the golden
// transcripts' commands, and each other line (but "...") a line they
// printed.
func TestDocsExamples(t *testing.T) {
	root := filepath.Dir(filepath.Dir(filepath.Dir(goldenDir))) // cmd/uwf/testdata/golden -> cmd
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(root), "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	commands, printed := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			line = strings.TrimSuffix(line, "\n")
			if cmd, ok := strings.CutPrefix(line, "$ "); ok {
				commands[cmd] = true
			} else if out, ok := strings.CutPrefix(line, "  | "); ok {
				printed[out] = true
			}
		}
	}
	blocks := strings.Split(string(doc), "```")
	checked := 0
	for i := 1; i < len(blocks); i += 2 {
		block := strings.TrimPrefix(blocks[i], "\n")
		if !strings.HasPrefix(block, "$ uwf ") {
			continue
		}
		checked++
		for line := range strings.Lines(block) {
			line = strings.TrimSuffix(line, "\n")
			switch cmd, isCmd := strings.CutPrefix(line, "$ "); {
			case line == "..." || line == "":
			case isCmd && !commands[cmd]:
				t.Errorf("docs/CLI.md: the command %q is in no golden transcript", line)
			case !isCmd && !printed[line]:
				t.Errorf("docs/CLI.md: the line %q (after a $ uwf command) was never printed in a golden transcript", line)
			}
		}
	}
	if checked < 20 {
		t.Errorf("docs/CLI.md: only %d examples checked", checked)
	}
}
