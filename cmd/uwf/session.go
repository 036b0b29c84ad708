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
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/internal/secret"
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

// warnf prints a warning line to stderr, "uwf: <message>", for things a
// command skipped while it went on with the rest.
func (s *session) warnf(format string, args ...any) {
	if s.stderr != nil {
		fmt.Fprintf(s.stderr, "uwf: "+format+"\n", args...)
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

// storeLocation is a parsed --store URL.
type storeLocation struct {
	dir        string // the disk store's directory
	durability string // from ?durability=, "" if absent
	postgres   string // a PostgreSQL connection URL, if the store is one
}

// parseStoreURL reads the store URL forms of docs/CLI.md: a plain path or
// file://path for the disk backend, optionally followed by
// ?durability=strict|none; postgres:// and postgresql:// for PostgreSQL
// (not in this build yet).
func parseStoreURL(raw string) (storeLocation, error) {
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return storeLocation{postgres: raw}, nil
	case strings.HasPrefix(lower, "file://"):
		rest := raw[len("file://"):]
		path, query, _ := strings.Cut(rest, "?")
		p, err := url.PathUnescape(path)
		if err != nil {
			return storeLocation{}, fmt.Errorf("invalid store URL %q: %w", secret.RedactURL(raw), err)
		}
		if strings.HasPrefix(p, "localhost/") {
			p = p[len("localhost"):]
		}
		if p == "" {
			return storeLocation{}, fmt.Errorf("invalid store URL %q: no path", secret.RedactURL(raw))
		}
		return withQuery(raw, storeLocation{dir: p}, query)
	}
	if i := strings.Index(raw, "://"); i > 0 && !strings.ContainsAny(raw[:i], "/\\.") {
		return storeLocation{}, fmt.Errorf("invalid store URL %q: unknown scheme %q (want a path, file://, or postgres://)", secret.RedactURL(raw), raw[:i])
	}
	if raw == "" {
		return storeLocation{}, errors.New("invalid store URL: empty")
	}
	// A plain path may end in ?durability=...; a path that merely contains
	// '?' is kept whole.
	if path, query, ok := strings.Cut(raw, "?"); ok && strings.HasPrefix(query, "durability=") {
		return withQuery(raw, storeLocation{dir: path}, query)
	}
	return storeLocation{dir: raw}, nil
}

func withQuery(raw string, loc storeLocation, query string) (storeLocation, error) {
	if query == "" {
		return loc, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return storeLocation{}, fmt.Errorf("invalid store URL %q: %w", secret.RedactURL(raw), err)
	}
	for k, v := range q {
		if k != "durability" || len(v) != 1 {
			return storeLocation{}, fmt.Errorf("invalid store URL %q: unknown or repeated parameter %q (only durability=strict|none)", secret.RedactURL(raw), k)
		}
	}
	loc.durability = q.Get("durability")
	return loc, nil
}

// location resolves the store's place from --store, --home and their
// defaults.
func (s *session) location() (storeLocation, error) {
	raw := s.store
	if raw == "" {
		home, err := s.homeDir()
		if err != nil {
			return storeLocation{}, err
		}
		raw = filepath.Join(home, "store")
	}
	loc, err := parseStoreURL(raw)
	if err != nil {
		return storeLocation{}, &usageError{cmd: s.cmd, err: err}
	}
	if loc.postgres == "" {
		loc.dir = expandTilde(loc.dir)
	}
	return loc, nil
}

func (s *session) homeDir() (string, error) {
	if s.home != "" {
		return expandTilde(s.home), nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory (set --home or UWF_HOME): %w", err)
	}
	return filepath.Join(u, ".uncaged", "workflow"), nil
}

func expandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if u, err := os.UserHomeDir(); err == nil {
			return filepath.Join(u, p[1:])
		}
	}
	return p
}

// open opens the store, creating it on first use (safe when several
// processes do so at once), and the typed layer over it. close releases it.
func (s *session) open(ctx context.Context) (repo *cas.Repo, close func(), err error) {
	loc, err := s.location()
	if err != nil {
		return nil, nil, err
	}
	if loc.postgres != "" {
		return s.openPostgres(ctx, loc.postgres)
	}
	// --durability (or UWF_DURABILITY) wins over the URL's ?durability=.
	var d disk.Durability
	mode := "strict"
	for _, m := range []string{loc.durability, s.durability} {
		if m == "" {
			continue
		}
		if d, err = disk.ParseDurability(m); err != nil {
			return nil, nil, usageErrorf(s.cmd, "invalid durability %q: want strict or none", m)
		}
		mode = m
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(loc.dir)), 0o700); err != nil {
		return nil, nil, fmt.Errorf("create the store's parent directory: %w", err)
	}
	st, err := disk.OpenOrCreate(loc.dir, &disk.Options{Durability: d, Now: s.now})
	if err != nil {
		return nil, nil, fmt.Errorf("open store %s: %w", loc.dir, err)
	}
	s.log.Debug("opened store", "dir", loc.dir, "durability", mode, "since_main", time.Since(mainStart))
	repo, err = cas.Open(ctx, st, st.Refs(), &cas.Options{Logger: s.log})
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("open store %s: %w", loc.dir, err)
	}
	return repo, func() { st.Close() }, nil
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

// engine returns the thread engine over repo, with the session's clock and
// thread ID maker.
func (s *session) engine(repo *cas.Repo) *thread.Engine {
	return thread.New(repo, &thread.Options{Now: s.now, NewID: s.newID, Logger: s.log})
}

// storeURL is the store as agents are told it (UWF_STORE): the --store
// URL, or the default disk store's path. It may hold a password: print
// [session.printableStoreURL] instead.
func (s *session) storeURL() string {
	if s.store != "" {
		return s.store
	}
	home, err := s.homeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "store")
}

// printableStoreURL is storeURL with any password hidden.
func (s *session) printableStoreURL() string { return secret.RedactURL(s.storeURL()) }

// openPostgres opens a PostgreSQL store (--durability does not apply: the
// server's own settings decide).
func (s *session) openPostgres(ctx context.Context, url string) (*cas.Repo, func(), error) {
	name := secret.RedactURL(url)
	st, err := postgres.Open(ctx, url, &postgres.Options{Logger: s.log})
	if err != nil {
		return nil, nil, fmt.Errorf("open store %s: %w", name, err)
	}
	s.log.Debug("opened store", "postgres", name)
	repo, err := cas.Open(ctx, st, st.Refs(), &cas.Options{Logger: s.log})
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("open store %s: %w", name, err)
	}
	return repo, st.Close, nil
}
