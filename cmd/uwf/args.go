package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs puts a command line in the order urfave/cli v2 can parse,
// accepting it as people type it (SPEC §8): global flags anywhere, a
// command's flags before or after its arguments. urfave v2 stops parsing
// flags at the first positional argument and knows a command's flags only
// after the command's name, so
//
//	uwf cas get EYHPV6X8XHTCS --json --store /tmp/s
//
// becomes
//
//	uwf --json --store=/tmp/s cas get EYHPV6X8XHTCS
//
// Each flag is looked up in the command being parsed, then in its parents up
// to the global flags, and moved after the command that defines it; a flag
// that takes a value is joined with it ("--grace=1h"), so the value is never
// split from it or taken for an argument. "--" ends the flags; a lone "-"
// is an argument (stdin). A flag that no command on the path defines, or an
// unknown command, is a *usageError: an argument that looks like a flag is
// never silently taken as a positional. "help [topic...]" becomes
// "topic... --help", and arguments next to --help are dropped.
func reorderArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 {
		return args, nil
	}
	type level struct {
		name  string // the command's full name, for messages
		word  string // the word that selected it ("" for the root)
		flags []cli.Flag
		subs  []*cli.Command
		out   []string // its flags, reordered
	}
	path := []*level{{name: app.Name, flags: app.Flags, subs: app.Commands}}
	var pos []string
	help := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		cur := path[len(path)-1]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
			owner, f := -1, cli.Flag(nil)
			if name != "" && !strings.HasPrefix(name, "-") {
				for k := len(path) - 1; k >= 0 && owner < 0; k-- {
					if f = findFlag(path[k].flags, name); f != nil {
						owner = k
					}
				}
				if owner < 0 && slices.Contains(cli.HelpFlag.Names(), name) {
					owner = len(path) - 1 // help belongs to the command it follows
				}
				if owner < 0 && app.Version != "" && slices.Contains(cli.VersionFlag.Names(), name) {
					owner = 0
				}
			}
			if owner < 0 {
				if !strings.HasPrefix(a, "--") {
					return nil, usageErrorf(cur.name, "unknown flag %s (put -- before an argument that starts with -)", a)
				}
				return nil, usageErrorf(cur.name, "unknown flag %s", a)
			}
			tok := a
			if f != nil && takesValue(f) && !hasValue {
				if i+1 >= len(args) {
					return nil, usageErrorf(cur.name, "flag %s needs a value", a)
				}
				i++
				tok = a + "=" + args[i]
			}
			path[owner].out = append(path[owner].out, tok)
			continue
		}
		if help || len(cur.subs) == 0 || len(pos) > 0 {
			if help && len(cur.subs) > 0 {
				if sub := findCommand(cur.subs, a); sub != nil {
					path = append(path, &level{name: cur.name + " " + sub.Name, word: a, flags: sub.Flags, subs: sub.Subcommands})
					continue
				}
				return nil, usageErrorf(cur.name, "no help topic %q", a)
			}
			if help {
				return nil, usageErrorf(cur.name, "no help topic %q: %s has no subcommands", a, cur.name)
			}
			pos = append(pos, a)
			continue
		}
		if a == "help" || a == "h" {
			help = true
			continue
		}
		sub := findCommand(cur.subs, a)
		if sub == nil {
			if len(path) == 1 {
				return nil, usageErrorf(cur.name, "unknown command %q", a)
			}
			return nil, usageErrorf(cur.name, "unknown subcommand %q", a)
		}
		path = append(path, &level{name: cur.name + " " + sub.Name, word: a, flags: sub.Flags, subs: sub.Subcommands})
	}
	out := make([]string, 0, len(args)+2)
	out = append(out, args[0])
	for _, l := range path {
		if l.word != "" {
			out = append(out, l.word)
		}
		out = append(out, l.out...)
	}
	if help {
		out = append(out, "--help")
	}
	if help || slices.ContainsFunc(path[len(path)-1].out, isHelpFlag) {
		return out, nil // help wins: urfave would read an argument as a help topic
	}
	if slices.ContainsFunc(pos, func(s string) bool { return len(s) > 1 && s[0] == '-' }) {
		out = append(out, "--")
	}
	return append(out, pos...), nil
}

func isHelpFlag(tok string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(tok, "-"), "=")
	return slices.Contains(cli.HelpFlag.Names(), name)
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether f needs a value (every flag but a bool one).
func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return true // every urfave flag type says; a new one most likely takes a value
}
