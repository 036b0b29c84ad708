package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/secret"
)

// Location is a parsed store URL: exactly one of Dir and Postgres is set.
type Location struct {
	// Dir is the disk store's folder, with a leading ~ expanded; "" for
	// PostgreSQL.
	Dir string
	// Durability is the URL's ?durability= value, "strict" or "none"; ""
	// if the URL has none (or names a PostgreSQL store).
	Durability string
	// Postgres is the PostgreSQL connection URL as given (it may hold a
	// password); "" for a disk store.
	Postgres string
}

// URLError is a store URL that cannot be read: an unknown scheme, an empty
// path, a query parameter other than durability, a malformed escape or
// durability. Nothing was opened or created. A program that took the URL
// from a person (as the uwf CLI does) reports it as a usage error.
type URLError struct {
	URL string // the URL as given, its password redacted
	Err error  // what is wrong with it
}

func (e *URLError) Error() string { return fmt.Sprintf("invalid store URL %q: %v", e.URL, e.Err) }

// Unwrap returns what is wrong with the URL.
func (e *URLError) Unwrap() error { return e.Err }

// DurabilityError is a durability, in [Options] or a URL's ?durability=,
// other than "strict" or "none".
type DurabilityError struct {
	Value string // as given
}

func (e *DurabilityError) Error() string {
	return fmt.Sprintf("invalid durability %q: want strict or none", e.Value)
}

// Parse reads a store URL (the forms are in the package documentation).
// The error is a *[URLError] (which may wrap a *[DurabilityError]). A
// PostgreSQL URL is only recognised here (and refused if it has a
// durability parameter): its own syntax is checked when it is opened.
func Parse(raw string) (Location, error) {
	bad := func(err error) (Location, error) {
		return Location{}, &URLError{URL: secret.RedactURL(raw), Err: err}
	}
	lower := strings.ToLower(raw)
	switch {
	case raw == "":
		return bad(fmt.Errorf("empty"))
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		if _, query, ok := strings.Cut(raw, "?"); ok {
			if q, err := url.ParseQuery(query); err == nil && q.Has("durability") {
				return bad(fmt.Errorf("durability applies to disk stores only (PostgreSQL follows the server's settings)"))
			}
		}
		return Location{Postgres: raw}, nil
	case strings.HasPrefix(lower, "file://"):
		path, query, _ := strings.Cut(raw[len("file://"):], "?")
		p, err := url.PathUnescape(path)
		if err != nil {
			return bad(err)
		}
		if strings.HasPrefix(p, "localhost/") {
			p = p[len("localhost"):]
		}
		if p == "" {
			return bad(fmt.Errorf("no path"))
		}
		return withQuery(Location{Dir: ExpandTilde(p)}, query, bad)
	}
	if i := strings.Index(raw, "://"); i > 0 && !strings.ContainsAny(raw[:i], "/\\.") {
		return bad(fmt.Errorf("unknown scheme %q (want a path, file://, or postgres://)", raw[:i]))
	}
	// A plain path may end in ?durability=...; a path that merely contains
	// '?' is kept whole.
	if path, query, ok := strings.Cut(raw, "?"); ok && strings.HasPrefix(query, "durability=") {
		if path == "" {
			return bad(fmt.Errorf("no path"))
		}
		return withQuery(Location{Dir: ExpandTilde(path)}, query, bad)
	}
	return Location{Dir: ExpandTilde(raw)}, nil
}

// withQuery reads a disk URL's query: only one durability=strict|none.
func withQuery(loc Location, query string, bad func(error) (Location, error)) (Location, error) {
	if query == "" {
		return loc, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad(err)
	}
	for k, v := range q {
		if k != "durability" || len(v) != 1 {
			return bad(fmt.Errorf("unknown or repeated parameter %q (only durability=strict|none)", k))
		}
	}
	loc.Durability = q.Get("durability")
	if _, err := disk.ParseDurability(loc.Durability); err != nil {
		return bad(&DurabilityError{Value: loc.Durability})
	}
	return loc, nil
}

// ExpandTilde returns p with a leading "~" or "~/" replaced by the user's
// home directory, as [Parse] does for a disk path; other paths, and p
// itself when the home directory is unknown, are returned unchanged.
func ExpandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if u, err := os.UserHomeDir(); err == nil {
			return filepath.Join(u, p[1:])
		}
	}
	return p
}

// Options configure [Open]. A nil *Options, and the zero value of each
// field, mean the defaults.
type Options struct {
	// Durability, "strict" or "none", overrides the URL's ?durability=
	// for a disk store ("" keeps the URL's, else strict). A PostgreSQL
	// store ignores it: the server's settings decide.
	Durability string
	// Now is a disk store's clock (objects' ages, ref-log times); nil
	// means time.Now. A PostgreSQL store uses the server's clock.
	Now func() time.Time
	// Logger receives the backend's and the typed layer's events, and a
	// debug event naming the store opened; nil discards them.
	Logger *slog.Logger
	// NoCreate opens only a store that is there, and writes nothing to
	// it: no folder, schema or table is created, a store whose creation
	// was cut short is not initialised, and where there is no store the
	// error wraps [cas.ErrNotFound]. For readers that must never write
	// (shell completion).
	NoCreate bool
}

// Open opens the store at rawURL, creating it on first use (safe when
// several processes do so at once; not with Options.NoCreate), and returns the typed layer over it
// and a function that releases the backend (call it when done with repo;
// it cannot fail).
//
// The error is a *[URLError] for a URL [Parse] refuses and a
// *[DurabilityError] for a bad Options.Durability (nothing is created
// then); an error opening the backend names the store, with any password
// redacted, and wraps the backend's ([cas.ErrFormat] for a store of an
// unknown format version; [cas.ErrNotFound] for no store, with
// Options.NoCreate).
func Open(ctx context.Context, rawURL string, opts *Options) (repo *cas.Repo, release func(), err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	loc, err := Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	if loc.Postgres != "" {
		return openPostgres(ctx, loc.Postgres, o)
	}
	return openDisk(ctx, loc, o)
}

// openDisk opens (or creates) the disk store at loc.
func openDisk(ctx context.Context, loc Location, o Options) (*cas.Repo, func(), error) {
	mode := "strict"
	for _, m := range []string{loc.Durability, o.Durability} {
		if m != "" {
			mode = m
		}
	}
	d, err := disk.ParseDurability(mode)
	if err != nil {
		return nil, nil, &DurabilityError{Value: mode}
	}
	dopts := &disk.Options{Durability: d, Now: o.Now, Logger: o.Logger}
	var st *disk.Store
	if o.NoCreate {
		st, err = disk.Open(loc.Dir, dopts)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("open store %s: %w: no store there (nothing was created)", loc.Dir, cas.ErrNotFound)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(filepath.Clean(loc.Dir)), 0o700); err != nil {
			return nil, nil, fmt.Errorf("open store %s: create its parent folder: %w", loc.Dir, err)
		}
		st, err = disk.OpenOrCreate(loc.Dir, dopts)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open store %s: %w", loc.Dir, err)
	}
	o.Logger.Debug("opened store", "dir", loc.Dir, "durability", mode)
	repo, err := cas.Open(ctx, st, st.Refs(), &cas.Options{Logger: o.Logger, NoInit: o.NoCreate})
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("open store %s: %w", loc.Dir, err)
	}
	return repo, func() { st.Close() }, nil
}

// openPostgres opens (or creates) the PostgreSQL store at url.
func openPostgres(ctx context.Context, url string, o Options) (*cas.Repo, func(), error) {
	name := secret.RedactURL(url)
	st, err := postgres.Open(ctx, url, &postgres.Options{Logger: o.Logger, NoCreate: o.NoCreate})
	if err != nil {
		return nil, nil, fmt.Errorf("open store %s: %w", name, err)
	}
	o.Logger.Debug("opened store", "postgres", name)
	repo, err := cas.Open(ctx, st, st.Refs(), &cas.Options{Logger: o.Logger, NoInit: o.NoCreate})
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("open store %s: %w", name, err)
	}
	return repo, st.Close, nil
}
