package serve_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// times are the fields that hold a store's (or PostgreSQL's) clock: the
// golden file has them as 0.
var times = regexp.MustCompile(`"(time|updated)":[0-9]+`)

// internalWord matches what an error body must not hold: a library
// package's name as a message prefix ("cas: not found", "extract: ...")
// and Go's context errors (the CLI's TestErrorMessages checks the same).
var internalWord = regexp.MustCompile(`(^|: |\(|")(cas|moderator|extract|agent|registry|store|yamldoc|disk|postgres|pgx|jsonschema): |context (canceled|deadline exceeded)`)

// TestAPI runs every route on every backend: statuses, the bodies against
// one golden file (the same on every backend), paging, 400 for malformed
// ids, hashes and names, 404, 409, and 401 for a mutation without the
// token.
func TestAPI(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) { testAPI(t, backend) })
	}
}

func testAPI(t *testing.T, backend string) {
	e := newEnv(t, backend)
	ctx := t.Context()
	wf := e.reviewLoop()
	run := func(prompt string, seed int64) string {
		id, _, err := e.eng.Run(ctx, wf, prompt, "/", &thread.RunOptions{Agent: "synth", Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := run("first task", 1)
	b := run("second <script>alert(1)</script> task", 2)
	c, cStart, err := e.eng.Start(ctx, wf, "third task", "/")
	if err != nil {
		t.Fatal(err)
	}
	pa, err := e.eng.Page(ctx, a, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := e.eng.Page(ctx, b, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	aStep1 := pa.Steps[len(pa.Steps)-2].Hash // depth 1: planner
	bStep2 := pb.Steps[len(pb.Steps)-3].Hash
	missing := cas.Hash(12345)
	const noThread = "01JGJFGS3P0000000000000000"

	type tc struct {
		method, path, body string
		auth               bool
		want               int
	}
	cases := []tc{
		{"GET", "/api/v1/threads", "", false, 200},
		{"GET", "/api/v1/threads?limit=1", "", false, 200},
		{"GET", "/api/v1/threads?limit=1&before=" + c, "", false, 200},
		{"GET", "/api/v1/threads?status=active", "", false, 200},
		{"GET", "/api/v1/threads?workflow=review-loop&status=done", "", false, 200},
		{"GET", "/api/v1/threads?workflow=" + wf.String(), "", false, 200},
		{"GET", "/api/v1/threads?workflow=other", "", false, 200},
		{"GET", "/api/v1/threads?status=bogus", "", false, 400},
		{"GET", "/api/v1/threads?limit=0", "", false, 400},
		{"GET", "/api/v1/threads?limit=1001", "", false, 400},
		{"GET", "/api/v1/threads?before=xyz", "", false, 400},
		{"GET", "/api/v1/threads?workflow=-x", "", false, 400},
		{"GET", "/api/v1/threads/" + a, "", false, 200},
		{"GET", "/api/v1/threads/" + strings.ToLower(a), "", false, 200},
		{"GET", "/api/v1/threads/not-an-id", "", false, 400},
		{"GET", "/api/v1/threads/" + noThread, "", false, 404},
		{"GET", "/api/v1/threads/" + a + "/steps?limit=2", "", false, 200},
		{"GET", "/api/v1/threads/" + a + "/steps?limit=2&before=" + pa.Steps[1].Hash.String(), "", false, 200},
		{"GET", "/api/v1/threads/" + a + "/steps?before=" + pa.Steps[len(pa.Steps)-1].Hash.String(), "", false, 200},
		{"GET", "/api/v1/threads/" + a + "/steps?before=" + bStep2.String(), "", false, 400},
		{"GET", "/api/v1/threads/" + a + "/steps?before=" + missing.String(), "", false, 404},
		{"GET", "/api/v1/threads/" + a + "/steps?before=Z!", "", false, 400},
		{"GET", "/api/v1/threads/" + c + "/steps", "", false, 200},
		{"GET", "/api/v1/threads/" + noThread + "/steps", "", false, 404},
		{"GET", "/api/v1/threads/" + a + "/read?quota=300", "", false, 200},
		{"GET", "/api/v1/threads/" + a + "/read?quota=-1", "", false, 400},
		{"GET", "/api/v1/threads/" + a + "/log", "", false, 200},
		{"GET", "/api/v1/steps/" + aStep1.String(), "", false, 200},
		{"GET", "/api/v1/steps/" + cStart.String(), "", false, 400},
		{"GET", "/api/v1/steps/" + missing.String(), "", false, 404},
		{"GET", "/api/v1/steps/nothash", "", false, 400},
		{"GET", "/api/v1/nodes/" + aStep1.String(), "", false, 200},
		{"GET", "/api/v1/nodes/" + missing.String(), "", false, 404},
		{"GET", "/api/v1/nodes/0123456789ABCDEFG", "", false, 400},
		{"GET", "/api/v1/workflows", "", false, 200},
		{"GET", "/api/v1/workflows/review-loop", "", false, 200},
		{"GET", "/api/v1/workflows/" + wf.String(), "", false, 200},
		{"GET", "/api/v1/workflows/nope", "", false, 404},
		{"GET", "/api/v1/workflows/-bad", "", false, 400},
		{"GET", "/api/v1/refs?prefix=workflows/", "", false, 200},
		{"GET", "/api/v1/refs?prefix=../x", "", false, 400},
		{"GET", "/api/v1/refs/workflows/review-loop", "", false, 200},
		{"GET", "/api/v1/refs/threads/" + noThread, "", false, 404},
		{"GET", "/api/v1/refs/a%20b", "", false, 400},
		{"GET", "/api/v1/nope", "", false, 404},
		{"DELETE", "/api/v1/threads", "", true, 405},

		// Mutations.
		{"POST", "/api/v1/threads/" + c + "/kill", `{}`, false, 401},
		{"POST", "/api/v1/threads/" + c + "/kill", `{"reason":"enough"}`, true, 200},
		{"POST", "/api/v1/threads/" + c + "/kill", `{}`, true, 409},
		{"POST", "/api/v1/threads/" + c + "/step", `{}`, true, 409},
		{"POST", "/api/v1/threads/" + c + "/resume", `{"prompt":"go on"}`, true, 200},
		{"POST", "/api/v1/threads/" + c + "/suspend", `{}`, false, 401},
		{"POST", "/api/v1/threads/" + c + "/suspend", `{"reason":"lunch"}`, true, 200},
		{"POST", "/api/v1/threads/" + c + "/suspend", `{}`, true, 409},
		{"POST", "/api/v1/threads/" + c + "/step", `{}`, true, 409},
		{"POST", "/api/v1/threads/" + c + "/resume", `{}`, true, 200},
		{"POST", "/api/v1/threads/" + noThread + "/suspend", `{}`, true, 404},
		{"POST", "/api/v1/threads/" + c + "/kill", `{"reason": 3}`, true, 400},
		{"POST", "/api/v1/threads/" + c + "/kill", `{"bogus": 1}`, true, 400},
		{"POST", "/api/v1/threads/" + c + "/kill", `{} {}`, true, 400},
		{"POST", "/api/v1/threads/" + noThread + "/kill", `{}`, true, 404},
		{"POST", "/api/v1/threads/bad/kill", `{}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/step", `{}`, true, 409},
		{"POST", "/api/v1/threads/" + a + "/step", `{"n":-1}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/step", `{"agent":"replay:x"}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/step", `{"agent":"no-such-agent"}`, true, 404},
		{"POST", "/api/v1/threads/" + a + "/resume", `{}`, true, 409},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"at":2}`, true, 201},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"at":99}`, true, 404},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"at":-1}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/fork", `{}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"at":1,"node":"` + aStep1.String() + `"}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"node":"` + bStep2.String() + `"}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"node":"` + aStep1.String() + `","output":{"status":"done","steps":["edited by hand"]}}`, true, 201},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"node":"` + aStep1.String() + `","output":{"status":"done","steps":"not a list"}}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"node":"` + aStep1.String() + `","output":{"status":"approved","steps":[]}}`, true, 400},
		{"POST", "/api/v1/threads/" + a + "/fork", `{"node":"` + cStart.String() + `","output":{"status":"done","steps":[]}}`, true, 400},
		{"POST", "/api/v1/threads/" + b + "/rm", ``, true, 200},
		{"POST", "/api/v1/threads/" + b + "/rm", ``, true, 404},
		{"GET", "/api/v1/threads/" + b, "", false, 404},
		{"GET", "/api/v1/refs/threads/" + b, "", false, 200},
		{"POST", "/api/v1/threads", `{"workflow":"nope","prompt":"x"}`, true, 404},
		{"POST", "/api/v1/threads", `{"prompt":"x"}`, true, 400},
		{"POST", "/api/v1/threads", `{"workflow":"/etc/passwd","prompt":"x"}`, true, 400},
		{"POST", "/api/v1/threads", `{"workflow":"../review-loop.yaml","prompt":"x"}`, true, 400},
		{"POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"x","cwd":"../etc"}`, true, 400},
		{"POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"x","cwd":"/etc"}`, true, 400},
		{"POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"x","cwd":"missing"}`, true, 400},
		{"POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"x","n":-2}`, true, 400},
		{"POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"x","agent":"no-such-agent"}`, true, 404},
	}
	var out strings.Builder
	for _, k := range cases {
		r := e.do(k.method, k.path, k.body, k.auth)
		if r.status != k.want {
			t.Errorf("%s %s %s: %d, want %d: %s", k.method, k.path, k.body, r.status, k.want, r.body)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s: Content-Type %q", k.method, k.path, ct)
		}
		if r.status != 200 && r.status != 201 && !strings.Contains(r.body, `"error":`) {
			t.Errorf("%s %s: %d without an error message: %s", k.method, k.path, r.status, r.body)
		}
		if m := internalWord.FindString(r.body); m != "" && r.status >= 400 {
			t.Errorf("%s %s: %d: the error holds the internal words %q: %s", k.method, k.path, r.status, m, r.body)
		}
		fmt.Fprintf(&out, "%s %s %s\n-> %d %s\n", k.method, k.path, k.body, r.status, times.ReplaceAllString(r.body, `"$1":0`))
	}
	golden(t, "api.txt", out.String())

	// The fork with an edit: a step of the same role by the edit agent,
	// the edited output valid, the original's raw output kept.
	var forks []thread.InfoJSON
	var list struct{ Threads []thread.InfoJSON }
	e.getJSON("/api/v1/threads", &list)
	for _, th := range list.Threads {
		var show thread.ShowJSON
		e.getJSON("/api/v1/threads/"+th.ID, &show)
		if show.Origin.Forked && show.Depth == 1 {
			forks = append(forks, th)
		}
	}
	if len(forks) != 1 {
		t.Fatalf("want one fork at depth 1 (the edit), got %v", forks)
	}
	var sv thread.StepJSON
	e.getJSON("/api/v1/steps/"+forks[0].Head.String(), &sv)
	var orig thread.StepJSON
	e.getJSON("/api/v1/steps/"+aStep1.String(), &orig)
	if sv.Agent != thread.EditAgent || sv.Role != "planner" || string(sv.Value) != `{"status":"done","steps":["edited by hand"]}` ||
		!strings.Contains(sv.Stderr, orig.Raw) || sv.Prompt != orig.Prompt || sv.EdgePrompt != orig.EdgePrompt {
		t.Errorf("the edit step: %+v\n(original %+v)", sv, orig)
	}

	// Start and step answer 202 and run in the background.
	r := e.do("POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"from the API","agent":"synth","seed":3}`, true)
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var started struct {
		Thread string
		Head   cas.Hash
	}
	json.Unmarshal([]byte(r.body), &started)
	e.srv.Wait()
	var show thread.ShowJSON
	e.getJSON("/api/v1/threads/"+started.Thread, &show)
	if show.Status != thread.StatusDone || show.Depth < 4 {
		t.Errorf("the started thread after its background run: %+v", show)
	}
	if sn, err := e.eng.Node(ctx, show.Origin.Node); err != nil || sn.Start == nil || sn.Start.Cwd != e.root {
		t.Errorf("the started thread's cwd: %v %+v, want the root %s", err, sn, e.root)
	}
	r = e.do("POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"only started","n":-1}`, true)
	if r.status != http.StatusCreated {
		t.Fatalf("start only: %d %s", r.status, r.body)
	}
	json.Unmarshal([]byte(r.body), &started)
	r = e.do("POST", "/api/v1/threads/"+started.Thread+"/step", `{"agent":"synth","n":2}`, true)
	if r.status != http.StatusAccepted {
		t.Fatalf("step: %d %s", r.status, r.body)
	}
	e.srv.Wait()
	e.getJSON("/api/v1/threads/"+started.Thread, &show)
	if show.Status != thread.StatusActive || show.Depth != 2 {
		t.Errorf("after step n=2: %+v", show)
	}
}

// TestThreadsPaging pages through more threads than a page holds: every
// thread once, newest first.
func TestThreadsPaging(t *testing.T) {
	e := newEnv(t, "memory")
	wf := e.reviewLoop()
	var want []string
	for i := range 7 {
		id, _, err := e.eng.Start(t.Context(), wf, fmt.Sprint("task ", i), "/")
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{id}, want...)
	}
	var got []string
	path := "/api/v1/threads?limit=3"
	for pages := 0; ; pages++ {
		var page struct {
			Threads []thread.InfoJSON
			Next    *string
		}
		e.getJSON(path, &page)
		for _, th := range page.Threads {
			got = append(got, th.ID)
		}
		if page.Next == nil {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		path = "/api/v1/threads?limit=3&before=" + *page.Next
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paged threads:\n got %v\nwant %v", got, want)
	}
}
