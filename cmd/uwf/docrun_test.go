package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A doc block is a fenced code block of README.md or docs/*.md. The blocks
// whose info string is a shell (sh, bash, shell, console) are commands:
// TestDocCommands runs them as written, unless the line before the fence
// (blank lines aside) is a mark
//
//	<!-- not run: why -->
//
// (servers, workers, PostgreSQL, real LLMs, the human agent, the network),
// which the test lists instead. Blocks starting with "$ uwf" are
// transcripts, which TestDocsExamples checks against the golden files.
// Other blocks (YAML, Go, output, file contents) are not commands.
type docBlock struct {
	file   string // relative to the module root: README.md, docs/CLI.md
	line   int    // of the opening fence, 1-based
	info   string // the fence's info string: "sh", "yaml", ""
	body   string
	notRun string // the why of a <!-- not run: why --> mark; "" if none
	marked bool   // a mark was there (even with an empty why)
}

var (
	docFence   = regexp.MustCompile("^( *)(```+|~~~+)\\s*([^`\\s]*)")
	docNotRun  = regexp.MustCompile(`^\s*<!--\s*not run:(.*?)-->\s*$`)
	shellInfos = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
)

// docBlocks returns the fenced code blocks of the markdown text, in order.
func docBlocks(file, text string) ([]docBlock, error) {
	lines := strings.Split(text, "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := docFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence := len(m[1]), m[2]
		b := docBlock{file: file, line: i + 1, info: strings.ToLower(m[3])}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if nm := docNotRun.FindStringSubmatch(lines[j]); nm != nil {
				b.marked, b.notRun = true, strings.TrimSpace(nm[1])
			}
			break
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimSpace(l); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				closed = true
				break
			}
			// Drop the fence's indentation (a block inside a list item).
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			body = append(body, l)
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: a code block that is never closed", file, b.line)
		}
		b.body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out, nil
}

// isTranscript reports whether b is a transcript: its first line "$ uwf ...".
func (b docBlock) isTranscript() bool {
	return b.info == "" && strings.HasPrefix(strings.TrimLeft(b.body, "\n"), "$ uwf ")
}

// docFiles returns the module root and the markdown files whose commands
// must run: README.md and docs/*.md.
func docFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err = filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return root, append([]string{filepath.Join(root, "README.md")}, files...)
}

// TestDocBlocks checks the block reader: fences with and without info,
// indented fences, marks (only right above the fence), transcripts.
func TestDocBlocks(t *testing.T) {
	text := "intro\n\n<!-- not run: a server -->\n\n```sh\nuwf serve\n```\n\n" +
		"<!-- not run: old -->\ntext between\n```bash\nuwf cas fsck\n```\n" +
		"- item\n\n  ```sh\n  echo indented\n  ```\n" +
		"```\n$ uwf cas put-text hello\nAGQZR3QB24MV2\n```\n" +
		"~~~yaml\nkey: ```not a fence```\n~~~\n" +
		"<!--not run:-->\n```console\nuwf x\n```\n"
	bs, err := docBlocks("T.md", text)
	if err != nil {
		t.Fatal(err)
	}
	want := []docBlock{
		{file: "T.md", line: 5, info: "sh", body: "uwf serve\n", notRun: "a server", marked: true},
		{file: "T.md", line: 11, info: "bash", body: "uwf cas fsck\n"},
		{file: "T.md", line: 16, info: "sh", body: "echo indented\n"},
		{file: "T.md", line: 19, info: "", body: "$ uwf cas put-text hello\nAGQZR3QB24MV2\n"},
		{file: "T.md", line: 23, info: "yaml", body: "key: ```not a fence```\n"},
		{file: "T.md", line: 27, info: "console", body: "uwf x\n", marked: true},
	}
	if len(bs) != len(want) {
		t.Fatalf("docBlocks = %d blocks %+v, want %d", len(bs), bs, len(want))
	}
	for i := range want {
		if bs[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, bs[i], want[i])
		}
	}
	if !bs[3].isTranscript() || bs[0].isTranscript() {
		t.Errorf("isTranscript: %v %v", bs[3].isTranscript(), bs[0].isTranscript())
	}
	if _, err := docBlocks("U.md", "```sh\nuwf x\n"); err == nil || !strings.Contains(err.Error(), "U.md:1: ") {
		t.Errorf("an unclosed block: %v", err)
	}
}

// TestDocCommands runs every shell block of README.md and docs/*.md as
// written, file by file in order (a file's blocks share one working
// folder and one fresh home, as a reader following the page does), with
// this test binary as uwf on the PATH and HOME a temporary folder (so
// ~/.uncaged/workflow is a fresh home). The working folder holds a link to
// examples/. Blocks marked <!-- not run: why --> are listed (go test -v),
// not run; a mark without a why, a failing block, and a transcript outside
// docs/CLI.md (which no golden file checks) fail the test, naming the file
// and line.
func TestDocCommands(t *testing.T) {
	root, files := docFiles(t)
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nUWF_TEST_MAIN=1 exec '" + strings.ReplaceAll(self, "'", `'\''`) + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "uwf"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	ran, skipped := 0, 0
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := docBlocks(rel, string(text))
		if err != nil {
			t.Error(err)
			continue
		}
		work, home := t.TempDir(), t.TempDir()
		if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(work, "examples")); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			where := fmt.Sprintf("%s:%d", b.file, b.line)
			switch {
			case b.marked && b.notRun == "":
				t.Errorf("%s: <!-- not run: --> without a why: say why the block cannot run", where)
			case b.marked:
				skipped++
				t.Logf("not run: %s: %s", where, b.notRun)
			case b.isTranscript() && rel != filepath.Join("docs", "CLI.md"):
				t.Errorf("%s: a $ uwf transcript outside docs/CLI.md is checked by no golden file: make it a ```sh block that runs, or mark it <!-- not run: why -->", where)
			case shellInfos[b.info]:
				ran++
				if out, err := runDocBlock(t.Context(), b.body, work, home, bin); err != nil {
					t.Errorf("%s: the block does not run as written: %v\n%s\n(fix the block, or mark it <!-- not run: why --> on the line above its fence)", where, err, tail(out, 40))
				}
			}
		}
	}
	t.Logf("%d blocks run, %d not run", ran, skipped)
	if ran < 2 {
		t.Errorf("only %d doc blocks ran", ran)
	}
}

// runDocBlock runs body with sh -e in work, HOME home and bin first on
// the PATH, for at most a minute; it returns what it printed (with the
// commands traced, sh -x).
func runDocBlock(ctx context.Context, body, work, home, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-ex", "-c", body)
	cmd.Dir = work
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "UWF_") || k == "HOME" || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "UWF_DURABILITY=none")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after a minute (a server? mark it <!-- not run: why -->): %w", err)
	}
	return out.String(), err
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
