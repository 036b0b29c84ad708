package serve_test

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/proctest"
	"github.com/uncaged/uwf/serve"
)

// TestSecurity: a foreign Host gets 403; a mutation without, or with a
// wrong, token gets 401; a token in the query string is refused; a
// cross-origin POST is refused; every answer carries the CSP.
func TestSecurity(t *testing.T) {
	e := newEnv(t, "memory")
	wf := e.reviewLoop()
	id, _, err := e.eng.Start(t.Context(), wf, "task", "/")
	if err != nil {
		t.Fatal(err)
	}
	kill := "/api/v1/threads/" + id + "/kill"
	cases := []struct {
		name, method, path string
		auth               bool
		headers            []string
		want               int
	}{
		{"loopback read needs no token", "GET", "/api/v1/threads", false, nil, 200},
		{"localhost Host", "GET", "/api/v1/threads", false, []string{"Host: localhost:" + e.port}, 200},
		{"[::1] Host", "GET", "/api/v1/threads", false, []string{"Host: [::1]:" + e.port}, 200},
		{"foreign Host", "GET", "/api/v1/threads", false, []string{"Host: evil.example:" + e.port}, 403},
		{"foreign Host on the viewer", "GET", "/", false, []string{"Host: evil.example"}, 403},
		{"rebinding name on the right port", "GET", "/api/v1/threads", false, []string{"Host: 127.0.0.1.evil.example:" + e.port}, 403},
		{"loopback Host on another port", "GET", "/api/v1/threads", false, []string{"Host: 127.0.0.1:1"}, 403},
		{"Host without a port", "GET", "/api/v1/threads", false, []string{"Host: 127.0.0.1"}, 403},
		{"foreign Host with the token", "POST", kill, true, []string{"Host: evil.example:" + e.port}, 403},
		{"mutation without a token", "POST", kill, false, nil, 401},
		{"mutation with a wrong token", "POST", kill, false, []string{"Authorization: Bearer wrong-token-0123456789abcdef"}, 401},
		{"mutation with a token prefix", "POST", kill, false, []string{"Authorization: Bearer " + testToken[:10]}, 401},
		{"mutation with basic auth", "POST", kill, false, []string{"Authorization: Basic " + testToken}, 401},
		{"token in the query string", "POST", kill + "?token=" + testToken, false, nil, 400},
		{"access_token in the query string", "GET", "/api/v1/threads?access_token=" + testToken, false, nil, 400},
		{"Token in the query string, another case", "GET", "/api/v1/threads?Token=x", false, nil, 400},
		{"the token under any name in the query string", "GET", "/api/v1/threads?status=active&t=" + testToken, false, nil, 400},
		{"the token as a bearer value in the query string", "POST", kill + "?x=Bearer+" + testToken, true, nil, 400},
		{"the token as a parameter name", "GET", "/api/v1/threads?" + testToken, false, nil, 400},
		{"cross-origin POST", "POST", kill, true, []string{"Origin: http://evil.example"}, 403},
		{"cross-site fetch", "POST", kill, true, []string{"Sec-Fetch-Site: cross-site"}, 403},
		{"same-site other origin", "POST", kill, true, []string{"Sec-Fetch-Site: same-site"}, 403},
		{"form content type", "POST", kill, true, []string{"Content-Type: application/x-www-form-urlencoded"}, 400},
		{"same-origin POST", "POST", kill, true, []string{"Origin: http://127.0.0.1:" + e.port, "Sec-Fetch-Site: same-origin"}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, c.path, "", c.auth, c.headers...)
			if r.status != c.want {
				t.Errorf("%s %s %v: %d, want %d: %s", c.method, c.path, c.headers, r.status, c.want, r.body)
			}
			if r.header.Get("Content-Security-Policy") != serve.CSP || r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("security headers missing: %v", r.header)
			}
			if c.want == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: %v", r.header)
			}
		})
	}
}

// TestBodyLimit: a body over the bound is refused with 413, and a header
// over its bound by the server.
func TestBodyLimit(t *testing.T) {
	e := newEnv(t, "memory")
	big := `{"prompt":"` + strings.Repeat("x", serve.MaxBodyBytes) + `","workflow":"x"}`
	if r := e.do("POST", "/api/v1/threads", big, true); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over %d bytes: %d %s", serve.MaxBodyBytes, r.status, r.body)
	}
	if r := e.do("GET", "/api/v1/threads", "", false, "X-Big: "+strings.Repeat("y", 2*serve.MaxHeaderBytes)); r.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a header over %d bytes: %d", serve.MaxHeaderBytes, r.status)
	}
}

// TestBeyondLoopback: binding beyond loopback needs an explicit token, and
// then every request needs it, as a bearer header or (reads) as the
// cookie a token-checked call sets; a page asked for without it gets the
// bootstrap page, whose script alone needs no token.
func TestBeyondLoopback(t *testing.T) {
	srv, err := serve.New(newEnv(t, "memory").repo, &serve.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen beyond loopback here: %v", err)
	}
	if err := srv.Serve(t.Context(), ln); !errors.Is(err, serve.ErrNeedToken) {
		t.Errorf("Serve beyond loopback without an explicit token: %v, want ErrNeedToken", err)
	}

	e := newEnvWith(t, "memory", "0.0.0.0:0", nil)
	if r := e.do("GET", "/api/v1/threads", "", false); r.status != http.StatusUnauthorized {
		t.Errorf("a read without the token: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/v1/threads", "", true, "Host: uwf.example:"+e.port); r.status != http.StatusOK {
		t.Errorf("a read with the token under any Host: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/v1/session", "", false); r.status != http.StatusUnauthorized {
		t.Errorf("the session call without the token: %d", r.status)
	}
	r := e.do("POST", "/api/v1/session", "", true)
	if r.status != http.StatusNoContent {
		t.Fatalf("the session call: %d %s", r.status, r.body)
	}
	cookie := r.header.Get("Set-Cookie")
	for _, want := range []string{serve.CookieName + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie %q lacks %q", cookie, want)
		}
	}
	if strings.Contains(cookie, testToken) {
		t.Errorf("the cookie holds the token itself: %q", cookie)
	}
	pair, _, _ := strings.Cut(cookie, ";")
	if r := e.do("GET", "/api/v1/threads", "", false, "Cookie: "+pair); r.status != http.StatusOK {
		t.Errorf("a read with the events cookie: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/", "", false, "Cookie: "+pair); r.status != http.StatusOK {
		t.Errorf("a page with the cookie: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/", "", false); r.status != http.StatusUnauthorized || !strings.Contains(r.body, `<script src="/auth.js">`) {
		t.Errorf("a page without the token: %d %s, want 401 and the bootstrap page", r.status, r.body)
	}
	if r := e.do("GET", "/auth.js", "", false); r.status != http.StatusOK || !strings.Contains(r.body, "/api/v1/session") {
		t.Errorf("the bootstrap script without the token: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/v1/threads", "", false, "Cookie: "+serve.CookieName+"=forged"); r.status != http.StatusUnauthorized {
		t.Errorf("a read with a forged cookie: %d", r.status)
	}
	// The viewer's pages show store data: without the token or the
	// cookie they answer the bootstrap page, which holds none.
	if r := e.do("GET", "/threads/01ARZ3NDEKTSV4RRFFQ69G5FAV", "", false); r.status != http.StatusUnauthorized || strings.Contains(r.body, "01ARZ3NDEKTSV4RRFFQ69G5FAV") {
		t.Errorf("a viewer page without the token: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/", "", false, "Cookie: "+pair); r.status != http.StatusOK || !strings.Contains(r.body, "Threads") {
		t.Errorf("the thread list with the cookie: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/v1/session", "", false, "Cookie: "+pair); r.status != http.StatusUnauthorized {
		t.Errorf("a mutation with only the cookie: %d", r.status)
	}
}

// TestRequestLog: each request is logged at info with its method, path
// and status, and the token never reaches the log, wherever a client
// puts it.
func TestRequestLog(t *testing.T) {
	var buf proctest.SyncBuffer
	e := newEnvWith(t, "memory", "127.0.0.1:0", func(o *serve.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	e.do("GET", "/api/v1/threads", "", true)
	e.do("GET", "/api/v1/threads?token="+testToken, "", false)
	e.do("POST", "/api/v1/threads/"+testToken+"/kill", "", true)
	e.do("POST", "/api/v1/threads", `{"workflow":"`+testToken+`"}`, true)
	log := buf.String()
	for _, want := range []string{"level=INFO msg=request method=GET path=/api/v1/threads status=200", "status=400", "status=404"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, testToken) {
		t.Errorf("the token reached the log:\n%s", log)
	}
}
