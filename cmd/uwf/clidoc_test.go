package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// A cliDocSection is a command's section of docs/CLI.md: a heading naming
// one or more forms of the command (### `uwf thread fork <hash>` /
// `uwf thread fork <thread> --at <depth>`), and the text up to the next
// heading of its level or above (#### subsections belong to it).
type cliDocSection struct {
	line     int
	commands []string   // "thread fork": the command path of each form
	flags    [][]string // the flags each form names: "--at", "-n"
	text     string     // the heading and the section's text
}

var (
	cliDocHeading = regexp.MustCompile("^(#{2,3}) (.*)$")
	cliDocForm    = regexp.MustCompile("`uwf ([^`]*)`")
	cliDocFlag    = regexp.MustCompile(`(?:^|[\s\[(|])(--?[a-z][a-z0-9-]*)`)
)

// cliDocSections reads the command sections of docs/CLI.md (headings
// outside code blocks whose text is a `uwf ...` form) and the text of its
// "Global options" section.
func cliDocSections(doc string) (sections []cliDocSection, global string) {
	var cur *cliDocSection
	inGlobal := false
	fence := ""
	for i, line := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(line); fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			fence = t[:3]
		} else if fence != "" && strings.HasPrefix(t, fence) {
			fence = ""
		} else if m := cliDocHeading.FindStringSubmatch(line); fence == "" && m != nil {
			inGlobal = m[2] == "Global options"
			cur = nil
			forms := cliDocForm.FindAllStringSubmatch(m[2], -1)
			if len(forms) == 0 {
				continue
			}
			sections = append(sections, cliDocSection{line: i + 1})
			cur = &sections[len(sections)-1]
			for _, f := range forms {
				var path []string
				for _, w := range strings.Fields(f[1]) {
					if !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(w) {
						break
					}
					path = append(path, w)
				}
				cur.commands = append(cur.commands, strings.Join(path, " "))
				var flags []string
				for _, fm := range cliDocFlag.FindAllStringSubmatch(f[1], -1) {
					flags = append(flags, fm[1])
				}
				cur.flags = append(cur.flags, flags)
			}
		}
		if cur != nil {
			cur.text += line + "\n"
		}
		if inGlobal {
			global += line + "\n"
		}
	}
	return sections, global
}

// flagNames returns every name of the flags, dashed: "--prompt", "-p".
func flagNames(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) == 1 {
				out = append(out, "-"+n)
			} else {
				out = append(out, "--"+n)
			}
		}
	}
	return out
}

// mentions reports whether text names the flag (as `--name`, `--name=`,
// `--name V`, `-n`), not as part of a longer flag.
func mentions(text string, names []string) bool {
	for _, n := range names {
		for i := strings.Index(text, n); i >= 0; {
			end := i + len(n)
			before := i == 0 || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-", rune(text[i-1]))
			after := end == len(text) || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-", rune(text[end]))
			if before && after {
				return true
			}
			j := strings.Index(text[end:], n)
			if j < 0 {
				break
			}
			i = end + j
		}
	}
	return false
}

// TestCLIDoc checks docs/CLI.md against the command definitions, so that
// neither drifts: every command has a section (### `uwf <command> ...`),
// every flag is named in its command's sections (the global ones under
// "Global options"), every section names a command that exists, and every
// flag a section's heading names is one of that command's flags or a
// global one.
func TestCLIDoc(t *testing.T) {
	root, _ := docFiles(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections, global := cliDocSections(string(b))
	if len(sections) < 20 || global == "" {
		t.Fatalf("docs/CLI.md: %d command sections, global options %q: the reader is broken", len(sections), global)
	}
	app := commandTree(newApp(io.Discard, io.Discard))
	globals := flagNames(app.Flags)
	for _, g := range globals {
		if !mentions(global, []string{g}) {
			t.Errorf("docs/CLI.md: the global option %s is not in the \"Global options\" section", g)
		}
	}
	commands := map[string]*cli.Command{}
	aliases := map[string]*cli.Command{}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			path := strings.TrimSpace(prefix + " " + c.Name)
			commands[path] = c
			walk(path, c.Subcommands)
			for _, a := range c.Aliases { // documented beside the name: "uwf init (alias uwf setup)"
				aliases[strings.TrimSpace(prefix+" "+a)] = c
			}
		}
	}
	walk("", app.Commands)

	documented := map[string]string{} // command -> the text of its sections
	for _, s := range sections {
		for i, path := range s.commands {
			c, ok := commands[path]
			if a, isAlias := aliases[path]; !ok && isAlias {
				c, ok = a, true
			}
			if !ok {
				t.Errorf("docs/CLI.md:%d: the section documents `uwf %s`, which is no command", s.line, path)
				continue
			}
			documented[path] += s.text
			own := flagNames(c.Flags)
			for _, f := range s.flags[i] {
				if !slices.Contains(own, f) && !slices.Contains(globals, f) {
					t.Errorf("docs/CLI.md:%d: the heading names %s, which `uwf %s` does not have (its flags: %s)", s.line, f, path, strings.Join(own, " "))
				}
			}
		}
	}
	for path, c := range commands {
		if len(c.Subcommands) > 0 {
			continue // documented by its subcommands' sections
		}
		text, ok := documented[path]
		if !ok {
			t.Errorf("docs/CLI.md: `uwf %s` has no section: add a heading ### `uwf %s ...` saying what it does, its flags and its output", path, path)
			continue
		}
		for _, f := range c.Flags {
			if names := flagNames([]cli.Flag{f}); !mentions(text, names) {
				t.Errorf("docs/CLI.md: `uwf %s`'s flag %s is not in its section", path, strings.Join(names, "/"))
			}
		}
	}
}

// TestCLIDocReader checks the section reader on a small page.
func TestCLIDocReader(t *testing.T) {
	doc := "# T\n\n## Global options\n\n| `--home DIR` |\n\n## `uwf cas`\n\ntext\n\n### `uwf cas get <hash>`\n\n" +
		"uses --batch here\n\n```\n## not a heading\n$ uwf cas get H\n```\n\n#### More\n\nmore --x\n\n" +
		"### `uwf thread fork <hash>` / `uwf thread fork <thread> --at <depth> [-n N]`\n\nx\n"
	sections, global := cliDocSections(doc)
	if !strings.Contains(global, "--home DIR") || strings.Contains(global, "uwf cas") {
		t.Errorf("global = %q", global)
	}
	if len(sections) != 3 {
		t.Fatalf("sections = %+v", sections)
	}
	if sections[0].commands[0] != "cas" || sections[1].commands[0] != "cas get" || !strings.Contains(sections[1].text, "more --x") || strings.Contains(sections[1].text, "thread fork") {
		t.Errorf("sections[0:2] = %+v", sections[:2])
	}
	if f := sections[2]; !slices.Equal(f.commands, []string{"thread fork", "thread fork"}) || len(f.flags[0]) != 0 || !slices.Equal(f.flags[1], []string{"--at", "-n"}) {
		t.Errorf("sections[2] = %+v", f)
	}
	if !mentions("a --key K b", []string{"--key"}) || mentions("a --keys b", []string{"--key"}) || mentions("x--key", []string{"--key"}) || !mentions("(`-p`)", []string{"-p"}) {
		t.Error("mentions")
	}
}
