package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/uncaged/uwf/cas"
)

// runStderr runs uwf with stderr on errw (a terminal or a pipe) and stdin
// from stdin, and returns stdout and the exit code.
func (e *env) runStderr(errw io.Writer, stdin io.Reader, args ...string) (string, int) {
	e.t.Helper()
	var out bytes.Buffer
	app := newApp(&out, errw)
	app.Reader = stdin
	app.Metadata = map[string]any{metaNow: e.clock.Now, metaNewID: e.ids.New}
	err := app.RunContext(e.t.Context(), append([]string{"uwf"}, args...))
	return out.String(), exitCode(errw, err)
}

// capture gives a command a stderr of kind "pty" (a pseudo-terminal) or
// "pipe" and returns what was written to it.
func (e *env) capture(kind string, stdin string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	var w, r *os.File
	var err error
	if kind == "pty" {
		r, w, err = pty.Open()
	} else {
		r, w, err = os.Pipe()
	}
	if err != nil {
		e.t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r) // a pty's reader ends with EIO once the terminal is closed
		got <- string(b)
	}()
	stdout, code = e.runStderr(w, strings.NewReader(stdin), args...)
	w.Close()
	stderr = <-got
	r.Close()
	return stdout, stderr, code
}

// progressStore fills the store with n texts, keeps one under a ref, and
// ages the rest past the grace period, so GC sweeps n-1 of them; it
// returns the kept one.
func progressStore(t *testing.T, e *env, n int) cas.Hash {
	t.Helper()
	var paths []string
	for i := range n {
		p := filepath.Join(e.dir, fmt.Sprintf("t%d.json", i))
		if err := os.WriteFile(p, fmt.Appendf(nil, "%q", fmt.Sprintf("text %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out := e.ok(strings.Join(paths, "\n")+"\n", "cas", "put", "--batch", "content")
	first, err := cas.ParseCanonicalHash(strings.SplitN(out, "\n", 2)[0])
	if err != nil {
		t.Fatalf("put --batch printed %q", out)
	}
	e.ok("", "cas", "ref", "set", "keep", first.String())
	e.clock.Advance(2 * time.Hour)
	return first
}

// TestProgressTerminal: on a pseudo-terminal, gc, fsck, walk, export,
// import and put --batch draw a bar (or counts and a rate where the total
// is unknown) that ends its phase at 100%, and with --json write progress
// events that parse; on a pipe stderr stays empty.
func TestProgressTerminal(t *testing.T) {
	e := newEnv(t)
	kept := progressStore(t, e, 200)
	var paths []string
	for i := range 30 {
		p := filepath.Join(e.dir, fmt.Sprintf("b%d.json", i))
		if err := os.WriteFile(p, fmt.Appendf(nil, `"batch %d"`, i), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	batch := strings.Join(paths, "\n") + "\n"
	tarFile := filepath.Join(e.dir, "store.tar")

	for _, tc := range []struct {
		args  []string
		stdin string
		want  []string // in the terminal's output
	}{
		{[]string{"cas", "fsck"}, "", []string{"fsck list  ", "\rfsck objects [", "] 100%  ", "fsck refs  "}},
		{[]string{"cas", "walk", kept.String()}, "", []string{"walk nodes  3 nodes", "  in "}},
		{[]string{"cas", "walk", "--tree", kept.String()}, "", []string{"walk nodes  3 nodes", "  in "}},
		{[]string{"cas", "put", "--batch", "content"}, batch, []string{"put files  0 files", "put files  30 files", "  in "}},
		{[]string{"cas", "gc"}, "", []string{"gc list  ", "gc mark  ", "\rgc order [", "\rgc sweep [", "] 100%  199/199 objects"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, tty, code := e.capture("pty", tc.stdin, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d; terminal: %q", code, tty)
			}
			for _, w := range tc.want {
				if !strings.Contains(tty, w) {
					t.Errorf("the terminal shows no %q:\n%q", w, tty)
				}
			}
			if !strings.HasSuffix(tty, "\x1b[K\r\n") {
				t.Errorf("the terminal's last line is not a finished bar line:\n%q", tty)
			}
		})
	}

	t.Run("export and import", func(t *testing.T) {
		tar, tty, code := e.capture("pty", "", "cas", "export")
		if code != 0 || !strings.Contains(tty, "\rexport write [") || !strings.Contains(tty, "] 100%  ") {
			t.Fatalf("export: exit %d, terminal %q", code, tty)
		}
		if err := os.WriteFile(tarFile, []byte(tar), 0o644); err != nil {
			t.Fatal(err)
		}
		_, tty, code = e.capture("pty", tar, "--store", "other", "cas", "import")
		if code != 0 || !strings.Contains(tty, "import objects  ") || !strings.Contains(tty, "  in ") {
			t.Fatalf("import: exit %d, terminal %q", code, tty)
		}
	})

	t.Run("json", func(t *testing.T) {
		_, tty, code := e.capture("pty", "", "--json", "cas", "fsck")
		if code != 0 {
			t.Fatalf("exit %d: %q", code, tty)
		}
		var finals []string
		for _, l := range strings.Split(strings.TrimSpace(strings.ReplaceAll(tty, "\r\n", "\n")), "\n") {
			var ev struct {
				Event string `json:"event"`
				Op    string `json:"op"`
				Phase string `json:"phase"`
				Done  int64  `json:"done"`
				Total *int64 `json:"total"`
				Final bool   `json:"final"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Event != "progress" || ev.Op != "fsck" {
				t.Fatalf("not a progress event: %q (%v)", l, err)
			}
			if ev.Final {
				finals = append(finals, ev.Phase)
				if ev.Total != nil && ev.Done != *ev.Total {
					t.Errorf("final event %q: done %d of %d", l, ev.Done, *ev.Total)
				}
			}
		}
		if strings.Join(finals, ",") != "list,objects,refs" {
			t.Errorf("final events of phases %q, want list, objects, refs", finals)
		}
	})

	t.Run("never", func(t *testing.T) {
		if _, tty, code := e.capture("pty", "", "--progress=false", "cas", "fsck"); code != 0 || tty != "" {
			t.Errorf("--progress=false on a terminal: exit %d, terminal %q; want nothing", code, tty)
		}
	})

	t.Run("piped", func(t *testing.T) {
		for _, c := range []struct {
			args  []string
			stdin string
		}{
			{[]string{"cas", "fsck"}, ""},
			{[]string{"--json", "cas", "fsck"}, ""},
			{[]string{"cas", "walk", kept.String()}, ""},
			{[]string{"cas", "walk", "--tree", kept.String()}, ""},
			{[]string{"cas", "put", "--batch", "content"}, batch},
			{[]string{"cas", "gc", "--grace", "0"}, ""},
			{[]string{"--store", "third", "cas", "import"}, string(mustRead(t, tarFile))},
		} {
			if _, stderr, code := e.capture("pipe", c.stdin, c.args...); code != 0 || stderr != "" {
				t.Errorf("uwf %q with stderr on a pipe: exit %d, stderr %q; want nothing", c.args, code, stderr)
			}
		}
		// --progress forces it: text lines, no redraws.
		_, stderr, code := e.capture("pipe", "", "--progress", "cas", "fsck")
		if code != 0 || strings.Contains(stderr, "\r") || !strings.Contains(stderr, "] 100%  ") {
			t.Errorf("--progress on a pipe: exit %d, stderr %q; want text lines ending at 100%%", code, stderr)
		}
	})
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExportToDevNull: export refuses a terminal for its tar, but not
// /dev/null, a character device that is no terminal.
func TestExportToDevNull(t *testing.T) {
	e := newEnv(t)
	e.ok("", "cas", "put-text", "hello")
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var errb bytes.Buffer
	app := newApp(devnull, &errb)
	app.Metadata = map[string]any{metaNow: e.clock.Now, metaNewID: e.ids.New}
	if code := exitCode(&errb, app.RunContext(t.Context(), []string{"uwf", "cas", "export"})); code != 0 {
		t.Errorf("export > /dev/null: exit %d, stderr %q", code, errb.String())
	}
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer tty.Close()
	errb.Reset()
	app = newApp(tty, &errb)
	app.Metadata = map[string]any{metaNow: e.clock.Now, metaNewID: e.ids.New}
	if code := exitCode(&errb, app.RunContext(t.Context(), []string{"uwf", "cas", "export"})); code != 2 || !strings.Contains(errb.String(), "refusing to write a tar to a terminal") {
		t.Errorf("export to a terminal: exit %d, stderr %q; want 2, refused", code, errb.String())
	}
}
