package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/pgtest"
)

// TestDamagedBuiltinsPostgres is the built-in part of TestDamage on a
// PostgreSQL store, damaged behind uwf's back with SQL: a built-in ref
// moved to an absent node, another deleted, a built-in object's bytes
// overwritten, another's row deleted. fsck reports each once and exits 1;
// threads and workflows work meanwhile; GC deletes nothing; fsck --repair
// puts them back, then GC collects what no ref reaches and fsck is clean. (A PostgreSQL ref row
// cannot be unreadable: its hash is a non-zero bigint.)
func TestDamagedBuiltinsPostgres(t *testing.T) {
	base := pgtest.URL(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to UWF_TEST_POSTGRES: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	schema := pgtest.Schema(t, "uwf_damage_")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	e := newEnv(t)
	t.Setenv("UWF_STORE", base+sep+"schema="+schema)
	exec := func(sql string, args ...any) {
		t.Helper()
		tag, err := conn.Exec(ctx, strings.ReplaceAll(sql, "{{S}}", pgx.Identifier{schema}.Sanitize()), args...)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v, %d rows", sql, err, tag.RowsAffected())
		}
	}
	countObjects := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "objects"}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	e.write("review-loop.yaml", reviewLoop)
	out := e.ok("", "thread", "run", "review-loop.yaml", "-p", "task 0", "--agent", "synth", "--cwd", "/")
	done := strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "thread ")
	orphan := e.okHash("", "cas", "put-text", "no ref reaches this")
	absent := cas.Sum([]byte("absent"))
	exec("UPDATE {{S}}.refs SET hash = $1 WHERE name = 'schemas/workflow'", pgHash(absent))
	exec("DELETE FROM {{S}}.refs WHERE name = 'schemas/step'")
	exec("UPDATE {{S}}.objects SET data = 'garbage'::bytea WHERE hash = $1", pgHash(cas.StartSchema))
	exec("DELETE FROM {{S}}.objects WHERE hash = $1", pgHash(cas.MarkSchema))

	r := e.run("", "cas", "fsck")
	if r.code != 1 || !strings.HasSuffix(r.stdout, ": 4 problems\n") {
		t.Errorf("fsck of damaged built-ins: %v, want exit 1 and 4 problems", r)
	}
	for _, want := range []string{
		"ref schemas/workflow -> " + absent.String() + ": builtin: the ref of the built-in schema workflow must point at " + cas.WorkflowSchema.String(),
		"ref schemas/step: builtin: the ref of the built-in schema step is missing",
		cas.StartSchema.String() + ": builtin: the built-in schema start is corrupt: ",
		cas.MarkSchema.String() + ": builtin: the built-in schema mark is not in the store",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fsck does not say %q:\n%s", want, r.stdout)
		}
	}

	// Meanwhile threads and workflows work.
	e.clock.Advance(time.Second)
	fresh := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "task 1", "--cwd", "/"))
	e.ok("", "thread", "step", fresh, "--agent", "synth")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"thread", "show", done}, "done"},
		{[]string{"thread", "read", fresh}, "task 1"},
		{[]string{"thread", "list"}, fresh},
		{[]string{"workflow", "list"}, "review-loop "},
	} {
		if out := e.ok("", tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("uwf %q with damaged built-ins printed:\n%s\nwant %q in it", tc.args, out, tc.want)
		}
	}

	// GC deletes nothing while a built-in ref points at an absent node:
	// not even the orphan.
	before := countObjects()
	e.clock.Advance(time.Hour)
	if r := e.run("", "cas", "gc", "--grace", "1ms"); r.code == 0 || !strings.Contains(r.stderr, "nothing deleted") {
		t.Errorf("gc with damaged built-ins: %v, want a refusal", r)
	}
	if got := countObjects(); got != before {
		t.Errorf("gc deleted %d objects from a damaged store", before-got)
	}

	r = e.run("", "cas", "fsck", "--repair")
	want := "repaired ref schemas/workflow -> " + cas.WorkflowSchema.String() + ": moved the ref of the built-in schema workflow back from " + absent.String() + "\n" +
		"repaired " + cas.StartSchema.String() + ": put back the built-in schema start\n" +
		"repaired ref schemas/step -> " + cas.StepSchema.String() + ": created the ref of the built-in schema step\n" +
		"repaired " + cas.MarkSchema.String() + ": put back the built-in schema mark\n"
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, ": 0 problems\n") {
		t.Errorf("fsck --repair: %v\nwant exit 0, first:\n%s", r, want)
	}
	// Repaired, GC collects the orphan, and the store stays clean.
	e.clock.Advance(time.Hour)
	e.ok("", "cas", "gc", "--grace", "1ms")
	if got := e.run("", "cas", "has", orphan.String()).stdout; got != "no\n" {
		t.Errorf("after gc, has %s = %q, want no", orphan, got)
	}
	for _, id := range []string{done, fresh} {
		e.ok("", "thread", "steps", id)
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck after the repair and gc: %q", out)
	}
}

// pgHash is h as the PostgreSQL store keeps it: its bits in a bigint.
func pgHash(h cas.Hash) int64 { return int64(h) }
