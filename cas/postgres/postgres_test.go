package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
)

// testURL is the database the tests use, each test in schemas of its own.
var testURL = os.Getenv(pgtest.EnvVar)

// needPostgres skips t without a test server (fails it under CI=true).
func needPostgres(t testing.TB) {
	t.Helper()
	pgtest.URL(t)
}

var (
	adminOnce sync.Once
	adminPool *pgxpool.Pool
	adminErr  error
)

// admin returns a pool for what the tests do behind a store's back:
// dropping schemas, damaging rows, bumping versions, ending sessions.
func admin(t testing.TB) *pgxpool.Pool {
	t.Helper()
	needPostgres(t)
	adminOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(testURL)
		if err != nil {
			adminErr = err
			return
		}
		cfg.MaxConns = 4
		adminPool, adminErr = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if adminErr != nil {
		t.Fatalf("connect to %s: %v", testURL, adminErr)
	}
	return adminPool
}

// freshSchema returns an unused schema name, dropped when t ends.
func freshSchema(t testing.TB) string {
	t.Helper()
	a := admin(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "uwf_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := a.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// openStore opens a store in schema, closed when t ends (before the schema
// is dropped, if freshSchema registered that first).
func openStore(t testing.TB, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), testURL, &postgres.Options{Schema: schema, MaxConns: 8})
	if err != nil {
		t.Fatalf("Open(schema %s): %v", schema, err)
	}
	t.Cleanup(s.Close)
	return s
}

// newStore opens a store in a fresh schema.
func newStore(t testing.TB) *postgres.Store {
	t.Helper()
	return openStore(t, freshSchema(t))
}

// corruptible adds castest.Corrupter to a store, damaging rows through the
// admin pool.
type corruptible struct {
	*postgres.Store
	t testing.TB
}

// Unwrap lets the refs' fast path (SwapTouching) see the store it wraps:
// Corrupt changes no operation.
func (c corruptible) Unwrap() cas.Store { return c.Store }

func (c corruptible) Corrupt(h cas.Hash, data []byte) bool {
	tag, err := admin(c.t).Exec(context.Background(),
		"UPDATE "+pgx.Identifier{c.Schema(), "objects"}.Sanitize()+" SET data = $2::bytea, size = octet_length($2::bytea) WHERE hash = $1",
		int64(h), data)
	if err != nil {
		c.t.Fatalf("corrupt %s: %v", h, err)
	}
	return tag.RowsAffected() > 0
}

func TestConformance(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
		s := newStore(t)
		return corruptible{s, t}, droppable{s.Refs(), s, t}
	})
}

// droppable adds castest.RefDropper to refs, deleting a ref's row through
// the admin connection.
type droppable struct {
	*postgres.Refs
	s *postgres.Store
	t testing.TB
}

func (d droppable) DropRef(name string) bool {
	tag, err := admin(d.t).Exec(context.Background(), "DELETE FROM "+pgx.Identifier{d.s.Schema(), "refs"}.Sanitize()+" WHERE name = $1", name)
	if err != nil {
		d.t.Fatalf("drop ref %s: %v", name, err)
	}
	return tag.RowsAffected() > 0
}

func TestOpenOptions(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	for _, bad := range []string{"1abc", "a-b", "a b", `a"b`, strings.Repeat("x", 64), "ä"} {
		if s, err := postgres.Open(ctx, testURL, &postgres.Options{Schema: bad}); err == nil {
			s.Close()
			t.Errorf("Open(schema %q) succeeded, want an error", bad)
		}
	}
	if s, err := postgres.Open(ctx, "postgres://uwf@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=5", nil); err == nil {
		s.Close()
		t.Errorf("Open(a closed port) succeeded")
	}
	// The URL may name the schema; Options.Schema wins over it.
	fromURL := freshSchema(t)
	sep := "?"
	if strings.Contains(testURL, "?") {
		sep = "&"
	}
	s1, err := postgres.Open(ctx, testURL+sep+"schema="+fromURL, &postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatalf("Open(?schema=%s): %v", fromURL, err)
	}
	if s1.Schema() != fromURL {
		t.Errorf("Open(?schema=%s).Schema() = %s", fromURL, s1.Schema())
	}
	s1.Close()
	explicit := freshSchema(t)
	s2, err := postgres.Open(ctx, testURL+sep+"schema="+fromURL, &postgres.Options{Schema: explicit, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Schema() != explicit {
		t.Errorf("Schema() = %s, want Options.Schema %s", s2.Schema(), explicit)
	}
	s2.Close()
	// Mixed case and the default schema name are quoted, not folded.
	schema := freshSchema(t) + "_Mixed"
	t.Cleanup(func() {
		_, _ = admin(t).Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	s := openStore(t, schema)
	if _, err := s.Put(ctx, []byte("x")); err != nil {
		t.Fatalf("Put in schema %s: %v", schema, err)
	}
}

func TestMigrations(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	schema := freshSchema(t)
	version := func() int {
		t.Helper()
		var v int
		err := admin(t).QueryRow(ctx, "SELECT version FROM "+pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&v)
		if err != nil {
			t.Fatalf("read the schema version: %v", err)
		}
		return v
	}

	// Concurrent first Opens migrate once, under the advisory lock.
	const n = 6
	errs := make([]error, n)
	stores := make([]*postgres.Store, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(ctx, testURL, &postgres.Options{Schema: schema, MaxConns: 2})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open #%d: %v", i, err)
		}
		stores[i].Close()
	}
	if v := version(); v != postgres.SchemaVersion {
		t.Fatalf("schema version = %d, want %d", v, postgres.SchemaVersion)
	}

	s := openStore(t, schema)
	h, err := s.Put(ctx, []byte("kept across versions"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// A newer schema is refused, and left alone.
	if _, err := admin(t).Exec(ctx, "UPDATE "+pgx.Identifier{schema, "schema_version"}.Sanitize()+" SET version = $1", cas.LatestFormat+1); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, testURL, &postgres.Options{Schema: schema})
	if !errors.Is(err, cas.ErrFormat) {
		t.Fatalf("Open(a newer schema) error = %v, want one wrapping cas.ErrFormat", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(cas.LatestFormat+1)) {
		t.Errorf("error %q does not name the schema's version", err)
	}
	if v := version(); v != cas.LatestFormat+1 {
		t.Errorf("after a refused Open, version = %d, want it untouched (%d)", v, cas.LatestFormat+1)
	}

	// Back at the known version it opens with its data.
	if _, err := admin(t).Exec(ctx, "UPDATE "+pgx.Identifier{schema, "schema_version"}.Sanitize()+" SET version = $1", postgres.SchemaVersion); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, schema)
	if data, err := s.Get(ctx, h); err != nil || string(data) != "kept across versions" {
		t.Errorf("Get after reopening = %q, %v", data, err)
	}
}

// holderPID returns the server pids of the sessions that hold an advisory
// lock with the given key.
func holderPIDs(t *testing.T, key int64) []int32 {
	t.Helper()
	rows, err := admin(t).Query(t.Context(), `SELECT pid FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND ((classid::bigint << 32) | objid::bigint) = $1`, key)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

func TestLockGCAcrossStores(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	schema := freshSchema(t)
	a, b := openStore(t, schema), openStore(t, schema)
	other := newStore(t)

	unlockA, err := a.LockGC(ctx)
	if err != nil {
		t.Fatalf("a.LockGC: %v", err)
	}
	if u, err := b.LockGC(ctx); !errors.Is(err, cas.ErrLocked) {
		if err == nil {
			u()
		}
		t.Fatalf("b.LockGC while a holds it: %v, want ErrLocked", err)
	}
	u, err := other.LockGC(ctx)
	if err != nil {
		t.Fatalf("LockGC of another schema while a holds its own: %v", err)
	}
	u()
	unlockA()
	unlockB, err := b.LockGC(ctx)
	if err != nil {
		t.Fatalf("b.LockGC after a unlocked: %v", err)
	}
	unlockA() // stale: must not release b's hold
	if u, err := a.LockGC(ctx); !errors.Is(err, cas.ErrLocked) {
		if err == nil {
			u()
		}
		t.Fatalf("a.LockGC while b holds it: %v, want ErrLocked", err)
	}

	// The lock dies with its session, as with a killed process.
	var ended bool
	for _, pid := range holderPIDs(t, gcKey(schema)) {
		if err := admin(t).QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", pid).Scan(&ended); err != nil {
			t.Fatal(err)
		}
	}
	if !ended {
		t.Fatalf("found no session holding b's GC lock")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		u, err := a.LockGC(ctx)
		if err == nil {
			u()
			break
		}
		if !errors.Is(err, cas.ErrLocked) || time.Now().After(deadline) {
			t.Fatalf("a.LockGC after b's session ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	unlockB() // its connection is gone: must not panic or block
}

// gcKey and storeKey repeat the package's lock keys, to find holders in
// pg_locks.
func gcKey(schema string) int64 { return int64(cas.Sum([]byte("uwf\x00" + schema + "\x00gc\x00"))) }
func storeKey(schema string) int64 {
	return int64(cas.Sum([]byte("uwf\x00" + schema + "\x00store\x00")))
}

func TestLockAcrossStores(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	schema := freshSchema(t)
	a, b := openStore(t, schema), openStore(t, schema)
	tryLock := func(s *postgres.Store, exclusive bool, d time.Duration) func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		u, err := s.Lock(ctx, exclusive)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock(exclusive=%v): %v", exclusive, err)
			}
			return nil
		}
		return u
	}
	x := tryLock(a, true, time.Second)
	if x == nil {
		t.Fatal("a: exclusive lock not granted")
	}
	if u := tryLock(b, false, 100*time.Millisecond); u != nil {
		u()
		t.Fatal("b: shared lock granted while a holds it exclusively")
	}
	x()
	r := tryLock(b, false, time.Second)
	if r == nil {
		t.Fatal("b: shared lock not granted after a unlocked")
	}
	r2 := tryLock(a, false, time.Second)
	if r2 == nil {
		t.Fatal("a: shared lock not granted beside b's")
	}
	if u := tryLock(a, true, 100*time.Millisecond); u != nil {
		u()
		t.Fatal("a: exclusive lock granted while shared holders remain")
	}
	r()
	r2()

	// Writers on one store do not starve a GC on another.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				u, err := a.Lock(ctx, false)
				if err != nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
				u()
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	x = tryLock(b, true, 2*time.Second)
	close(stop)
	if x == nil {
		wg.Wait()
		t.Fatal("an exclusive request on one store was starved by shared holders on another")
	}
	x()
	wg.Wait()

	// A holder's lock dies with its session.
	s := tryLock(a, false, time.Second)
	if s == nil {
		t.Fatal("shared lock not granted")
	}
	for _, pid := range holderPIDs(t, storeKey(schema)) {
		if _, err := admin(t).Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", pid); err != nil {
			t.Fatal(err)
		}
	}
	if x := tryLock(b, true, 5*time.Second); x == nil {
		t.Fatal("exclusive lock not granted after the shared holder's session ended")
	} else {
		x()
	}
	s() // its connection is gone: must not panic or block
}

func TestConcurrentClashingCreates(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	schema := freshSchema(t)
	const nStores = 4
	stores := make([]*postgres.Store, nStores)
	for i := range stores {
		stores[i] = openStore(t, schema)
	}
	h := func(i int) cas.Hash { return cas.Hash(0xABC000 + i) }

	// Rounds of names that all clash with each other (one chain of
	// lower-case folders), created at once from every store: exactly one
	// wins each round.
	rounds := [][]string{
		{"k/a", "k/A", "K/a/b", "k/A/b/c", "k/a/B/c/d", "k/a/b/C/d/e"},
		{"x/Y/z", "X/y", "x/y/Z", "x/y/z/w", "X/Y/Z/W/V"},
		{"same", "SAME", "Same", "same/x"},
	}
	for _, names := range rounds {
		const each = 3
		errs := make([]error, len(names)*nStores*each)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() {
				<-start
				errs[i] = stores[i%nStores].Refs().CompareAndSwap(ctx, names[i%len(names)], 0, h(i), "create")
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for i, err := range errs {
			var ce *cas.ConflictError
			switch {
			case err == nil:
				wins++
			case !errors.As(err, &ce):
				t.Errorf("create %s: %v, want success or a *cas.ConflictError", names[i%len(names)], err)
			}
		}
		var live []cas.Ref
		prefix := strings.ToLower(names[0][:1])
		for _, p := range []string{prefix, strings.ToUpper(prefix)} {
			for ref, err := range stores[0].Refs().List(ctx, p) {
				if err != nil {
					t.Fatal(err)
				}
				live = append(live, ref)
			}
		}
		if wins != 1 || len(live) != 1 {
			t.Errorf("round %v: %d creators won and %v live, want exactly one", names, wins, live)
		}
	}

	// Unrelated names under one folder do not clash and all succeed.
	const n = 64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = stores[i%nStores].Refs().CompareAndSwap(ctx, fmt.Sprintf("threads/T%03d", i), 0, h(i), "create")
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("create threads/T%03d: %v", i, err)
		}
	}
	count := 0
	for _, err := range stores[1].Refs().List(ctx, "threads/") {
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	if count != n {
		t.Errorf("List(threads/) has %d refs, want %d", count, n)
	}
	// ... and a clashing name is refused whichever store asks.
	err := stores[3].Refs().CompareAndSwap(ctx, "Threads", 0, h(1), "create")
	var ce *cas.ConflictError
	if !errors.As(err, &ce) || ce.Clash != "threads/T000" {
		t.Errorf("create Threads: %v, want a clash with threads/T000", err)
	}
}

// TestMessages: log messages PostgreSQL text cannot hold are refused.
func TestMessages(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	r := newStore(t).Refs()
	for _, msg := range []string{"nul\x00byte", "bad \xff utf-8"} {
		if err := r.CompareAndSwap(ctx, "m", 0, 1, msg); !errors.Is(err, cas.ErrInvalid) {
			t.Errorf("CompareAndSwap(message %q) = %v, want ErrInvalid", msg, err)
		}
		if err := r.ImportLog(ctx, "m", []cas.LogEntry{{New: 1, Time: 1, Message: msg}}); !errors.Is(err, cas.ErrInvalid) {
			t.Errorf("ImportLog(message %q) = %v, want ErrInvalid", msg, err)
		}
	}
	if _, err := r.Get(ctx, "m"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Get after refused changes = %v, want ErrNotFound", err)
	}
}

// TestListPages lists more refs, objects and logs than one page holds.
func TestListPages(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	const n = 1100 // over a page
	data := make([][]byte, n)
	for i := range data {
		data[i] = fmt.Appendf(nil, "object %d", i)
	}
	if _, err := s.PutBatch(ctx, data); err != nil {
		t.Fatal(err)
	}
	seen := map[cas.Hash]bool{}
	for o, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[o.Hash] {
			t.Fatalf("All lists %s twice", o.Hash)
		}
		seen[o.Hash] = true
	}
	if len(seen) != n {
		t.Errorf("All lists %d objects, want %d", len(seen), n)
	}
	entries := make([]cas.LogEntry, 0, 1)
	for i := range n {
		name := fmt.Sprintf("p/%05d", i)
		entries = append(entries[:0], cas.LogEntry{New: cas.Hash(i + 1), Time: int64(i), Message: "imported"})
		if i%2 == 0 {
			entries = append(entries, cas.LogEntry{Old: cas.Hash(i + 1), Time: int64(i + 1), Message: "deleted"})
		}
		if err := s.Refs().ImportLog(ctx, name, entries); err != nil {
			t.Fatal(err)
		}
	}
	var prev string
	refs := 0
	for ref, err := range s.Refs().List(ctx, "p/") {
		if err != nil {
			t.Fatal(err)
		}
		if ref.Name <= prev {
			t.Fatalf("List: %s after %s", ref.Name, prev)
		}
		prev = ref.Name
		refs++
	}
	if refs != n/2 {
		t.Errorf("List(p/) = %d refs, want %d", refs, n/2)
	}
	logs := 0
	prev = ""
	for name, err := range s.Refs().Logs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if name <= prev {
			t.Fatalf("Logs: %s after %s", name, prev)
		}
		prev = name
		logs++
	}
	if logs != n {
		t.Errorf("Logs = %d names, want %d", logs, n)
	}
}

// TestCollision forces XXH64 collisions with a fake address function: a
// Put of other intact bytes at a taken address fails and changes nothing,
// in a batch too; corrupt bytes there are healed.
func TestCollision(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	postgres.SetHash(s, func(b []byte) cas.Hash {
		if strings.HasPrefix(string(b), "collide") {
			return 42
		}
		return cas.Sum(b)
	})
	if h, err := s.Put(ctx, []byte("collide A")); err != nil || h != 42 {
		t.Fatalf("Put(A) = %s, %v", h, err)
	}
	_, err := s.Put(ctx, []byte("collide B"))
	var oe *cas.ObjectError
	if !errors.Is(err, cas.ErrCollision) || !errors.As(err, &oe) || oe.Hash != 42 {
		t.Fatalf("Put(B at A's address) = %v, want an *ObjectError wrapping ErrCollision", err)
	}
	innocent := []byte("innocent")
	if _, err := s.PutBatch(ctx, [][]byte{innocent, []byte("collide B")}); !errors.Is(err, cas.ErrCollision) {
		t.Fatalf("PutBatch with a collision = %v, want ErrCollision", err)
	}
	if ok, _ := s.Has(ctx, cas.Sum(innocent)); ok {
		t.Errorf("a batch that failed stored some of its objects")
	}
	if data, err := s.Get(ctx, 42); err != nil || string(data) != "collide A" {
		t.Errorf("Get(42) = %q, %v; want A, untouched", data, err)
	}
	if _, err := s.PutBatch(ctx, [][]byte{innocent, []byte("collide A")}); err != nil {
		t.Errorf("PutBatch of present bytes: %v", err)
	}
	// Corrupt bytes at the address are replaced, by Put and by PutBatch.
	c := corruptible{s, t}
	c.Corrupt(42, []byte("garbage"))
	if _, err := s.Put(ctx, []byte("collide B")); err != nil {
		t.Fatalf("Put(B over corrupt bytes): %v", err)
	}
	if data, err := s.Get(ctx, 42); err != nil || string(data) != "collide B" {
		t.Errorf("Get(42) after healing = %q, %v; want B", data, err)
	}
	c.Corrupt(42, []byte("garbage"))
	if _, err := s.PutBatch(ctx, [][]byte{[]byte("collide A")}); err != nil {
		t.Fatalf("PutBatch(A over corrupt bytes): %v", err)
	}
	if data, err := s.Get(ctx, 42); err != nil || string(data) != "collide A" {
		t.Errorf("Get(42) after a healing batch = %q, %v; want A", data, err)
	}
}

// Reopen opens the schema again, as another process would.
func (d droppable) Reopen(t *testing.T) cas.Refs { return openStore(t, d.s.Schema()).Refs() }
