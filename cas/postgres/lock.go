package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/uncaged/uwf/cas"
)

// unlockTimeout bounds an unlock statement; past it the connection is
// closed, which releases the lock all the same.
const unlockTimeout = 10 * time.Second

// Lock takes the store-wide lock, shared or exclusive, across every
// process using this schema: a session-level PostgreSQL advisory lock
// (pg_advisory_lock_shared or pg_advisory_lock) held on a connection that
// the holder keeps, out of the lock pool, until unlock. It waits until the
// lock is granted or ctx is done; then the error wraps ctx's error and no
// lock is held (the waiting statement is cancelled on the server and its
// connection closed, which ends the request even if it was granted at that
// moment).
//
// PostgreSQL queues lock requests: a waiting exclusive request holds back
// shared requests made after it, so a stream of overlapping shared holders
// cannot starve it. unlock is idempotent and releases only its own hold;
// if the holding process dies the server releases the lock.
func (s *Store) Lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lock store: %w", err)
	}
	c, err := s.locks.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock store: %w", ctxErr(ctx, err))
	}
	lock, release := "SELECT pg_advisory_lock_shared($1)", "SELECT pg_advisory_unlock_shared($1)"
	if exclusive {
		lock, release = "SELECT pg_advisory_lock($1)", "SELECT pg_advisory_unlock($1)"
	}
	_, err = c.Exec(ctx, lock, s.storeKey)
	if err == nil {
		err = ctx.Err() // granted as ctx ended: give it up
	}
	if err != nil {
		discard(c)
		return nil, fmt.Errorf("lock store: %w", ctxErr(ctx, err))
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
			defer cancel()
			var ok bool
			if err := c.QueryRow(ctx, release, s.storeKey).Scan(&ok); err != nil || !ok {
				s.log.Debug("unlock failed: closing the connection instead", "error", err)
				discard(c)
				return
			}
			c.Release()
		})
	}, nil
}

// discard closes a pooled connection and gives it back to the pool, which
// drops it. Closing the session releases its advisory locks.
func discard(c *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Conn().Close(ctx)
	c.Release()
}

// LockGC takes the lock that keeps two GCs of this schema from running at
// once, anywhere: pg_try_advisory_lock on a connection of its own (not a
// pooled one), held until unlock or until the holding process dies. It
// does not wait: if another GC holds it the error wraps [cas.ErrLocked].
// unlock is idempotent.
func (s *Store) LockGC(ctx context.Context) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lock gc: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, s.connCf.Copy())
	if err != nil {
		return nil, fmt.Errorf("lock gc: %w", ctxErr(ctx, err))
	}
	closeConn := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", s.gcKey).Scan(&ok); err != nil {
		closeConn()
		return nil, fmt.Errorf("lock gc: %w", ctxErr(ctx, err))
	}
	if !ok {
		closeConn()
		return nil, fmt.Errorf("lock gc: another GC of schema %s is running: %w", s.schema, cas.ErrLocked)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
			defer cancel()
			_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", s.gcKey)
			closeConn()
		})
	}, nil
}
