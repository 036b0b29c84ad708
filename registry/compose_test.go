package registry_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
)

func TestParseComposeExamples(t *testing.T) {
	pr := mustParse(t, "parallel-review.yaml", example(t, "parallel-review.yaml"))
	if got := pr.Roles["plan"].Mode(); got != registry.ModeRace {
		t.Errorf("plan mode = %q, want race", got)
	}
	if got := pr.Roles["review"].Mode(); got != registry.ModeParallel {
		t.Errorf("review mode = %q, want parallel", got)
	}
	if got := pr.Roles["developer"].Mode(); got != "" {
		t.Errorf("developer mode = %q, want an agent role", got)
	}
	if got := pr.Statuses("review"); !slices.Equal(got, []string{"approved", "rejected"}) {
		t.Errorf("review statuses = %v", got)
	}
	if got := pr.Statuses("plan"); !slices.Equal(got, []string{"planned"}) {
		t.Errorf("plan statuses = %v", got)
	}
	if r := pr.Roles["review"]; r.Concurrency != 2 || r.Timeout != 30*time.Minute || len(r.Join) != 2 {
		t.Errorf("review = %+v", r)
	}
	if !pr.Composes() {
		t.Error("parallel-review does not compose")
	}
	si := mustParse(t, "solve-issue.yaml", example(t, "solve-issue.yaml"))
	if r := si.Roles["developer"]; r.Mode() != registry.ModeChild || r.Workflow != "develop" {
		t.Errorf("developer = %+v", r)
	}
	if dev := mustParse(t, "develop.yaml", example(t, "develop.yaml")); dev.Composes() {
		t.Error("develop composes")
	}
}

func TestParseComposeInvalid(t *testing.T) {
	const head = "name: w\nroles:\n  a: { frontmatter: { properties: { status: { const: ok } } } }\n  b: { frontmatter: { properties: { status: { enum: [ok, no] } } } }\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"stage with one member", head + "  s: { parallel: [a] }\ngraph:\n  $START: { new: { role: s } }\n  s: { ok: { role: $END } }\n",
			"roles.s.parallel: a stage runs at least two roles"},
		{"unknown member", head + "  s: { race: [a, zz] }\ngraph:\n  $START: { new: { role: s } }\n  s: { ok: { role: $END } }\n",
			`roles.s.race: unknown role "zz"`},
		{"stage of stages", head + "  s: { race: [a, b] }\n  t: { parallel: [s, a] }\ngraph:\n  $START: { new: { role: t } }\n  t: { ok: { role: $END } }\n  s: { ok: { role: $END }, no: { role: $END } }\n",
			`roles.t.parallel: role "s" is a stage`},
		{"both workflow and race", head + "  s: { race: [a, b], workflow: x, frontmatter: { properties: { status: { const: ok } } } }\ngraph:\n  $START: { new: { role: s } }\n  s: { ok: { role: $END } }\n",
			"roles.s: a role is run by an agent, by a workflow (workflow), or is a stage (parallel, race or each)"},
		{"stage frontmatter", head + "  s: { race: [a, b], frontmatter: { properties: { status: { const: ok } } } }\ngraph:\n  $START: { new: { role: s } }\n  s: { ok: { role: $END } }\n",
			"roles.s.frontmatter: a stage's output is derived"},
		{"timeout on an agent role", "name: w\nroles:\n  a: { timeout: 1m, frontmatter: { properties: { status: { const: ok } } } }\ngraph:\n  $START: { new: { role: a } }\n  a: { ok: { role: $END } }\n",
			"roles.a.timeout: only a stage (parallel or race) has timeout"},
		{"bad timeout", head + "  s: { race: [a, b], timeout: soon }\ngraph:\n  $START: { new: { role: s } }\n  s: { ok: { role: $END }, no: { role: $END } }\n",
			`roles.s.timeout: must be a duration of at least 1ms ("90s", "10m"), not "soon"`},
		{"join rule on unknown status", head + "  s: { parallel: [a, b], join: [{ status: good, all: great }] }\ngraph:\n  $START: { new: { role: s } }\n  s: { good: { role: $END } }\n",
			`roles.s.join[0]: no member of the stage outputs status "great"`},
		{"join graph keys", head + "  s: { parallel: [a, b], join: [{ status: good, all: ok }, { status: bad }] }\ngraph:\n  $START: { new: { role: s } }\n  s: { good: { role: $END } }\n",
			`graph.s: missing status "bad"`},
		{"version without workflow", "name: w\nroles:\n  a: { version: 218DS5RX2WHPC, frontmatter: { properties: { status: { const: ok } } } }\ngraph:\n  $START: { new: { role: a } }\n  a: { ok: { role: $END } }\n",
			"roles.a.version: pins the version of a workflow: give workflow too"},
		{"each of an unknown role", head + "  s: { each: { role: zz, over: items } }\ngraph:\n  $START: { new: { role: a } }\n  a: { ok: { role: s } }\n  s: { ok: { role: $END }, no: { role: $END } }\n",
			`roles.s.each: unknown role "zz"`},
		{"each without over", head + "  s: { each: { role: b } }\ngraph:\n  $START: { new: { role: a } }\n  a: { ok: { role: s } }\n  s: { ok: { role: $END }, no: { role: $END } }\n",
			"roles.s.each.over: name the field of the routed output that holds the list"},
		{"each and parallel", head + "  s: { each: { role: b, over: x }, parallel: [a, b] }\ngraph:\n  $START: { new: { role: a } }\n  a: { ok: { role: s } }\n  s: { ok: { role: $END }, no: { role: $END } }\n",
			"not more than one of these"},
		{"unknown join key", head + "  s: { parallel: [a, b], join: [{ status: ok, most: ok }] }\ngraph:\n  $START: { new: { role: s } }\n  s: { ok: { role: $END }, no: { role: $END } }\n",
			`roles.s.join[0]: unknown key "most"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse("w.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error:\n%v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPutComposingMovesToVersionTwo(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	reg := registry.New(repo)
	si := mustParse(t, "solve-issue.yaml", example(t, "solve-issue.yaml"))
	// The child workflow must be registered first.
	if _, err := reg.Put(ctx, si); err == nil || !strings.Contains(err.Error(), "roles.developer.workflow: workflow develop") || !errors.Is(err, cas.ErrInvalid) {
		t.Fatalf("Put without develop = %v", err)
	}
	if _, err := reg.Put(ctx, mustParse(t, "develop.yaml", example(t, "develop.yaml"))); err != nil {
		t.Fatal(err)
	}
	if v, err := repo.FormatVersion(ctx); err != nil || v != 1 {
		t.Fatalf("after a plain workflow: version %d, %v; want 1", v, err)
	}
	res, err := reg.Put(ctx, si)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := repo.FormatVersion(ctx); err != nil || v != 2 {
		t.Fatalf("after a composing workflow: version %d, %v; want 2", v, err)
	}
	n, err := repo.Get(ctx, res.Hash)
	if err != nil || n.Type != cas.Workflow2Schema {
		t.Fatalf("stored as %v, %v; want workflow2", n.Type, err)
	}
	back, err := reg.Load(ctx, res.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if r := back.Roles["developer"]; r.Mode() != registry.ModeChild || r.Workflow != "develop" {
		t.Errorf("loaded developer = %+v", r)
	}
	pr := mustParse(t, "parallel-review.yaml", example(t, "parallel-review.yaml"))
	res, err = reg.Put(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	back, err = reg.Load(ctx, res.Hash)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range pr.RoleNames() {
		a, b := pr.Roles[name], back.Roles[name]
		if a.Mode() != b.Mode() || !slices.Equal(a.Members(), b.Members()) || a.Timeout != b.Timeout ||
			a.Concurrency != b.Concurrency || !slices.Equal(a.Join, b.Join) {
			t.Errorf("role %s: put %+v, loaded %+v", name, a, b)
		}
	}
	if got := back.Statuses("review"); !slices.Equal(got, []string{"approved", "rejected"}) {
		t.Errorf("loaded review statuses = %v", got)
	}
	// A pinned version that is another workflow is refused.
	bad := mustParse(t, "solve-issue.yaml", example(t, "solve-issue.yaml"))
	bad.Roles["developer"].Version = res.Hash
	if _, err := reg.Put(ctx, bad); err == nil || !strings.Contains(err.Error(), "that node is workflow parallel-review") {
		t.Errorf("Put with a pinned version of another workflow = %v", err)
	}
}

func TestParseEach(t *testing.T) {
	const text = "name: w\nroles:\n  a: { frontmatter: { properties: { status: { const: ok }, items: { type: array } } } }\n" +
		"  b: { frontmatter: { properties: { status: { enum: [ok, no] }, note: { type: string } } } }\n" +
		"  s: { each: { role: b, over: items }, concurrency: 4 }\n" +
		"graph:\n  $START: { new: { role: a } }\n  a: { ok: { role: s } }\n  s: { ok: { role: $END, prompt: \"{{ branches }}\" }, no: { role: $END } }\n"
	w, err := registry.Parse("w.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r := w.Roles["s"]
	if r.Mode() != registry.ModeParallel || !slices.Equal(r.Members(), []string{"b"}) || r.Each.Over != "items" {
		t.Errorf("s = %+v", r)
	}
	if got := w.Statuses("s"); !slices.Equal(got, []string{"no", "ok"}) {
		t.Errorf("statuses = %v", got)
	}
	reg := registry.New(newRepo(t))
	res, err := reg.Put(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	back, err := reg.Load(context.Background(), res.Hash)
	if err != nil || back.Roles["s"].Each == nil || *back.Roles["s"].Each != *r.Each {
		t.Errorf("loaded s = %+v, %v", back.Roles["s"], err)
	}
}

func TestJoinStatus(t *testing.T) {
	rules := []registry.JoinRule{{Status: "approved", All: "approved"}, {Status: "rejected"}}
	tests := []struct {
		name     string
		role     registry.Role
		statuses []string
		winner   string
		want     string
		err      string
	}{
		{"all approved", registry.Role{Parallel: []string{"a", "b"}, Join: rules}, []string{"approved", "approved"}, "", "approved", ""},
		{"one rejected", registry.Role{Parallel: []string{"a", "b"}, Join: rules}, []string{"approved", "rejected"}, "", "rejected", ""},
		{"one cancelled", registry.Role{Parallel: []string{"a", "b"}, Join: rules}, []string{"approved", ""}, "", "rejected", ""},
		{"any", registry.Role{Parallel: []string{"a", "b"}, Join: []registry.JoinRule{{Status: "hit", Any: "x"}}}, []string{"y", "x"}, "", "hit", ""},
		{"no rule matches", registry.Role{Parallel: []string{"a", "b"}, Join: []registry.JoinRule{{Status: "hit", Any: "x"}}}, []string{"y", "y"}, "", "", "no join rule matches"},
		{"race winner", registry.Role{Race: []string{"a", "b"}}, []string{"", "planned"}, "planned", "planned", ""},
		{"parallel agree", registry.Role{Parallel: []string{"a", "b"}}, []string{"done", "done"}, "", "done", ""},
		{"parallel differ", registry.Role{Parallel: []string{"a", "b"}}, []string{"done", "other"}, "", "", "different statuses"},
		{"none finished", registry.Role{Parallel: []string{"a", "b"}}, []string{"", ""}, "", "", "no branch finished"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.role.JoinStatus(tc.statuses, tc.winner)
			if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("JoinStatus = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}
