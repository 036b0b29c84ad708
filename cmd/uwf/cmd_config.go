package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/moderator"
)

// configCommand is "uwf config": <home>/config.yaml.
func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "read and change <home>/config.yaml (secrets masked)",
		Description: `Dot paths name settings: agents.coder.command, defaultAgent,
models.fast.provider. API keys are never stored in config.yaml: it names
the variables (providers.<p>.apiKeyEnv) that hold them, read from the
environment or <home>/.env. Values of keys containing key, token, secret or
password (any case), and every agents.<a>.env value, are printed as ********.`,
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "print every setting",
				Description: `Prints "<path> = <value>" per setting, sorted (lists as [a, b]); an agent's
experimental preset is followed by "  # experimental preset: ...". With --json,
[{"path","value","note"?}].`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 0, 0, ""); err != nil {
						return err
					}
					return runConfigList(c.App.Writer, s)
				}),
			},
			{
				Name:      "get",
				Usage:     "print one setting",
				ArgsUsage: "<path>",
				Description: `Prints the value at <path> (a section or a list as indented lines); exit 3
if unset. With --json, {"path","value"}.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<path>"); err != nil {
						return err
					}
					if err := checkConfigPath(s.cmd, c.Args().First()); err != nil {
						return err
					}
					return runConfigGet(c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "set",
				Usage:     "change one setting",
				ArgsUsage: "<path> <value>",
				Description: `Sets <path> to <value>, read as YAML ("10m", "[-p, --fast]",
"{provider: openai, model: gpt-4o-mini}"), keeping the file's comments and
order. The new configuration is checked first: a bad value changes nothing.
Prints nothing; with --json, the setting as "config get --json" prints it.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 2, 2, "<path> <value>"); err != nil {
						return err
					}
					if err := checkConfigPath(s.cmd, c.Args().First()); err != nil {
						return err
					}
					home, err := s.homeDir()
					if err != nil {
						return err
					}
					if err := config.Set(home, c.Args().Get(0), c.Args().Get(1), agent.Builtins()); err != nil {
						return err
					}
					if s.json {
						return runConfigGet(c.App.Writer, s, c.Args().Get(0))
					}
					return nil
				}),
			},
		},
	}
}

// checkConfigPath rejects a dot path with an empty segment.
func checkConfigPath(cmd, path string) error {
	if slices.Contains(strings.Split(path, "."), "") {
		return usageErrorf(cmd, "invalid setting path %q: want dot-separated names, such as agents.coder.timeout", path)
	}
	return nil
}

// settingText renders a setting's value on one line: a list as a YAML flow
// sequence ("[-p, --output-format, text]").
func settingText(v any) string {
	if l, ok := v.([]any); ok {
		var n yaml.Node
		if err := n.Encode(l); err == nil {
			n.Style = yaml.FlowStyle
			if b, err := yaml.Marshal(&n); err == nil {
				return strings.TrimSuffix(string(b), "\n")
			}
		}
	}
	return oneLine(moderator.Text(v))
}

func runConfigList(w io.Writer, s *session) error {
	cfg, err := s.config()
	if err != nil {
		return err
	}
	kvs := cfg.List()
	if s.json {
		type kv struct {
			Path  string `json:"path"`
			Value any    `json:"value"`
			Note  string `json:"note,omitempty"`
		}
		out := []kv{}
		for _, e := range kvs {
			out = append(out, kv{e.Path, e.Value, e.Note})
		}
		return writeJSON(w, out)
	}
	bw := bufio.NewWriter(w)
	for _, e := range kvs {
		fmt.Fprintf(bw, "%s = %s", e.Path, settingText(e.Value))
		if e.Note != "" {
			fmt.Fprintf(bw, "  # %s", e.Note)
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

func runConfigGet(w io.Writer, s *session, path string) error {
	cfg, err := s.config()
	if err != nil {
		return err
	}
	v, err := cfg.Get(path)
	if err != nil {
		return err
	}
	v = config.Masked(path, v)
	if s.json {
		return writeJSON(w, struct {
			Path  string `json:"path"`
			Value any    `json:"value"`
		}{path, v})
	}
	_, err = fmt.Fprintln(w, moderator.Text(v))
	return err
}
