package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/internal/progress"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/store"
	"github.com/uncaged/uwf/thread"
)

// session is what a command takes from the global flags: where the store
// is, how to print, and the process's stdin. The store is opened only by
// commands that need it (help and usage errors never create it).
type session struct {
	cmd        string // the command's full name, for usage errors
	home       string
	store      string // the --store URL as given ("" for <home>/store)
	durability string // the --durability flag as given ("" if unset)
	json       bool
	progress   *bool          // --progress as given; nil if unset (show on a terminal)
	log        *slog.Logger   // masked by mask
	mask       *secret.Masker // the known secrets: the store's password, then config's (nil: none)
	stdin      io.Reader
	stderr     io.Writer        // for warnings; errors are returned
	now        func() time.Time // nil: the real clock
	newID      func() ulid.ULID // nil: ulid.Make
}

// newSession reads the global flags. A bad --log-level is a usage error.
func newSession(c *cli.Context) (*session, error) {
	s := &session{
		cmd:        c.Command.HelpName,
		home:       c.String("home"),
		store:      c.String("store"),
		durability: c.String("durability"),
		json:       c.Bool("json"),
		stdin:      c.App.Reader,
		stderr:     c.App.ErrWriter,
	}
	if c.IsSet("progress") {
		p := c.Bool("progress")
		s.progress = &p
	}
	if now, ok := c.App.Metadata[metaNow].(func() time.Time); ok {
		s.now = now
	}
	if newID, ok := c.App.Metadata[metaNewID].(func() ulid.ULID); ok {
		s.newID = newID
	}
	var level slog.Level // info; warn unless set
	if l := c.String("log-level"); l == "" {
		level = slog.LevelWarn
	} else if err := level.UnmarshalText([]byte(l)); err != nil {
		return nil, usageErrorf(s.cmd, "invalid --log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	s.mask = secret.New(secret.URLPasswords(s.store)...)
	s.log = slog.New(slog.NewTextHandler(s.mask.Writer(c.App.ErrWriter), &slog.HandlerOptions{Level: level}))
	return s, nil
}

// serviceLog is the log of a command that runs until stopped (serve,
// worker): at info unless --log-level (or UWF_LOG_LEVEL) says otherwise,
// masked like every log.
func (s *session) serviceLog(c *cli.Context) *slog.Logger {
	if c.IsSet("log-level") && c.String("log-level") != "" {
		return s.log
	}
	return slog.New(slog.NewTextHandler(s.mask.Writer(c.App.ErrWriter), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// warnf prints a warning line to stderr, "uwf: <message>", for things a
// command skipped while it went on with the rest. Known secrets are
// masked, as in the logs and in returned errors.
func (s *session) warnf(format string, args ...any) {
	if s.stderr != nil {
		// One Write, so the masker sees the whole line.
		io.WriteString(s.mask.Writer(s.stderr), "uwf: "+userMessage(fmt.Sprintf(format, args...))+"\n")
	}
}

// withSession adapts a command body to a cli.ActionFunc. The error it
// returns has the session's known secrets masked.
func withSession(fn func(c *cli.Context, s *session) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		s, err := newSession(c)
		if err != nil {
			return err
		}
		err = fn(c, s)
		s.log.Debug("command done", "since_main", time.Since(mainStart))
		return s.mask.Error(err)
	}
}

// mainStart is when the program's own code began: package main's variables
// are initialised after every imported package's init, just before main.
// The debug log measures from it (bench/step-cli.sh reads it).
var mainStart = time.Now()

// storeRaw is the store URL from --store, or the default disk store's path
// <home>/store.
func (s *session) storeRaw() (string, error) {
	if s.store != "" {
		return s.store, nil
	}
	home, err := s.homeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "store"), nil
}

// homeDir is uwf's home: --home (or UWF_HOME), with a leading ~ expanded,
// made absolute, so that agents running in another folder are told the same
// one (UWF_HOME); else ~/.uncaged/workflow.
func (s *session) homeDir() (string, error) {
	if s.home != "" {
		home, err := filepath.Abs(store.ExpandTilde(s.home))
		if err != nil {
			return "", fmt.Errorf("--home %s: %w", s.home, err)
		}
		return home, nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory (set --home or UWF_HOME): %w", err)
	}
	return filepath.Join(u, ".uncaged", "workflow"), nil
}

// open opens the store with [store.Open], as any program given the same
// URL does: a URL or durability it cannot read is a usage error. close
// releases it.
func (s *session) open(ctx context.Context) (repo *cas.Repo, close func(), err error) {
	raw, err := s.storeRaw()
	if err != nil {
		return nil, nil, err
	}
	// --durability (or UWF_DURABILITY) wins over the URL's ?durability=.
	repo, close, err = store.Open(ctx, raw, &store.Options{Durability: s.durability, Now: s.now, Logger: s.log})
	var badURL *store.URLError
	var badDurability *store.DurabilityError
	if errors.As(err, &badURL) || errors.As(err, &badDurability) {
		return nil, nil, &usageError{cmd: s.cmd, err: err}
	}
	return repo, close, err
}

// config reads <home>/config.yaml (an absent file is an empty config) and
// adds its secrets to those the session masks.
func (s *session) config() (*config.Config, error) {
	home, err := s.homeDir()
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(home, agent.Builtins())
	if err != nil {
		return nil, err
	}
	if s.mask != nil {
		s.mask.Add(cfg.Secrets()...)
	}
	return cfg, nil
}

// clock is the session's time now: its fixed clock in tests, else the
// real one.
func (s *session) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// engine returns the thread engine over repo, with the session's clock and
// thread ID maker.
func (s *session) engine(repo *cas.Repo) *thread.Engine {
	return thread.New(repo, &thread.Options{Now: s.now, NewID: s.newID, Logger: s.log})
}

// storeURL is the store as agents are told it (UWF_STORE): the --store
// URL, or the default disk store's path ("" if the home is unknown). A disk
// store's path is made absolute (see [absStoreURL]), since agents run in the
// start node's cwd; a PostgreSQL URL is passed whole. It may hold a
// password: print [session.printableStoreURL] instead.
func (s *session) storeURL() string {
	raw, _ := s.storeRaw() // an unknown home fails the command elsewhere
	return absStoreURL(raw)
}

// absStoreURL returns the disk store URL raw with its path made absolute,
// keeping its ?durability=; it opens with [store.Open] from any folder as
// raw does from this one. A PostgreSQL URL, an absolute plain path, and a
// URL [store.Parse] refuses (the command's own open reports it) are
// returned unchanged. The result is a plain path when that reads back
// the same, else a file:// URL with the path percent-encoded.
func absStoreURL(raw string) string {
	loc, err := store.Parse(raw)
	if err != nil || loc.Postgres != "" || raw == loc.Dir && filepath.IsAbs(raw) {
		return raw
	}
	dir, err := filepath.Abs(loc.Dir)
	if err != nil {
		return raw
	}
	query := ""
	if loc.Durability != "" {
		query = "?durability=" + loc.Durability
	}
	if plain := dir + query; !strings.Contains(dir, "?") && !strings.Contains(dir, "://") {
		return plain
	}
	return "file://" + (&url.URL{Path: filepath.ToSlash(dir)}).EscapedPath() + query
}

// printableStoreURL is storeURL with any password hidden.
func (s *session) printableStoreURL() string { return secret.RedactURL(s.storeURL()) }

// withProgress returns ctx carrying a reporter of the library's long
// operations ([cas.WithProgress]) and the writer it draws with, when
// progress is to be shown: on a terminal stderr (a bar, or JSON lines
// with --json) unless --progress=false, and elsewhere only with
// --progress (text lines, or JSON lines). Otherwise it returns ctx and a
// nil writer, whose methods do nothing. The caller closes the writer when
// the work is done.
func (s *session) withProgress(ctx context.Context) (context.Context, *progress.Writer) {
	if s.stderr == nil || s.progress != nil && !*s.progress {
		return ctx, nil
	}
	tty := progress.IsTerminal(s.stderr)
	var mode progress.Mode
	switch {
	case s.json:
		mode = progress.JSON
	case tty:
		mode = progress.Bar
	default:
		mode = progress.Lines
	}
	if !tty && s.progress == nil {
		return ctx, nil
	}
	pw := progress.New(s.stderr, mode)
	return cas.WithProgress(ctx, pw.Report), pw
}
