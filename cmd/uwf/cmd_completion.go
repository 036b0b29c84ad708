package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/store"
	"github.com/uncaged/uwf/thread"
)

// completeCommandName is the hidden command the completion scripts call:
// "uwf __complete -- <words after uwf, the last being completed>".
const completeCommandName = "__complete"

// completionCommand is "uwf completion bash|zsh|fish".
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "<shell>",
		Description: `Prints a script that completes uwf's commands, subcommands and flags, and
workflow names, thread ids, refs, agents and settings from the store and
config.yaml. Load it in the shell's start-up file:

   bash:  eval "$(uwf completion bash)"            (~/.bashrc)
   zsh:   eval "$(uwf completion zsh)"             (~/.zshrc, after compinit)
   fish:  uwf completion fish | source             (~/.config/fish/config.fish)

The script calls "uwf __complete", which reads refs only (no schema is
compiled) and prints nothing when there is no store yet.`,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1, 1, "<shell>"); err != nil {
				return err
			}
			script, ok := completionScripts[c.Args().First()]
			if !ok {
				return usageErrorf(c.Command.HelpName, "unknown shell %q: want bash, zsh or fish", c.Args().First())
			}
			_, err := io.WriteString(c.App.Writer, script)
			return err
		},
	}
}

// completeCommand is the hidden "uwf __complete": the candidates for the
// last of its arguments, one per line as "<candidate>\t<description>".
// It never fails: what it cannot read, it leaves out.
func completeCommand() *cli.Command {
	return &cli.Command{
		Name:            completeCommandName,
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			words := c.Args().Slice()
			if len(words) > 0 && words[0] == "--" {
				words = words[1:]
			}
			if len(words) == 0 {
				words = []string{""}
			}
			cp := &completer{app: c.App, home: c.String("home"), store: c.String("store")}
			var b strings.Builder
			for _, cand := range cp.complete(c.Context, words) {
				fmt.Fprintf(&b, "%s\t%s\n", cand.word, cand.desc)
			}
			io.WriteString(c.App.Writer, b.String())
			return nil
		},
	}
}

type candidate struct{ word, desc string }

// completer completes a command line of uwf.
type completer struct {
	app         *cli.App
	home, store string // --home and --store: the command line's, else the environment's
}

// complete returns the candidates for the last word, those that start
// with it.
func (cp *completer) complete(ctx context.Context, words []string) []candidate {
	cur, prev := words[len(words)-1], words[:len(words)-1]
	flags := slices.Clone(cp.app.Flags)
	subs := cp.app.Commands
	var path []*cli.Command
	var pending cli.Flag // a flag whose value is the current word
	npos, dashdash := 0, false
	for i := 0; i < len(prev); i++ {
		w := prev[i]
		switch {
		case w == "--" && !dashdash:
			dashdash = true
			continue
		case len(w) > 1 && w[0] == '-' && !dashdash:
			name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := findFlag(flags, name)
			if f == nil || !takesValue(f) {
				continue
			}
			if !hasValue {
				if i+1 < len(prev) && prev[i+1] == "=" { // bash splits --home=x at '='
					i++
				}
				if i+1 >= len(prev) {
					pending = f
					continue
				}
				i++
				value = prev[i]
			}
			cp.setGlobal(name, value)
			continue
		}
		if npos == 0 && len(subs) > 0 {
			if sub := findCommand(subs, w); sub != nil {
				path = append(path, sub)
				flags = append(flags, sub.Flags...)
				subs = sub.Subcommands
				continue
			}
		}
		npos++
	}
	if cur == "=" && pending != nil {
		cur = ""
	}
	var out []candidate
	if name, value, ok := strings.Cut(strings.TrimLeft(cur, "-"), "="); ok && strings.HasPrefix(cur, "-") && !dashdash && pending == nil {
		// --workflow=rev: the flag's values, written after it
		if f := findFlag(flags, name); f != nil && takesValue(f) {
			head := cur[:len(cur)-len(value)]
			for _, c := range cp.flagValues(ctx, f.Names()[0], path) {
				if strings.HasPrefix(c.word, value) {
					out = append(out, candidate{head + c.word, c.desc})
				}
			}
		}
		return out
	}
	switch {
	case pending != nil:
		out = cp.flagValues(ctx, pending.Names()[0], path)
	case strings.HasPrefix(cur, "-") && !dashdash:
		// The command's own flags first, then its parents', the global
		// ones last.
		var listed []cli.Flag
		for i := len(path) - 1; i >= 0; i-- {
			listed = append(listed, path[i].Flags...)
		}
		listed = append(listed, cp.app.Flags...)
		seen := map[string]bool{}
		for _, f := range append(listed, cli.HelpFlag) {
			for _, n := range f.Names() {
				if len(n) > 1 && !seen[n] {
					seen[n] = true
					out = append(out, candidate{"--" + n, flagUsage(f)})
				}
			}
		}
	case len(subs) > 0 && npos == 0:
		for _, sub := range subs {
			if !sub.Hidden {
				out = append(out, candidate{sub.Name, sub.Usage})
			}
		}
	case len(path) > 0:
		out = cp.argValues(ctx, path, npos)
	}
	var keep []candidate
	for _, c := range out {
		if strings.HasPrefix(c.word, cur) {
			keep = append(keep, c)
		}
	}
	return keep
}

// setGlobal records a global flag read from the command line being
// completed.
func (cp *completer) setGlobal(name, value string) {
	switch name {
	case "home":
		cp.home = value
	case "store":
		cp.store = value
	}
}

func flagUsage(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		u, _, _ := strings.Cut(d.GetUsage(), "\n")
		return strings.ReplaceAll(u, "`", "")
	}
	return ""
}

// flagValues completes the value of the flag name.
func (cp *completer) flagValues(ctx context.Context, name string, path []*cli.Command) []candidate {
	switch name {
	case "workflow":
		return cp.refNames(ctx, registry.RefPrefix, false)
	case "agent":
		if len(path) > 0 && path[len(path)-1].Name == "init" {
			return cp.initAgents()
		}
		return cp.agents()
	case "parent": // thread list --parent: a thread id
		return cp.refNames(ctx, thread.ThreadPrefix, true)
	case "status":
		return words(thread.StatusActive, thread.StatusDone, thread.StatusKilled, thread.StatusSuspended)
	case "durability":
		return words("strict", "none")
	case "log-level":
		return words("debug", "info", "warn", "error")
	case "provider":
		return words(append(providerNames(), "none")...)
	}
	return nil // a file, a number, free text: the shell offers files
}

// argValues completes the positional argument number n of the command
// path, from what its ArgsUsage names there.
func (cp *completer) argValues(ctx context.Context, path []*cli.Command, n int) []candidate {
	cmd := path[len(path)-1]
	full := ""
	for _, c := range path {
		full += c.Name + " "
	}
	var out []candidate
	seen := map[string]bool{}
	for _, alt := range strings.Split(cmd.ArgsUsage, " | ") {
		// "<workflow> -p <prompt>": the arguments end at the first flag.
		var args []string
		for _, tok := range strings.Fields(alt) {
			if strings.HasPrefix(tok, "-") || strings.HasPrefix(tok, "[-") || tok == "<" || tok == ">" {
				break
			}
			args = append(args, strings.Trim(tok, "<>[]."))
		}
		if n >= len(args) {
			continue
		}
		var kind string
		switch arg := args[n]; {
		case arg == "thread":
			kind = "thread"
		case arg == "ref|hash" && strings.HasPrefix(full, "cas export "):
			kind = "ref"
		case arg == "workflow", (arg == "name" || arg == "name|hash") && strings.HasPrefix(full, "workflow "):
			kind = "workflow"
		case arg == "name" && strings.HasPrefix(full, "cas ref "):
			kind = "ref"
		case arg == "name|hash" && strings.HasPrefix(full, "cas schema "):
			kind = "schema"
		case arg == "path" && strings.HasPrefix(full, "config "):
			kind = "setting"
		case arg == "shell":
			kind = "shell"
		}
		if kind == "" || seen[kind] {
			continue
		}
		seen[kind] = true
		switch kind {
		case "thread":
			out = append(out, cp.refNames(ctx, thread.ThreadPrefix, true)...)
		case "workflow":
			out = append(out, cp.refNames(ctx, registry.RefPrefix, false)...)
		case "ref":
			out = append(out, cp.refNames(ctx, "", false)...)
		case "schema":
			out = append(out, cp.refNames(ctx, "schemas/", false)...)
		case "setting":
			out = append(out, cp.settings()...)
		case "shell":
			out = append(out, words("bash", "zsh", "fish")...)
		}
	}
	return out
}

func words(ws ...string) []candidate {
	out := make([]candidate, len(ws))
	for i, w := range ws {
		out[i] = candidate{word: w}
	}
	return out
}

// refNames lists the refs under prefix, named without it; newest first
// lists them in reverse order (thread IDs are ULIDs, ordered by time).
// No store, or one that cannot be read in time, gives none; a missing
// store is not created (on disk or in PostgreSQL), nor a new one
// initialised.
func (cp *completer) refNames(ctx context.Context, prefix string, newestFirst bool) []candidate {
	s := &session{home: cp.home, store: cp.store}
	raw, err := s.storeRaw()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	// NoCreate: completion never writes. Where there is no store (no
	// folder, no PostgreSQL schema) it lists nothing and creates nothing.
	repo, release, err := store.Open(ctx, raw, &store.Options{Durability: "none", NoCreate: true})
	if err != nil {
		return nil
	}
	defer release()
	var out []candidate
	for ref, err := range repo.Refs().List(ctx, prefix) {
		if err != nil {
			if bad := new(*cas.BadRefError); errors.As(err, bad) {
				continue
			}
			break
		}
		if name, ok := strings.CutPrefix(ref.Name, prefix); ok && name != "" {
			out = append(out, candidate{word: name})
		}
	}
	if newestFirst {
		slices.Reverse(out)
	}
	return out
}

// agents lists the configured agents and the built-in ones.
func (cp *completer) agents() []candidate {
	var out []candidate
	if cfg := cp.config(); cfg != nil {
		for _, name := range cfg.AgentNames() {
			a, _ := cfg.Agent(name)
			out = append(out, candidate{name, a.Command})
		}
	}
	return append(out, candidate{"human", "built in"}, candidate{"llm", "built in"}, candidate{"synth", "built in"})
}

// initAgents lists what uwf init --agent takes: the configured and
// built-in agents, the agent CLIs of the presets not configured yet
// (described by their tool), and none.
func (cp *completer) initAgents() []candidate {
	out := cp.agents()
	for _, a := range agentCLIs() {
		if !slices.ContainsFunc(out, func(c candidate) bool { return c.word == a.name }) {
			desc := a.preset.Tool + ", preset " + a.preset.Name
			if a.preset.Experimental {
				desc += " (experimental)"
			}
			out = append(out, candidate{a.name, desc})
		}
	}
	return append(out, candidate{"none", "no default agent"})
}

// settings lists the settings of config.yaml as dot paths.
func (cp *completer) settings() []candidate {
	cfg := cp.config()
	if cfg == nil {
		return nil
	}
	var out []candidate
	for _, kv := range cfg.List() {
		out = append(out, candidate{word: kv.Path})
	}
	return out
}

// config reads config.yaml, or returns nil.
func (cp *completer) config() *config.Config {
	home, err := (&session{home: cp.home}).homeDir()
	if err != nil {
		return nil
	}
	cfg, err := config.Load(home, agent.Builtins())
	if err != nil {
		return nil
	}
	return cfg
}

// completionScripts are what "uwf completion <shell>" prints. Each calls
// "uwf __complete -- <words>" (the same uwf the line names), which prints
// "<candidate>\t<description>" lines; when it prints none, the shell
// offers file names.
var completionScripts = map[string]string{
	"bash": `# bash completion for uwf. Load it with: eval "$(uwf completion bash)"
_uwf_complete() {
    local IFS=$'\n' line
    local -a out
    COMPREPLY=()
    out=($("${COMP_WORDS[0]}" __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)) || return 0
    for line in "${out[@]}"; do
        COMPREPLY+=("${line%%$'\t'*}")
    done
}
complete -o default -F _uwf_complete uwf
`,
	"zsh": `#compdef uwf
# zsh completion for uwf. Load it with: eval "$(uwf completion zsh)" (after compinit)
_uwf() {
    local -a lines cands
    local line
    lines=("${(@f)$("${words[1]}" __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    for line in "${lines[@]}"; do
        [[ -z $line ]] && continue
        cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
    done
    if (( ${#cands} )); then
        _describe -t uwf uwf cands
    else
        _files
    fi
}
if (( $+functions[compdef] )); then
    compdef _uwf uwf
fi
`,
	"fish": `# fish completion for uwf. Load it with: uwf completion fish | source
function __uwf_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l out ($words[1] __complete -- $words[2..-1] 2>/dev/null)
    if test (count $out) -eq 0
        __fish_complete_path (commandline -ct)
    else
        printf '%s\n' $out
    end
end
complete -c uwf -f -a '(__uwf_complete)'
`,
}
