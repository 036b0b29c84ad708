package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/pgtest"
)

// uwfOut runs uwf in another process and returns its stdout; it fails the
// test on a non-zero exit.
func uwfOut(t *testing.T, home string, env []string, args ...string) string {
	t.Helper()
	cmd := uwfProcess(t, home, args...)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("uwf %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// served is a `uwf serve` process.
type served struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	token  string
	stderr *strings.Builder
}

var viewerURL = regexp.MustCompile(`http://(127\.0\.0\.1:[0-9]+)/#token=(\S+)`)

// startServe starts `uwf serve` on a free loopback port and reads the
// address and token it prints.
func startServe(t *testing.T, home string, env []string, args ...string) *served {
	t.Helper()
	cmd := uwfProcess(t, home, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	s := &served{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	m := viewerURL.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("uwf serve printed %q (%v); stderr:\n%s", line, err, s.stderr)
	}
	s.base, s.token = "http://"+m[1], m[2]
	return s
}

// sse is an events stream read by a test.
type sse struct {
	events chan [3]string // id, event, data
	body   io.Closer
}

// openEvents opens the events stream, resuming after lastID if not "". It
// skips the test if the store's refs cannot be watched yet (501).
func openEvents(t *testing.T, base, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/api/v1/events", nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotImplemented {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Skipf("this store's refs cannot be watched yet: %s", b)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/events: %s", resp.Status)
	}
	s := &sse{events: make(chan [3]string, 4096), body: resp.Body}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev [3]string
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				if ev[1] != "" {
					s.events <- ev
				}
				ev = [3]string{}
				continue
			}
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				ev[0] = v
			case "event":
				ev[1] = v
			case "data":
				ev[2] += v
			}
		}
	}()
	if ev, ok := <-s.events; !ok || ev[1] != "ready" {
		t.Fatalf("the stream began with %v", ev)
	}
	return s
}

// collect reads ref events until every entry of want (per ref, in order)
// was seen, or 60 s pass; it returns the id of the last event read.
func (s *sse) collect(t *testing.T, want map[string][]cas.LogEntry, got map[string][]cas.LogEntry, stopAfter int) string {
	t.Helper()
	last := ""
	n := 0
	timeout := time.After(60 * time.Second)
	for {
		complete := true
		for ref, es := range want {
			if len(got[ref]) < len(es) {
				complete = false
			}
		}
		if complete || (stopAfter > 0 && n == stopAfter) {
			return last
		}
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("the events stream ended")
			}
			if ev[1] != "ref" {
				continue
			}
			var e cas.Event
			if err := json.Unmarshal([]byte(ev[2]), &e); err != nil {
				t.Fatal(err)
			}
			if _, ok := want[e.Ref]; ok {
				got[e.Ref] = append(got[e.Ref], e.Entry())
			}
			last = ev[0]
			n++
		case <-timeout:
			t.Fatalf("60 s without every move: got %v\nwant %v", got, want)
		}
	}
}

// testServeEvents: a `uwf serve` process streams the moves of two
// threads stepped by two other `uwf thread step` processes (the second
// from a second "machine" when machine2 is set: its own home, the same
// store URL), every move, in each ref's log order, none missing; a
// subscriber that reconnects with Last-Event-ID misses nothing.
func testServeEvents(t *testing.T, storeURL string, machine2 bool) {
	dir := t.TempDir()
	home1, home2 := filepath.Join(dir, "home1"), filepath.Join(dir, "home2")
	if !machine2 {
		home2 = home1
	}
	env := []string{"UWF_STORE=" + storeURL}
	wfFile := filepath.Join(dir, "review-loop.yaml")
	if err := os.WriteFile(wfFile, []byte(reviewLoop), 0o644); err != nil {
		t.Fatal(err)
	}
	uwfOut(t, home1, env, "workflow", "put", wfFile)
	a := strings.TrimSpace(uwfOut(t, home1, env, "thread", "start", "review-loop", "-p", "first"))
	b := strings.TrimSpace(uwfOut(t, home2, env, "thread", "start", "review-loop", "-p", "second"))
	srv := startServe(t, home1, env)
	sub := openEvents(t, srv.base, "")
	late := openEvents(t, srv.base, "") // reads half, then reconnects

	steppers := []*exec.Cmd{
		uwfProcess(t, home1, "thread", "step", a, "-n", "0", "--agent", "synth", "--seed", "1"),
		uwfProcess(t, home2, "thread", "step", b, "-n", "0", "--agent", "synth", "--seed", "2"),
	}
	for _, c := range steppers {
		c.Env = append(c.Env, env...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range steppers {
		if err := c.Wait(); err != nil {
			t.Fatalf("uwf thread step: %v", err)
		}
	}
	want := map[string][]cas.LogEntry{}
	for _, id := range []string{a, b} {
		var log []cas.LogEntry
		if err := json.Unmarshal([]byte(uwfOut(t, home1, env, "--json", "thread", "log", id)), &log); err != nil {
			t.Fatal(err)
		}
		want["threads/"+id] = log[1:] // the creation came before the subscription
	}
	check := func(who string, got map[string][]cas.LogEntry) {
		t.Helper()
		for ref, es := range want {
			if len(got[ref]) != len(es) {
				t.Errorf("%s: %d moves of %s, want %d", who, len(got[ref]), ref, len(es))
				continue
			}
			for i := range es {
				if got[ref][i] != es[i] {
					t.Errorf("%s: move %d of %s: %+v, want %+v", who, i, ref, got[ref][i], es[i])
				}
			}
		}
	}
	got := map[string][]cas.LogEntry{}
	sub.collect(t, want, got, 0)
	check("subscriber", got)

	lateGot := map[string][]cas.LogEntry{}
	lastID := late.collect(t, want, lateGot, 5)
	late.body.Close()
	again := openEvents(t, srv.base, lastID)
	again.collect(t, want, lateGot, 0)
	check("reconnected subscriber", lateGot)

	// SIGTERM: a clean shutdown, exit 0.
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("uwf serve after SIGTERM: %v\n%s", err, srv.stderr)
	}
	if !strings.Contains(srv.stderr.String(), "shutting down") {
		t.Errorf("uwf serve's log lacks the shutdown:\n%s", srv.stderr)
	}
}

func TestServeEventsDisk(t *testing.T) {
	testServeEvents(t, filepath.Join(t.TempDir(), "store")+"?durability=none", false)
}

func TestServeEventsPostgres(t *testing.T) {
	base := pgtest.URL(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	testServeEvents(t, base+sep+"schema="+pgtest.Schema(t, "uwf_serve_"), true)
}

// TestServeProcess: `uwf serve` prints the viewer's address with the
// token in the fragment, answers reads without it and mutations with it,
// logs requests at info without the token, and exits 0 on SIGTERM.
func TestServeProcess(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	srv := startServe(t, home, nil)
	get := func(path string) int {
		resp, err := http.Get(srv.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := get("/api/v1/threads"); st != 200 {
		t.Errorf("GET /api/v1/threads: %d", st)
	}
	if st := get("/"); st != 200 {
		t.Errorf("GET /: %d", st)
	}
	req, _ := http.NewRequest("POST", srv.base+"/api/v1/threads/01JGJFGS3P0000000000000000/kill", nil)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("kill of an absent thread with the token: %d, want 404", resp.StatusCode)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	log := srv.stderr.String()
	if !strings.Contains(log, "msg=request method=GET path=/api/v1/threads status=200") {
		t.Errorf("no request log at info:\n%s", log)
	}
	if strings.Contains(log, srv.token) {
		t.Errorf("the token reached the log:\n%s", log)
	}
}

// TestServeUsage: a bad --addr, a short --token and binding beyond
// loopback without a token are usage errors.
func TestServeUsage(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	for _, args := range [][]string{
		{"serve", "--addr", "nope"},
		{"serve", "--token", "short"},
		{"serve", "--addr", "0.0.0.0:0"},
	} {
		cmd := uwfProcess(t, home, args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Errorf("uwf %v: %v, want exit 2\n%s", args, err, out)
		}
	}
}

// TestThreadWatch: `uwf thread watch` follows a thread another process
// steps, printing each step as `thread run` does, and exits 0 when the
// thread is done.
func TestThreadWatch(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	wfFile := filepath.Join(dir, "review-loop.yaml")
	if err := os.WriteFile(wfFile, []byte(reviewLoop), 0o644); err != nil {
		t.Fatal(err)
	}
	uwfOut(t, home, nil, "workflow", "put", wfFile)
	id := strings.TrimSpace(uwfOut(t, home, nil, "thread", "start", "review-loop", "-p", "task"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	watch := exec.CommandContext(ctx, os.Args[0], "thread", "watch", "--latest")
	watch.Env = append(os.Environ(), "UWF_TEST_MAIN=1", "UWF_HOME="+home, "UWF_STORE=", "UWF_DURABILITY=", "UWF_LOG_LEVEL=")
	var out, stderr strings.Builder
	watch.Stdout, watch.Stderr = &out, &stderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let it begin; it misses nothing either way
	step := uwfOut(t, home, nil, "thread", "step", id, "-n", "0", "--agent", "synth")
	err := watch.Wait()
	if strings.Contains(stderr.String(), "cannot be watched") {
		t.Skipf("this store's refs cannot be watched yet: %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("uwf thread watch: %v\n%s", err, stderr.String())
	}
	// The step process's lines, less their timings, are the watcher's.
	strip := regexp.MustCompile(` [0-9.]+m?s\n`)
	if got, want := strip.ReplaceAllString(out.String(), "\n"), "thread "+id+"\n"+strip.ReplaceAllString(step, "\n"); got != want {
		t.Errorf("thread watch printed:\n%s\nthe stepping process:\n%s", got, want)
	}
}
