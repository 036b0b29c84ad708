package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/store"
)

func TestParse(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory: %v", err)
	}
	for _, tc := range []struct {
		in   string
		want store.Location
	}{
		{"/a/b", store.Location{Dir: "/a/b"}},
		{"rel/dir", store.Location{Dir: "rel/dir"}},
		{"/a/b?durability=none", store.Location{Dir: "/a/b", Durability: "none"}},
		{"/a/what?", store.Location{Dir: "/a/what?"}},
		{"/a/b?x=1", store.Location{Dir: "/a/b?x=1"}},
		{"a.b://c", store.Location{Dir: "a.b://c"}},
		{"file:///a/b", store.Location{Dir: "/a/b"}},
		{"file:///a/b?durability=strict", store.Location{Dir: "/a/b", Durability: "strict"}},
		{"file://localhost/a/b", store.Location{Dir: "/a/b"}},
		{"FILE:///a/b", store.Location{Dir: "/a/b"}},
		{"file:///a%20b", store.Location{Dir: "/a b"}},
		{"file://rel", store.Location{Dir: "rel"}},
		{"~", store.Location{Dir: home}},
		{"~/s?durability=none", store.Location{Dir: filepath.Join(home, "s"), Durability: "none"}},
		{"file://~/s", store.Location{Dir: filepath.Join(home, "s")}},
		{"~user/s", store.Location{Dir: "~user/s"}},
		{"postgres://u:p@h/db?sslmode=disable", store.Location{Postgres: "postgres://u:p@h/db?sslmode=disable"}},
		{"PostgreSQL://h/db", store.Location{Postgres: "PostgreSQL://h/db"}},
	} {
		got, err := store.Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", `invalid store URL "": empty`},
		{"file://", `invalid store URL "file://": no path`},
		{"?durability=none", `invalid store URL "?durability=none": no path`},
		{"s3://b/k", `invalid store URL "s3://b/k": unknown scheme "s3"`},
		{"postgress://u:hunter22@h/db", `invalid store URL "postgress://u:xxxxx@h/db": unknown scheme "postgress"`},
		{"file:///a?durability=none&durability=strict", `unknown or repeated parameter "durability"`},
		{"file:///a?foo=1", `invalid store URL "file:///a?foo=1": unknown or repeated parameter "foo"`},
		{"file:///a?password=hunter22", `invalid store URL "file:///a?password=xxxxx"`},
		{"file:///a%zz", `invalid store URL "file:///a%zz": invalid URL escape "%zz"`},
		{"/a?durability=maybe", `invalid store URL "/a?durability=maybe": invalid durability "maybe": want strict or none`},
		{"file:///a?durability=", `invalid durability ""`},
		{"postgres://u:hunter22@h/db?sslmode=disable&durability=none", `invalid store URL "postgres://u:xxxxx@h/db?sslmode=disable&durability=none": durability applies to disk stores only`},
	} {
		loc, err := store.Parse(tc.in)
		var ue *store.URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %+v, %v; want a *URLError containing %q", tc.in, loc, err, tc.want)
		}
		if strings.Contains(fmt.Sprint(err), "hunter22") {
			t.Errorf("Parse(%q): the error shows the password: %v", tc.in, err)
		}
	}
	_, err := store.Parse("/a?durability=maybe")
	var de *store.DurabilityError
	if !errors.As(err, &de) || de.Value != "maybe" {
		t.Errorf("Parse with a bad durability = %v, want it to wrap a *DurabilityError", err)
	}
}

// put stores a note and names it, to find it again in another opening.
func put(t *testing.T, repo *cas.Repo, text string) cas.Hash {
	t.Helper()
	h, err := repo.Put(t.Context(), cas.ContentSchema, text)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Refs().CompareAndSwap(t.Context(), "notes/"+text, 0, h, "create"); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestOpenDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "deep", "er", "store")
	for _, url := range []string{dir, "file://" + dir + "?durability=none", dir + "?durability=strict"} {
		t.Run(url, func(t *testing.T) {
			repo, release, err := store.Open(t.Context(), url, &store.Options{Durability: "none"})
			if err != nil {
				t.Fatalf("Open(%q): %v", url, err)
			}
			h := put(t, repo, fmt.Sprintf("n%d", len(url)))
			release()
			// The same URL finds the same store again.
			repo, release, err = store.Open(t.Context(), url, nil)
			if err != nil {
				t.Fatalf("Open(%q) again: %v", url, err)
			}
			defer release()
			if ok, err := repo.Store().Has(t.Context(), h); err != nil || !ok {
				t.Errorf("Has(%s) after reopening = %v, %v; want true", h, ok, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "FORMAT")); err != nil {
		t.Errorf("the store has no FORMAT file: %v", err)
	}
}

func TestOpenClock(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	repo, release, err := store.Open(t.Context(), t.TempDir()+"/s", &store.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	put(t, repo, "clock")
	log, err := repo.Refs().Log(t.Context(), "notes/clock")
	if err != nil || len(log) != 1 || log[0].Time != at.UnixMilli() {
		t.Errorf("Log = %+v, %v; want one entry at %v (Options.Now)", log, err, at)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		opts      *store.Options
		want      string
		check     func(error) bool
	}{
		{"bad URL", "s3://x", nil, `unknown scheme "s3"`, func(err error) bool { var e *store.URLError; return errors.As(err, &e) }},
		{"bad durability option", t.TempDir() + "/s", &store.Options{Durability: "sometimes"}, `invalid durability "sometimes"`,
			func(err error) bool { var e *store.DurabilityError; return errors.As(err, &e) }},
		{"parent is a file", filepath.Join(file, "s"), nil, "open store " + filepath.Join(file, "s"), func(err error) bool { return err != nil }},
		{"unknown format", t.TempDir(), nil, "open store", func(err error) bool { return errors.Is(err, cas.ErrFormat) }},
		{"postgres password", "postgres://u:hunter22@127.0.0.1:1/db?connect_timeout=1", nil, "open store postgres://u:xxxxx@127.0.0.1:1/db", func(err error) bool { return err != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "unknown format" {
				if err := os.WriteFile(filepath.Join(tc.url, "FORMAT"), []byte("uwf store 99\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			repo, release, err := store.Open(ctx, tc.url, tc.opts)
			if err == nil {
				release()
				t.Fatalf("Open(%q) = %v, want an error", tc.url, repo)
			}
			if !tc.check(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter22") {
				t.Errorf("Open(%q) = %v, want an error like %q", tc.url, err, tc.want)
			}
		})
	}
	// A bad durability option creates nothing.
	dir := filepath.Join(t.TempDir(), "none")
	if _, _, err := store.Open(ctx, dir, &store.Options{Durability: "x"}); err == nil {
		t.Fatal("Open with durability x succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Open left %s behind (%v)", dir, err)
	}
}

// TestOpenConcurrent opens one new store from many goroutines at once:
// one creates it, every other opens it, and all see the same store.
func TestOpenConcurrent(t *testing.T) {
	url := filepath.Join(t.TempDir(), "a", "store") + "?durability=none"
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			repo, release, err := store.Open(context.Background(), url, nil)
			if err != nil {
				errs[i] = err
				return
			}
			defer release()
			_, errs[i] = repo.Put(context.Background(), cas.ContentSchema, fmt.Sprint(i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
}

// TestOpenProcesses starts several processes that open the same new store
// at once (the test binary, re-run as an opener).
func TestOpenProcesses(t *testing.T) {
	if os.Getenv("UWF_TEST_OPENER") != "" {
		t.Skip("an opener process")
	}
	url := filepath.Join(t.TempDir(), "p", "store")
	const n = 4
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestOpenerProcess$")
		cmds[i].Env = append(os.Environ(), "UWF_TEST_OPENER="+url, fmt.Sprintf("UWF_TEST_OPENER_N=%d", i))
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("opener process %d: %v", i, err)
		}
	}
	repo, release, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for i := range n {
		if _, err := repo.Refs().Get(t.Context(), fmt.Sprintf("notes/p%d", i)); err != nil {
			t.Errorf("process %d's note: %v", i, err)
		}
	}
}

// TestOpenerProcess is one process of TestOpenProcesses.
func TestOpenerProcess(t *testing.T) {
	url := os.Getenv("UWF_TEST_OPENER")
	if url == "" {
		t.Skip("run by TestOpenProcesses")
	}
	repo, release, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	put(t, repo, "p"+os.Getenv("UWF_TEST_OPENER_N"))
}

func TestOpenPostgres(t *testing.T) {
	url := os.Getenv("UWF_TEST_POSTGRES")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("UWF_TEST_POSTGRES is unset under CI=true")
		}
		t.Skip("set UWF_TEST_POSTGRES=postgres://... to run the PostgreSQL tests")
	}
	schema := fmt.Sprintf("opener_%d", time.Now().UnixNano())
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	url += sep + "schema=" + schema
	repo, release, err := store.Open(t.Context(), url, &store.Options{Durability: "ignored by postgres"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	h := put(t, repo, "pg")
	release()
	repo, release, err = store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer release()
	got, err := repo.Refs().Get(t.Context(), "notes/pg")
	if err != nil || got != h {
		t.Errorf("notes/pg = %s, %v; want %s", got, err, h)
	}
}
