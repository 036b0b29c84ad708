package postgres

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// nowMS is the server's clock in Unix milliseconds, rounded down: the time
// of a ref-log entry.
const nowMS = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

// moveAnchor is the compare-and-swap condition of the move statement,
// after which moveGuard goes to make the step's guarded move.
const (
	moveAnchor = `WHERE name = $1::text AND hash = $2::bigint`
	moveGuard  = ` AND EXISTS (SELECT 1 FROM {{S}}.objects WHERE hash = $3::bigint)`
)

// queries holds the SQL statements of one schema, with its quoted name in
// place.
type queries struct {
	schema string // quoted

	// objects
	get, has, touch, deleteIfOlder, now   string
	put, putMany, lockObject, healObject  string
	allFirst, allNext                     string
	listFirst, listNext, logsFirst        string
	logsNext, getRef, getRefForUpdate     string
	move, del, create, clash, readLog     string
	lockShared, lockExclusive, deleteLogs string
	pruneLog, insertRef                   string
	lastLogged, insertLog, setRef, delRef string

	// watch (watch.go)
	watchRead, watchReadBare, watchBarrier   string
	watchTop, watchTrim, watchNotify         string
	watchHead, watchHeadBare                 string
	importRows, deleteLogsTrim, deleteNewest string
	lockSharedXact, touchMany, putLinked     string
	moveIfPresent, deleteIfOlderMany         string
	getMany                                  string
	hasMany                                  string
	readBatch, getRefNodes, moveLinked       string
	putDerivedMany                           string
}

func newQueries(schema string) queries {
	q := queries{schema: pgx.Identifier{schema}.Sanitize()}
	// w is the watch step of every statement that appends a log row
	// (watch.go): the watch lock, shared.
	w := func(from string) string { return watchStep(schema, from) }
	q.get = q.expand(`SELECT data FROM {{S}}.objects WHERE hash = $1`)
	q.getMany = q.expand(`SELECT hash, data FROM {{S}}.objects WHERE hash = ANY ($1::bigint[])`)
	q.readBatch = q.expand(`SELECT hash, NULL::text, data FROM {{S}}.objects WHERE hash = ANY ($1::bigint[])
		UNION ALL SELECT NULL::bigint, key, data FROM {{S}}.derived WHERE key = ANY ($2::text[])`)
	q.getRefNodes = q.expand(`SELECT r.name, r.hash, o.data FROM {{S}}.refs r
		LEFT JOIN {{S}}.objects o ON o.hash = r.hash WHERE r.name = ANY ($1::text[])`)
	q.has = q.expand(`SELECT EXISTS (SELECT 1 FROM {{S}}.objects WHERE hash = $1)`)
	q.hasMany = q.expand(`SELECT hash FROM {{S}}.objects WHERE hash = ANY ($1::bigint[])`)
	q.touch = q.expand(`UPDATE {{S}}.objects SET time = greatest(time, clock_timestamp()) WHERE hash = $1`)
	q.deleteIfOlder = q.expand(`DELETE FROM {{S}}.objects WHERE hash = $1 AND time < $2`)
	q.deleteIfOlderMany = q.expand(`DELETE FROM {{S}}.objects WHERE hash = ANY ($1::bigint[]) AND time < $2 RETURNING hash`)
	q.now = `SELECT clock_timestamp()`
	// Insert, or refresh the age of equal bytes already there. A conflict
	// whose bytes differ returns no row: the caller re-hashes them.
	q.put = q.expand(`INSERT INTO {{S}}.objects AS o (hash, data, size, time)
		VALUES ($1, $2::bytea, octet_length($2::bytea), clock_timestamp())
		ON CONFLICT (hash) DO UPDATE SET time = greatest(o.time, clock_timestamp())
		WHERE o.data = EXCLUDED.data
		RETURNING hash`)
	q.putMany = q.expand(`INSERT INTO {{S}}.objects AS o (hash, data, size, time)
		SELECT u.h, u.d, octet_length(u.d), clock_timestamp()
		FROM unnest($1::bigint[], $2::bytea[]) WITH ORDINALITY AS u(h, d, i)
		ORDER BY u.i
		ON CONFLICT (hash) DO UPDATE SET time = greatest(o.time, clock_timestamp())
		WHERE o.data = EXCLUDED.data
		RETURNING hash`)
	// A step's writes (see linked.go): the store-wide lock shared until
	// the commit; the edges' ages, returning those found; the objects,
	// only if every edge ($3) is there (the UPDATE before, in the same
	// transaction, holds their rows).
	q.lockSharedXact = `SELECT pg_advisory_xact_lock_shared($1::bigint)`
	// The fast paths leave alone an age refreshed within the last second
	// while no GC holds the GC lock ($2, $3: its key's halves): a GC that
	// begins later has its barrier after this transaction's commit, so it
	// needs no refresh, and one hot row (a schema, a workflow, an output
	// many threads share) is then written about once a second, not by
	// every step, whose row lock would queue every other step behind it
	// until its commit.
	gcRunning := `EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND classid = $2::bigint::oid AND objid = $3::bigint::oid AND objsubid = 1)`
	stale := `time < clock_timestamp() - interval '1 second'`
	q.touchMany = q.expand(`WITH gc AS MATERIALIZED (SELECT ` + gcRunning + ` AS running),
		t AS (UPDATE {{S}}.objects SET time = greatest(time, clock_timestamp())
			WHERE hash = ANY ($1::bigint[]) AND ((SELECT running FROM gc) OR ` + stale + `))
		SELECT hash FROM {{S}}.objects WHERE hash = ANY ($1::bigint[])`)
	q.putLinked = q.expand(`WITH gc AS MATERIALIZED (SELECT ` + gcRunning + ` AS running),
		u AS (SELECT * FROM unnest($4::bigint[], $5::bytea[]) WITH ORDINALITY AS u(h, d, i)),
		ok AS MATERIALIZED (SELECT (SELECT count(*) FROM {{S}}.objects WHERE hash = ANY ($1::bigint[])) = cardinality($1::bigint[]) AS ok),
		ins AS (INSERT INTO {{S}}.objects (hash, data, size, time)
			SELECT u.h, u.d, octet_length(u.d), clock_timestamp() FROM u WHERE (SELECT ok FROM ok)
			ORDER BY u.i
			ON CONFLICT (hash) DO NOTHING
			RETURNING hash),
		upd AS (UPDATE {{S}}.objects o SET time = greatest(o.time, clock_timestamp()) FROM u
			WHERE o.hash = u.h AND o.data = u.d AND (SELECT ok FROM ok)
				AND ((SELECT running FROM gc) OR o.` + stale + `))
		SELECT hash FROM ins
		UNION ALL
		SELECT o.hash FROM {{S}}.objects o JOIN u ON o.hash = u.h AND o.data = u.d WHERE (SELECT ok FROM ok)`)
	q.lockObject = q.expand(`SELECT data FROM {{S}}.objects WHERE hash = $1 FOR UPDATE`)
	q.healObject = q.expand(`UPDATE {{S}}.objects SET data = $2::bytea, size = octet_length($2::bytea), time = clock_timestamp()
		WHERE hash = $1`)
	q.allFirst = q.expand(`SELECT hash, size, time FROM {{S}}.objects ORDER BY hash LIMIT $1`)
	q.allNext = q.expand(`SELECT hash, size, time FROM {{S}}.objects WHERE hash > $2 ORDER BY hash LIMIT $1`)

	// refs
	q.getRef = q.expand(`SELECT hash FROM {{S}}.refs WHERE name = $1`)
	q.getRefForUpdate = q.expand(`SELECT hash FROM {{S}}.refs WHERE name = $1 FOR UPDATE`)
	q.listFirst = q.expand(`SELECT name, hash FROM {{S}}.refs WHERE name >= $2 AND name < $3 ORDER BY name LIMIT $1`)
	q.listNext = q.expand(`SELECT name, hash FROM {{S}}.refs WHERE name > $2 AND name < $3 ORDER BY name LIMIT $1`)
	q.logsFirst = q.expand(`SELECT DISTINCT name FROM {{S}}.ref_log ORDER BY name LIMIT $1`)
	q.logsNext = q.expand(`SELECT DISTINCT name FROM {{S}}.ref_log WHERE name > $2 ORDER BY name LIMIT $1`)
	// A move and a delete are compare-and-swaps on the row, each with its
	// log row in the same statement (one transaction). The log time is
	// read after the row lock is granted, so one ref's entries have
	// non-decreasing times in id order.
	q.move = q.expand(`WITH u AS (
			UPDATE {{S}}.refs SET hash = $3::bigint WHERE name = $1::text AND hash = $2::bigint RETURNING name
		), ` + w("u") + `
		INSERT INTO {{S}}.ref_log (name, old, new, time_ms, message)
		SELECT w.name, $2::bigint, $3::bigint, ` + nowMS + `, $4::text FROM w
		RETURNING id`)
	// The move of a step, after the UPDATE of $3's age in the same
	// transaction: the move, only if $3 is there. It is derived from
	// q.move so the two stay one statement; newQueries panics if the guard
	// finds no place (every test that opens a store then fails).
	q.moveIfPresent = strings.Replace(q.move, moveAnchor, moveAnchor+moveGuard, 1)
	if !strings.Contains(q.moveIfPresent, moveGuard) {
		panic("postgres: the move statement lost its compare-and-swap condition " + moveAnchor)
	}
	q.moveIfPresent = q.expand(q.moveIfPresent)
	// The move of a step whose objects the same transaction stored
	// (PutLinkedSwap): the move, only if they and their edges are there.
	q.moveLinked = q.expand(strings.Replace(q.move, moveAnchor, moveAnchor+moveLinkedGuard, 1))
	q.putDerivedMany = q.expand(`INSERT INTO {{S}}.derived (key, data)
		SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data`)
	q.del = q.expand(`WITH d AS (
			DELETE FROM {{S}}.refs WHERE name = $1::text AND hash = $2::bigint RETURNING name
		), ` + w("d") + `
		INSERT INTO {{S}}.ref_log (name, old, new, time_ms, message)
		SELECT w.name, $2::bigint, 0, ` + nowMS + `, $3::text FROM w
		RETURNING id`)
	q.create = q.expand(`WITH i AS (
			INSERT INTO {{S}}.refs (name, lower_name, hash) VALUES ($1::text, lower($1::text), $2::bigint)
			ON CONFLICT DO NOTHING
			RETURNING name
		), ` + w("i") + `
		INSERT INTO {{S}}.ref_log (name, old, new, time_ms, message)
		SELECT w.name, 0, $2::bigint, ` + nowMS + `, $3::text FROM w
		RETURNING id`)
	// The first live ref, in name order, whose name clashes with $1 (lower
	// case $2): the same in another case, a folder of it ($3: its lower-case
	// folders), or below it. '0' is the byte after '/'.
	q.clash = q.expand(`SELECT name FROM {{S}}.refs
		WHERE (lower_name = $2::text AND name <> $1::text)
		   OR lower_name = ANY ($3::text[])
		   OR (lower_name >= $2 || '/' AND lower_name < $2 || '0')
		ORDER BY name LIMIT 1`)
	q.readLog = q.expand(`SELECT old, new, time_ms, message FROM {{S}}.ref_log WHERE name = $1 ORDER BY id`)
	q.insertRef = q.expand(`INSERT INTO {{S}}.refs (name, lower_name, hash) VALUES ($1::text, lower($1::text), $2::bigint)`)
	q.deleteLogs = q.expand(`DELETE FROM {{S}}.ref_log WHERE name = $1`)
	// Replace: the newest logged value, and the unconditional row changes
	// with their log row.
	q.lastLogged = q.expand(`SELECT new FROM {{S}}.ref_log WHERE name = $1 ORDER BY id DESC LIMIT 1`)
	q.insertLog = q.expand(`WITH n AS (SELECT $1::text AS name), ` + w("n") + `
		INSERT INTO {{S}}.ref_log (name, old, new, time_ms, message)
		SELECT w.name, $2::bigint, $3::bigint, ` + nowMS + `, $4::text FROM w`)
	q.setRef = q.expand(`INSERT INTO {{S}}.refs (name, lower_name, hash) VALUES ($1::text, lower($1::text), $2::bigint)
		ON CONFLICT (name) DO UPDATE SET hash = EXCLUDED.hash`)
	q.delRef = q.expand(`DELETE FROM {{S}}.refs WHERE name = $1::text`)
	q.lockShared = `SELECT pg_advisory_xact_lock_shared(k) FROM unnest($1::bigint[]) AS k`
	q.lockExclusive = `SELECT pg_advisory_xact_lock($1::bigint)`
	// Prune in one statement: per name, its newest entry, its creation
	// entry (the last with a zero old) and its newest time; a live ref
	// keeps the first two whatever their age, a deleted ref's log goes
	// whole once its newest entry is old, and a missing ref's log (not
	// live, its newest entry has a non-zero new) is kept whole. A name's
	// cutoff (cut, in ms) is that of the longest prefix in $2 it starts
	// with ($3 in the same place; the first of equal ones), else $1.
	q.pruneLog = q.expand(`WITH s AS (
			SELECT l.name,
				max(l.id) AS newest,
				max(l.id) FILTER (WHERE l.old = 0) AS creation,
				EXISTS (SELECT 1 FROM {{S}}.refs r WHERE r.name = l.name) AS live,
				coalesce((SELECT p.cut FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS p(prefix, cut, i)
					WHERE left(l.name, length(p.prefix)) = p.prefix
					ORDER BY length(p.prefix) DESC, p.i LIMIT 1), $1::bigint) AS cut
			FROM {{S}}.ref_log l
			GROUP BY l.name
		), d AS (
			DELETE FROM {{S}}.ref_log l USING s, {{S}}.ref_log n
			WHERE l.name = s.name AND n.id = s.newest AND (s.live OR n.new = 0) AND (
				(NOT s.live AND n.time_ms < s.cut)
				OR (l.time_ms < s.cut AND NOT (s.live AND (l.id = s.newest OR l.id = s.creation)))
			)
			RETURNING l.id
		), ` + trimStep("d") + `
		SELECT count(*) FROM d`)
	q.watchQueries(schema, w)
	return q
}

// expand replaces {{S}} in stmt with the quoted schema name.
func (q queries) expand(stmt string) string { return strings.ReplaceAll(stmt, "{{S}}", q.schema) }
