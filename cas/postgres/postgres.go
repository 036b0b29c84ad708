package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/uncaged/uwf/cas"
)

// Defaults of [Options].
const (
	// DefaultSchema is the SQL schema a store lives in when Options.Schema
	// is empty.
	DefaultSchema = "uwf"
	// DefaultMaxConns is the size of each of a store's two connection
	// pools when neither Options.MaxConns nor the URL's pool_max_conns
	// sets it.
	DefaultMaxConns = 10
)

// Options configure [Open]. The zero value (or nil) means the defaults.
type Options struct {
	// Logger receives debug and info events (migrations, healed objects);
	// nil discards them.
	Logger *slog.Logger
	// Schema is the SQL schema that holds the store's tables; "" means
	// the URL's schema parameter (postgres://host/db?schema=NAME) if it has
	// one, else [DefaultSchema]. It must be 1-63 characters of ASCII
	// letters, digits and underscores, not starting with a digit. Several
	// stores may share one database in different schemas.
	Schema string
	// MaxConns bounds each of the store's two connection pools: one for
	// operations and one for holders of the store-wide lock (each holder
	// keeps a connection: advisory locks belong to sessions). A GC holds
	// one more connection of its own. 0 means the URL's pool_max_conns if
	// it has one, else [DefaultMaxConns].
	MaxConns int32
	// Tracer, if set, sees every statement, batch and connection of the
	// store's pools (pgx's tracer interfaces): for diagnostics, and for
	// tests that count round trips.
	Tracer pgx.QueryTracer
	// NoCreate opens only a store that is there: where the schema has no
	// store (no schema, or no recorded format version), Open fails with an
	// error wrapping [cas.ErrNotFound] and creates nothing (for readers
	// that must never write, such as shell completion).
	NoCreate bool
}

// Store is a [cas.Store] and [cas.BatchPutter] kept in PostgreSQL, for many
// workers on many machines sharing one store. Its [Refs] live in the same
// schema. Ages and log times come from the database server's clock.
//
// A Store is safe for concurrent use by goroutines and, through the
// database, by processes. Close it when done.
type Store struct {
	pool   *pgxpool.Pool // operations
	locks  *pgxpool.Pool // holders of the store-wide lock
	connCf *pgx.ConnConfig
	schema string
	q      queries
	log    *slog.Logger
	refs   *Refs
	sum    func([]byte) cas.Hash // the address function; tests replace it to force collisions
	// lock keys, distinct per schema
	storeKey, gcKey int64

	noCreate bool // Options.NoCreate: Open creates nothing

	listen listener    // wakes the watchers (watch.go)
	notify notifier    // tells other processes' watchers (notify.go)
	reads  sharedReads // lets them share their reads
	closed atomic.Bool // Close was called: watches end
	// closing is cancelled by Close: the watches' statements run under it,
	// so one waiting on the server (a barrier, a slow read) ends at once.
	closing  context.Context
	closeNow context.CancelFunc

	addMu sync.Mutex  // ensureAdditions, one at a time
	added atomic.Bool // the additions are there (migrate.go)
}

var (
	_ cas.Store       = (*Store)(nil)
	_ cas.BatchPutter = (*Store)(nil)
	_ cas.BatchGetter = (*Store)(nil)
	_ cas.Refs        = (*Refs)(nil)
)

// Open connects to the PostgreSQL database at url (a "postgres://..." URL
// or a key=value connection string, as pgx accepts it; a URL may name the
// SQL schema with ?schema=NAME), creates the schema
// and its tables if they are absent (unless [Options.NoCreate]) and migrates older ones, under an
// advisory lock so that concurrent Opens are safe. If the schema was made
// by a newer version of this package the error wraps [cas.ErrFormat] and
// nothing is changed. A nil opts means defaults.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	url, urlSchema := splitSchema(url)
	switch {
	case o.Schema != "":
	case urlSchema != "":
		o.Schema = urlSchema
	default:
		o.Schema = DefaultSchema
	}
	if err := validSchemaName(o.Schema); err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "postgres", "schema", o.Schema)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	// Cancel a statement on the server when its ctx is done, rather than
	// only dropping the connection: a statement waiting for a lock would
	// otherwise keep waiting (and queueing others behind it) on the server.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 5 * time.Second}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "uwf"
	// Generic plans for uwf's prepared statements, unless the URL says
	// otherwise: most take arrays (hash = ANY ($1)), for which the server
	// would otherwise plan every execution again (a custom plan for the
	// array's length looks cheaper than the generic one); planning was a
	// fifth of the server's time per step. Sent with the connection's
	// start-up, so it costs no round trip; a server older than 12, which
	// does not know the setting, is opened again without it.
	planCache := false
	if _, ok := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !ok {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		planCache = true
	}
	if o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	lockCfg := cfg.Copy()
	lockCfg.AfterConnect = checkConnection
	s := &Store{
		connCf:   cfg.ConnConfig.Copy(),
		schema:   o.Schema,
		noCreate: o.NoCreate,
		q:        newQueries(o.Schema),
		log:      logger,
		sum:      cas.Sum,
		storeKey: lockKey(o.Schema, "store", ""),
		gcKey:    lockKey(o.Schema, "gc", ""),
	}
	s.refs = &Refs{s: s}
	s.closing, s.closeNow = context.WithCancel(context.Background())
	if err := s.openPools(ctx, cfg, lockCfg); err != nil {
		return nil, err
	}
	err = s.migrate(ctx)
	if planCache && unknownSetting(err) {
		s.pool.Close()
		s.locks.Close()
		for _, c := range []*pgx.ConnConfig{cfg.ConnConfig, lockCfg.ConnConfig, s.connCf} {
			delete(c.RuntimeParams, "plan_cache_mode")
		}
		if err := s.openPools(ctx, cfg, lockCfg); err != nil {
			return nil, err
		}
		err = s.migrate(ctx)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open postgres store (schema %s): %w", o.Schema, err)
	}
	return s, nil
}

// openPools makes the store's two connection pools (they connect on first
// use).
func (s *Store) openPools(ctx context.Context, cfg, lockCfg *pgxpool.Config) error {
	var err error
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("open postgres store: %w", err)
	}
	if s.locks, err = pgxpool.NewWithConfig(ctx, lockCfg); err != nil {
		s.pool.Close()
		return fmt.Errorf("open postgres store: %w", err)
	}
	return nil
}

// unknownSetting reports whether err is the server's refusal of a setting
// it does not know (plan_cache_mode, before PostgreSQL 12).
func unknownSetting(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42704" && strings.Contains(pe.Message, "plan_cache_mode")
}

// splitSchema takes the schema parameter, which is uwf's and not a
// PostgreSQL setting, out of a postgres:// URL. Other connection strings are
// returned as they are.
func splitSchema(raw string) (rest, schema string) {
	if !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") {
		return raw, ""
	}
	u, err := neturl.Parse(raw)
	if err != nil {
		return raw, "" // pgx reports it
	}
	q := u.Query()
	if !q.Has("schema") {
		return raw, ""
	}
	schema = q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String(), schema
}

// checkConnection makes the server notice, while a lock holder's
// statement waits, that its client went away (PostgreSQL 14 and later), so
// the lock request of a dead process leaves the queue.
func checkConnection(ctx context.Context, c *pgx.Conn) error {
	v, _ := strconv.Atoi(c.PgConn().ParameterStatus("server_version_num"))
	if v == 0 {
		// Older servers report only server_version ("13.4 (Debian ...)").
		major, _, _ := strings.Cut(c.PgConn().ParameterStatus("server_version"), ".")
		m, _ := strconv.Atoi(major)
		v = m * 10000
	}
	if v < 140000 {
		return nil
	}
	_, err := c.Exec(ctx, "SET client_connection_check_interval = 1000")
	return err
}

// Refs returns the store's refs, which share its connections and clock.
// Every call returns the same *Refs.
func (s *Store) Refs() *Refs { return s.refs }

// Schema returns the SQL schema that holds the store.
func (s *Store) Schema() string { return s.schema }

// closeWait bounds how long Close waits for the connections in use (a
// variable for tests).
var closeWait = 15 * time.Second

// Close closes the store's connections. It ends its watches (they yield an
// error wrapping [fs.ErrClosed]; a statement of theirs waiting on the
// server is cancelled), sends the notification still pending, and waits
// until every connection in use is back, so release every lock (call each
// unlock) first. That wait is bounded: a connection still out after 15 s
// (a lock never unlocked, a caller's statement stuck on the server) is
// left to be closed when it comes back, with a warning in the log, and
// Close returns. The store must not be used after Close.
func (s *Store) Close() {
	s.closed.Store(true)
	s.closeNow()
	s.stopNotify()
	s.listen.Broadcast()
	done := make(chan struct{})
	go func() {
		s.locks.Close()
		s.pool.Close()
		close(done)
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("postgres store: Close gave up waiting for connections still in use; they close when given back",
			"schema", s.schema, "operations", s.pool.Stat().AcquiredConns(), "locks", s.locks.Stat().AcquiredConns(), "waited", closeWait)
	}
}

// watchCtx returns ctx, ended also when the store is closed.
func (s *Store) watchCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// validSchemaName accepts the schema names Options.Schema documents.
func validSchemaName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("postgres store: schema name %q: %s", name, why)
	}
	if len(name) > 63 {
		return bad("longer than 63 characters")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9':
			if i == 0 {
				return bad("starts with a digit")
			}
		default:
			return bad(fmt.Sprintf("invalid character %q (letters, digits and _ only)", c))
		}
	}
	return nil
}

// lockKey is the advisory-lock key of a named lock in a schema: the 64 bits
// of XXH64 over "uwf", the schema, the kind and the name. Keys of different
// schemas, sharing one database, are therefore (almost surely) distinct.
func lockKey(schema, kind, name string) int64 {
	return int64(cas.Sum([]byte("uwf\x00" + schema + "\x00" + kind + "\x00" + name)))
}

// retryable reports whether err is a transient failure of a transaction
// that a retry may cure: a serialization failure or a deadlock.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// ctxErr makes err wrap ctx's error when ctx is done: a statement the
// server cancelled at the driver's request fails with a server error that
// does not say why.
func ctxErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// inTx runs f in a transaction (READ COMMITTED) on a pooled connection and
// commits it, retrying the whole transaction a few times on a deadlock or
// serialization failure. If f fails the transaction is rolled back.
func (s *Store) inTx(ctx context.Context, f func(tx pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, f)
		if !retryable(err) {
			return ctxErr(ctx, err)
		}
		s.log.Debug("retrying a transaction", "attempt", attempt+1, "error", err)
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	return ctxErr(ctx, err)
}

// int64s converts hashes to the bigint values stored for them.
func int64s(hs []cas.Hash) []int64 {
	out := make([]int64, len(hs))
	for i, h := range hs {
		out[i] = int64(h)
	}
	return out
}
