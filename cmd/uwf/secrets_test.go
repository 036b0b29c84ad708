package main

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/internal/secret"
)

// Secrets of TestSecretsNeverLand: each comes from another source.
const (
	leakDotenvKey = "dotenv-api-key-0123"   // .env, a name with KEY
	leakMarked    = "marked-in-config-4567" // .env, a plain name listed under secrets:
	leakProvider  = "sk-provider-key-89ab"  // the environment, named by a provider's apiKeyEnv
	leakEnvToken  = "env-token-value-cdef"  // the environment, a name with TOKEN
	leakAgentPass = "agent-env-pass-0000"   // an agent's env, a name with PASSWORD
	leakShort     = "short77"               // .env, a name with KEY, but 7 bytes: not masked
	leakStorePass = "store-pass-word-1111"  // the store URL's password (PostgreSQL only)
)

// TestSecretsNeverLand runs the review loop with an agent that prints its
// whole environment to stderr and stdout and fails once with a secret as
// its last stderr line. No known secret may be in any object of the store,
// any ref log message, anything uwf printed or any log line; the 7-byte
// secret is not masked, as documented.
func TestSecretsNeverLand(t *testing.T) {
	t.Run("disk", func(t *testing.T) {
		e := newEnv(t)
		testSecretsNeverLand(t, e, "", nil)
	})
	t.Run("postgres", func(t *testing.T) {
		base := pgtest.URL(t)
		e := newEnv(t)
		store, pass := storeWithPassword(t, freshSchema(base))
		t.Setenv("UWF_STORE", store)
		testSecretsNeverLand(t, e, store, []string{pass})
	})
}

// storeWithPassword returns url with a password: its own if it has one,
// else leakStorePass (the test server trusts its users, so any password
// connects).
func storeWithPassword(t *testing.T, raw string) (string, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := u.User.Password(); ok && len(p) >= 8 {
		return raw, p
	}
	u.User = url.UserPassword(u.User.Username(), leakStorePass)
	return u.String(), leakStorePass
}

func testSecretsNeverLand(t *testing.T, e *env, store string, extra []string) {
	bin := buildTestAgent(t)
	log := t.TempDir()
	t.Setenv("LLM_VAR", leakProvider)
	t.Setenv("CI_DEPLOY_TOKEN", leakEnvToken)
	t.Setenv("LEAK_FATAL", leakDotenvKey)
	e.writeConfig("agents:\n  leaky:\n    command: " + bin + "\n    env: {AGENT_LOG: " + log + ", AGENT_LEAK: '1', DEPLOY_PASSWORD: " + leakAgentPass + "}\n" +
		"defaultAgent: leaky\nproviders:\n  p: {baseURL: 'https://llm.invalid/v1', apiKeyEnv: LLM_VAR}\nsecrets: [PLAIN]\n")
	if err := os.WriteFile(filepath.Join(e.home, ".env"), []byte("MY_API_KEY="+leakDotenvKey+"\nPLAIN="+leakMarked+"\nSHORT_KEY="+leakShort+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.write("review-loop.yaml", reviewLoop)
	secrets := append([]string{leakDotenvKey, leakMarked, leakProvider, leakEnvToken, leakAgentPass}, extra...)
	var printed strings.Builder
	run := func(wantCode int, args ...string) result {
		t.Helper()
		r := e.run("", append([]string{"--log-level", "debug"}, args...)...)
		if r.code != wantCode {
			t.Fatalf("uwf %q: %v\nwant exit %d", args, r, wantCode)
		}
		printed.WriteString(r.stdout + r.stderr)
		return r
	}

	// The first run fails with a secret on stderr; then the thread ends.
	r := run(1, "thread", "run", "review-loop.yaml", "-p", "Add a --json flag")
	if !strings.Contains(r.stderr, "(stderr: fatal: cannot go on with "+secretMask+")") {
		t.Errorf("the failed step's error does not show the masked stderr line:\n%s", r.stderr)
	}
	id := strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "thread ")
	run(0, "thread", "step", id, "-n", "0")
	if st, _ := e.status(id); st != "done" {
		t.Fatalf("thread %s: %s, want done", id, st)
	}
	run(0, "thread", "show", id)
	run(0, "--json", "thread", "show", id)
	run(0, "thread", "read", id)
	for _, row := range e.stepsOf(id)[1:] {
		if row[2] == "step" {
			r := run(0, "step", "show", row[1])
			if !strings.Contains(r.stdout, "\nmy environment:\n") || !strings.Contains(r.stdout, "DEPLOY_PASSWORD="+secretMask+"\n") {
				t.Errorf("step show %s: the agent's leaked environment is not there, masked:\n%s", row[1], r.stdout)
			}
			run(0, "--json", "step", "show", row[1])
		}
	}
	r = run(0, "cas", "ref", "list")
	failure := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[1], "failures/") {
			failure = f[0]
		}
	}
	if failure == "" {
		t.Fatalf("no failures/ ref in:\n%s", r.stdout)
	}
	run(0, "cas", "walk", "--tree", failure)

	check := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Errorf("%s holds the secret %q: ...%s...", what, s, text[max(0, i-80):min(len(text), i+80)])
			}
		}
	}
	check("uwf's output, errors and logs", printed.String())
	all := storeText(t, e, store)
	check("the store", all)
	// Masked where they were leaked; the 7-byte secret kept.
	for _, want := range []string{"MY_API_KEY=" + secretMask, "PLAIN=" + secretMask, "LLM_VAR=" + secretMask,
		"CI_DEPLOY_TOKEN=" + secretMask, "DEPLOY_PASSWORD=" + secretMask, "fatal: cannot go on with " + secretMask, "SHORT_KEY=" + leakShort} {
		if !strings.Contains(all, want) {
			t.Errorf("the store lacks %q", want)
		}
	}
	if store != "" && !strings.Contains(all, "UWF_STORE="+strings.Replace(store, extra[0], secretMask, 1)) {
		t.Errorf("the store lacks UWF_STORE with its password masked")
	}
}

// secretMask is what a masked secret reads as.
const secretMask = "********"

// storeText returns every object's bytes and every ref log's messages.
func storeText(t *testing.T, e *env, store string) string {
	t.Helper()
	ctx := t.Context()
	var st cas.Store
	var refs cas.Refs
	if store == "" {
		d, err := disk.OpenOrCreate(e.storeDir(), &disk.Options{Durability: mustDurability(t, "none")})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		st, refs = d, d.Refs()
	} else {
		p, err := postgres.Open(ctx, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		st, refs = p, p.Refs()
	}
	var b strings.Builder
	n := 0
	for o, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		data, err := st.Get(ctx, o.Hash)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
		n++
	}
	if n < 20 {
		t.Fatalf("only %d objects in the store", n)
	}
	for r, err := range refs.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		entries, err := refs.Log(ctx, r.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, le := range entries {
			b.WriteString(le.Message + "\n")
		}
	}
	return b.String()
}

// TestStoreURLRedacted: a store URL's password is never printed: not in
// the demo's store line, not in the error of a store that cannot be
// opened, not in debug logs, not in a usage error about the URL.
func TestStoreURLRedacted(t *testing.T) {
	e := newEnv(t)
	const pass = "hunter2hunter2"
	// Port 1 on the loopback: nothing listens, the connection is refused.
	bad := "postgres://uwf:" + pass + "@127.0.0.1:1/uwf?sslmode=disable&connect_timeout=2"
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		{[]string{"--home", e.home, "--store", bad, "demo"}, 1, "store: postgres://uwf:xxxxx@127.0.0.1:1/uwf?sslmode=disable&connect_timeout=2\n"},
		{[]string{"--log-level", "debug", "--store", bad, "thread", "list"}, 1, "open store postgres://uwf:xxxxx@127.0.0.1:1/uwf"},
		{[]string{"--store", "postgress://uwf:" + pass + "@h/db", "thread", "list"}, 2, `invalid store URL "postgress://uwf:xxxxx@h/db": unknown scheme "postgress"`},
		{[]string{"--store", "file:///tmp/x?password=" + pass, "thread", "list"}, 2, `invalid store URL "file:///tmp/x?password=xxxxx"`},
	} {
		r := e.run("", tc.args...)
		out := r.stdout + r.stderr
		if r.code != tc.code || strings.Contains(out, pass) || !strings.Contains(out, tc.want) {
			t.Errorf("uwf %q: %v\nwant exit %d, %q and no password", tc.args, r, tc.code, tc.want)
		}
	}
}

// TestWarningsMasked: a warning line (a thread skipped, fsck --repair's
// failure) masks the session's known secrets, as its logs and returned
// errors do.
func TestWarningsMasked(t *testing.T) {
	for _, tc := range []struct {
		name string
		mask *secret.Masker
		want string
	}{
		{"a known secret", secret.New(leakStorePass), "uwf: fsck --repair: dial postgres://uwf:" + secret.Mask + "@h/db: refused\n"},
		{"no masker", nil, "uwf: fsck --repair: dial postgres://uwf:" + leakStorePass + "@h/db: refused\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf strings.Builder
			s := &session{stderr: &buf, mask: tc.mask}
			s.warnf("fsck --repair: %v", errors.New("dial postgres://uwf:"+leakStorePass+"@h/db: refused"))
			if buf.String() != tc.want {
				t.Errorf("warnf wrote %q, want %q", buf.String(), tc.want)
			}
		})
	}
}
