package cas_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/internal/v1build"
)

// backend is a store of one backend for the format tests, with a way to
// reopen it and its URL for the uwf command line.
type backend struct {
	name string
	url  string
	open func(t *testing.T) (cas.Store, cas.Refs, func())
}

func diskBackend(t *testing.T) backend {
	dir := filepath.Join(t.TempDir(), "store")
	return backend{name: "disk", url: dir, open: func(t *testing.T) (cas.Store, cas.Refs, func()) {
		t.Helper()
		st, err := disk.OpenOrCreate(dir, &disk.Options{Durability: disk.DurabilityNone})
		if err != nil {
			t.Fatal(err)
		}
		return st, st.Refs(), func() { st.Close() }
	}}
}

// postgresBackend returns a backend in a fresh SQL schema, dropped when the
// test ends, or skips without UWF_TEST_POSTGRES (fails under CI=true).
func postgresBackend(t *testing.T) backend {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, "uwf_fmt_")
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return backend{name: "postgres", url: url + sep + "schema=" + schema, open: func(t *testing.T) (cas.Store, cas.Refs, func()) {
		t.Helper()
		st, err := postgres.Open(t.Context(), url, &postgres.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		return st, st.Refs(), st.Close
	}}
}

// backends are the backends with a format version on disk or in a server.
var backends = []struct {
	name string
	make func(*testing.T) backend
}{{"disk", diskBackend}, {"postgres", postgresBackend}}

// bumpedStore writes a content node to a new store of b, then a node of
// the version-2 kind, checking the version before and after.
func bumpedStore(t *testing.T, b backend, kind cas.Hash) {
	t.Helper()
	ctx := t.Context()
	st, refs, closeStore := b.open(t)
	defer closeStore()
	repo, err := cas.Open(ctx, st, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := repo.Put(ctx, cas.ContentSchema, "x")
	if err != nil {
		t.Fatal(err)
	}
	if v := version(t, repo); v != cas.FormatV1 {
		t.Fatalf("new store at version %d, want 1", v)
	}
	if _, err := repo.Put(ctx, kind, map[string]any{"note": "n", "of": x.String()}); err != nil {
		t.Fatalf("Put of a version-2 node: %v", err)
	}
	if v := version(t, repo); v != cas.FormatV2 {
		t.Fatalf("version = %d after a version-2 node, want 2", v)
	}
}

// TestBumpOnBackends: a version-1 store of each backend moves to version 2
// at the first node of a version-2 kind, and a later Open accepts it, fscks
// it clean and writes nothing.
func TestBumpOnBackends(t *testing.T) {
	kind := cas.AddTestKind(t, "test-kind", testKind)
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := be.make(t)
			ctx := t.Context()
			bumpedStore(t, b, kind)
			st, refs, closeStore := b.open(t)
			defer closeStore()
			before := takeSnapshot(t, st, refs)
			repo, err := cas.Open(ctx, st, refs, nil)
			if err != nil {
				t.Fatalf("Open of a version-2 store: %v", err)
			}
			if d := before.diff(takeSnapshot(t, st, refs)); d != "" {
				t.Errorf("Open of a version-2 store changed it: %s", d)
			}
			if rep, err := repo.Fsck(ctx, nil); err != nil || !rep.OK() {
				t.Errorf("fsck of the version-2 store: %v %v", err, rep)
			}
			if h, err := refs.Get(ctx, "schemas/test-kind"); err != nil || h != kind {
				t.Errorf("schemas/test-kind = %v, %v; want %v", h, err, kind)
			}
		})
	}
}

// TestV1BinaryRefusesV2: the version-1 binary, built from commit fe9658e,
// refuses a store bumped to version 2 at Open with a clear message and
// exit 1, and leaves it as it was.
func TestV1BinaryRefusesV2(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build of the version-1 binary")
	}
	kind := cas.AddTestKind(t, "test-kind", testKind)
	v1 := v1build.Binary(t)
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := be.make(t)
			bumpedStore(t, b, kind)
			st, refs, closeStore := b.open(t)
			defer closeStore()
			before := takeSnapshot(t, st, refs)
			cmd := exec.Command(v1, "--home", t.TempDir(), "--store", b.url, "thread", "list")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("the version-1 binary on a version-2 store: %v (stdout %q, stderr %q), want exit 1", err, stdout.String(), stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, "unsupported store format") || !strings.Contains(msg, "2") || stdout.Len() != 0 {
				t.Errorf("the version-1 binary printed %q and said %q; want only a refusal of the format naming version 2", stdout.String(), msg)
			}
			if d := before.diff(takeSnapshot(t, st, refs)); d != "" {
				t.Errorf("the version-1 binary changed the store: %s", d)
			}
			if v, err := refs.(cas.FormatVersioner).FormatVersion(t.Context()); err != nil || v != cas.FormatV2 {
				t.Errorf("version = %d, %v after the version-1 binary, want 2", v, err)
			}
		})
	}
}

// TestBumpConflictOnDisk: on disk, the bump's check runs under the refs
// lock, so a user schema named meanwhile with a newly reserved name (as a
// version-1 binary could) makes it fail rather than be lost.
func TestBumpConflictOnDisk(t *testing.T) {
	b := diskBackend(t)
	ctx := t.Context()
	st, refs, closeStore := b.open(t)
	defer closeStore()
	if _, err := cas.Open(ctx, st, refs, nil); err != nil {
		t.Fatal(err)
	}
	fv := refs.(cas.FormatVersioner)
	err := fv.BumpFormat(ctx, 1, 2, map[string]cas.Hash{"schemas/content": cas.StepSchema})
	var ce *cas.ConflictError
	if !errors.As(err, &ce) || ce.Name != "schemas/content" || ce.Current != cas.ContentSchema {
		t.Fatalf("BumpFormat with a ref that holds something else = %v, want a ConflictError", err)
	}
	if v, _ := fv.FormatVersion(ctx); v != 1 {
		t.Errorf("version after a failed bump = %d, want 1", v)
	}
	if err := fv.BumpFormat(ctx, 1, 2, map[string]cas.Hash{"schemas/content": cas.ContentSchema}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(b.url, "FORMAT"))
	if want := "uwf store 2\nbackend disk\nhash xxh64\n"; string(got) != want {
		t.Errorf("FORMAT = %q, want %q", got, want)
	}
	if err := fv.BumpFormat(ctx, 1, 2, nil); err != nil {
		t.Errorf("a bump already done = %v, want nil", err)
	}
	if err := fv.BumpFormat(ctx, 3, 4, nil); !errors.Is(err, cas.ErrFormat) {
		t.Errorf("a bump from a version the store is not at = %v, want ErrFormat", err)
	}
}

// TestConcurrentBump: writers of a version-2 kind racing on one store (each
// with a Repo of its own, as processes have) all succeed, and the store
// moves once: one log entry for the new built-in's ref.
func TestConcurrentBump(t *testing.T) {
	kind := cas.AddTestKind(t, "test-kind", testKind)
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := be.make(t)
			ctx := t.Context()
			st, refs, closeStore := b.open(t)
			defer closeStore()
			if _, err := cas.Open(ctx, st, refs, nil); err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 8)
			for i := range 8 {
				go func() {
					repo, err := cas.Open(ctx, st, refs, nil)
					if err == nil {
						_, err = repo.Put(ctx, kind, map[string]any{"note": fmt.Sprint(i)})
					}
					errs <- err
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			if v, err := refs.(cas.FormatVersioner).FormatVersion(ctx); err != nil || v != cas.FormatV2 {
				t.Errorf("version = %d, %v; want 2", v, err)
			}
			if log, err := refs.Log(ctx, "schemas/test-kind"); err != nil || len(log) != 1 {
				t.Errorf("log of schemas/test-kind = %v, %v; want one entry", log, err)
			}
		})
	}
}
