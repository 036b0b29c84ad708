package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// TestStartDuringShutdown: a start that comes once the shutdown has
// cancelled the background steps (before the listener closes) answers 503,
// and the body names the thread it created, with its head and a Location,
// so the client can step or remove it; the thread is there, as started.
func TestStartDuringShutdown(t *testing.T) {
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(t.Context(), mem, mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(repo, &Options{Token: "tok", ExplicitToken: true, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	data, err := examples.FS.ReadFile("review-loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wf, err := registry.Parse("review-loop.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.eng.Registry().Put(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	s.stopJobs() // what Serve does first when it shuts down
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, tc := range []struct{ name, body string }{
		{"run", `{"workflow":"review-loop","prompt":"p","agent":"synth"}`},
		{"start only still works", `{"workflow":"review-loop","prompt":"p","n":-1}`},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/threads", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Host = "127.0.0.1"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error  string
			Status int
			Thread string
			Head   cas.Hash
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if tc.name != "run" {
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("%s: %d %+v, want 201", tc.name, resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != http.StatusServiceUnavailable || body.Status != 503 {
			t.Fatalf("%s: %d %+v, want 503", tc.name, resp.StatusCode, body)
		}
		if body.Thread == "" || body.Head.IsZero() {
			t.Fatalf("%s: the 503 does not name the thread it created: %+v", tc.name, body)
		}
		if loc := resp.Header.Get("Location"); loc != "/api/v1/threads/"+body.Thread {
			t.Errorf("%s: Location %q", tc.name, loc)
		}
		want := "thread " + body.Thread + " was created (head " + body.Head.String() + ") but not stepped: "
		if !strings.HasPrefix(body.Error, want) || !strings.Contains(body.Error, "shutting down") || strings.Count(body.Error, body.Thread) != 1 {
			t.Errorf("%s: error %q, want it to start %q and say the server is shutting down", tc.name, body.Error, want)
		}
		info, err := s.eng.Show(t.Context(), body.Thread)
		if err != nil {
			t.Fatal(err)
		}
		if info.Head != body.Head || info.Status != thread.StatusActive || info.Depth != 0 {
			t.Errorf("%s: the thread is %+v, want it active at its start %s", tc.name, info, body.Head)
		}
	}
}
