package serve_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/serve"
	"github.com/uncaged/uwf/thread"
)

// FuzzAPI sends any method, path, query and body (with the token) to the
// API of a store holding a workflow and a thread: every answer is JSON
// with a status the API documents, never a 500, a panic or a hang.
func FuzzAPI(f *testing.F) {
	e := &env{clock: &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}}
	for _, s := range []struct{ method, path, body string }{
		{"GET", "/api/v1/threads?limit=2&status=done", ""},
		{"GET", "/api/v1/threads/01JGJFGS3P0000000000000000/steps?before=ABCDEFGHJKMNP", ""},
		{"GET", "/api/v1/nodes/ABCDEFGHJKMNP", ""},
		{"GET", "/api/v1/workflows/review-loop", ""},
		{"GET", "/api/v1/refs/threads/x", ""},
		{"POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"p","n":-1}`},
		{"POST", "/api/v1/threads/01JGJFGS3P0000000000000000/fork", `{"node":"ABCDEFGHJKMNP","output":{"status":"done"}}`},
		{"POST", "/api/v1/threads/01JGJFGS3P0000000000000000/kill", `{"reason":"x"}`},
	} {
		f.Add(s.method, s.path, s.body)
	}
	var srv *serve.Server
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if srv == nil {
			e.t = t
			e.repo, _ = openRepo(t, "memory", e.clock)
			e.eng = thread.New(e.repo, nil)
			wf := e.reviewLoop()
			if _, _, err := e.eng.Start(t.Context(), wf, "task", "/"); err != nil {
				t.Fatal(err)
			}
			var err error
			if srv, err = serve.New(e.repo, &serve.Options{Token: testToken, ExplicitToken: true, Root: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
		}
		if method != "GET" && method != "POST" {
			method = "GET"
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t#") {
			return
		}
		req, err := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		if err != nil || strings.HasPrefix(req.URL.Path, "/api/v1/events") {
			return // the events stream does not end by itself
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		srv.Wait()
		if w.Code >= 500 {
			t.Errorf("%s %s %q: %d %s", method, path, body, w.Code, w.Body)
		}
		if strings.HasPrefix(req.URL.Path, "/api/") && !json.Valid(w.Body.Bytes()) {
			t.Errorf("%s %s: not JSON: %s", method, path, w.Body)
		}
	})
}
