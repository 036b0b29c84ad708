package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// newApp returns the uwf command line, writing results to stdout and
// diagnostics to stderr; its Reader (stdin by default) feeds "-" arguments
// and batch modes.
//
// urfave/cli v2 has no hook between receiving the arguments and parsing
// them, and it stops parsing flags at the first positional argument. So the
// App returned here is a thin front: it takes the arguments unparsed
// (SkipFlagParsing), puts them in an order v2 can parse (reorderArgs), and
// runs the command tree (commandTree) with them. Every error reaches the
// caller of RunContext, which passes it to exitCode.
func newApp(stdout, stderr io.Writer) *cli.App {
	front := &cli.App{
		Name:            "uwf",
		HelpName:        "uwf",
		Usage:           "a content-addressed Merkle store for AI-agent workflows",
		Reader:          os.Stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelp:        true,
		HideVersion:     true,
		SkipFlagParsing: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    onUsageError,
	}
	front.Action = func(c *cli.Context) error {
		app := commandTree(c.App)
		args, err := reorderArgs(app, append([]string{app.Name}, c.Args().Slice()...))
		if err != nil {
			return err
		}
		if err := app.RunContext(c.Context, args); err != nil {
			return err
		}
		if err, ok := app.Metadata[metaNotFound].(error); ok {
			return err
		}
		return nil
	}
	return front
}

// Keys of App.Metadata.
const (
	// metaNow holds a func() time.Time: the store's clock (tests fix it).
	metaNow = "uwf.now"
	// metaNewID holds a func() ulid.ULID: the maker of thread IDs (tests
	// make them in order).
	metaNewID = "uwf.new-id"
	// metaNotFound holds the usage error for an unknown help topic, which
	// v2's CommandNotFound cannot return.
	metaNotFound = "uwf.command-not-found"
)

// commandTree builds the commands, sharing front's reader, writers and
// metadata. Every command gets OnUsageError (the app's covers root flags
// only) and a no-op ExitErrHandler, so all errors are returned, typed.
func commandTree(front *cli.App) *cli.App {
	app := &cli.App{
		Name:                  "uwf",
		HelpName:              "uwf",
		Usage:                 front.Usage,
		Version:               version(),
		Description:           "Global options are accepted before or after the command, and a command's options before or\nafter its arguments; -- ends the options. Results go to stdout, errors to stderr.",
		Reader:                front.Reader,
		Writer:                front.Writer,
		ErrWriter:             front.ErrWriter,
		Metadata:              front.Metadata,
		ExitErrHandler:        func(*cli.Context, error) {},
		OnUsageError:          onUsageError,
		CustomAppHelpTemplate: cli.AppHelpTemplate + exitCodesHelp,
		Flags:                 globalFlags(),
		Commands: []*cli.Command{
			casCommand(),
			workflowCommand(),
			threadCommand(),
			stepCommand(),
			configCommand(),
			demoCommand(),
			serveCommand(),
			workerCommand(),
		},
		CommandNotFound: func(c *cli.Context, name string) {
			c.App.Metadata[metaNotFound] = usageErrorf(c.Command.HelpName, "no help topic %q", name)
		},
	}
	var each func([]*cli.Command)
	each = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.OnUsageError = onUsageError
			each(c.Subcommands)
		}
	}
	each(app.Commands)
	return app
}

// onUsageError turns urfave's parse errors into a *usageError, which
// exitCode prints once to stderr (urfave would print usage to stdout).
func onUsageError(c *cli.Context, err error, _ bool) error {
	name := "uwf"
	if c != nil && c.Command != nil && c.Command.HelpName != "" {
		name = c.Command.HelpName
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return &usageError{cmd: name, err: fmt.Errorf("unknown flag %s", f)}
	}
	return &usageError{cmd: name, err: errors.New(msg)}
}

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "home", Usage: "uwf's home `DIR`", EnvVars: []string{"UWF_HOME"}, DefaultText: "~/.uncaged/workflow"},
		&cli.StringFlag{Name: "store", Usage: "the store `URL`: a path or file://path, optionally ?durability=strict|none (disk); postgres://...", EnvVars: []string{"UWF_STORE"}, DefaultText: "<home>/store"},
		&cli.StringFlag{Name: "durability", Usage: "the disk store's sync `MODE`: strict (fsync every write) or none", EnvVars: []string{"UWF_DURABILITY"}, DefaultText: "strict"},
		&cli.BoolFlag{Name: "json", Usage: "print results as JSON (a stable format: docs/CLI.md)"},
		&cli.StringFlag{Name: "log-level", Usage: "log to stderr at `LEVEL`: debug, info, warn or error", EnvVars: []string{"UWF_LOG_LEVEL"}, Value: "warn"},
	}
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// wantArgs checks the number of positional arguments, naming them (as in
// "<hash>") in the usage error.
func wantArgs(c *cli.Context, min, max int, names string) error {
	n := c.NArg()
	switch {
	case n < min && min == max:
		return usageErrorf(c.Command.HelpName, "want %d argument%s %s, got %d", min, plural(min), names, n)
	case n < min:
		return usageErrorf(c.Command.HelpName, "want at least %d argument%s %s, got %d", min, plural(min), names, n)
	case max >= 0 && n > max:
		if max == 0 {
			return usageErrorf(c.Command.HelpName, "want no arguments, got %q", c.Args().Slice())
		}
		return usageErrorf(c.Command.HelpName, "want at most %d argument%s %s, got %d: unexpected %q", max, plural(max), names, n, c.Args().Slice()[max:])
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
