package serve

import (
	"crypto/subtle"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CookieName is the session cookie: set by POST /api/v1/session (a
// token-checked call), it lets a browser's page loads and EventSource,
// which cannot send a header, read a server bound beyond loopback. It
// authorises reads only.
const CookieName = "uwf_events"

// CSP is the Content-Security-Policy of every response: nothing from
// elsewhere, no inline script or style, no framing, no plugins; forms and
// fetches go to this origin only.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// mutating reports whether a request changes the store: anything but GET
// and HEAD.
func mutating(r *http.Request) bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// guard applies, in this order, to every request:
//   - on loopback, a Host other than 127.0.0.1, localhost or [::1] on the
//     bound port is refused (403): this stops DNS rebinding;
//   - a token in the query string is refused (400), whatever its value;
//   - a mutation needs "Authorization: Bearer <token>" (401), from this
//     origin (403 for a cross-site Origin or Sec-Fetch-Site);
//   - beyond loopback every /api/ request needs the token: as a bearer
//     header, or for a read as the events cookie (401).
//
// Every response carries the security headers (CSP, nosniff, no framing,
// no referrer).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if s.loopback && !s.loopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, "host %q refused: a server on loopback answers only 127.0.0.1, localhost or [::1] on port %s", r.Host, s.port)
			return
		}
		if s.queryToken(r) {
			writeError(w, http.StatusBadRequest, "a token in the query string is refused: send it as \"Authorization: Bearer <token>\"")
			return
		}
		api := strings.HasPrefix(r.URL.Path, "/api/")
		if mutating(r) {
			if !s.sameOrigin(r) {
				writeError(w, http.StatusForbidden, "cross-origin %s refused: mutations are accepted from this server's own pages only", r.Method)
				return
			}
			if !s.bearerOK(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="uwf"`)
				writeError(w, http.StatusUnauthorized, "%s %s needs \"Authorization: Bearer <token>\" with the token uwf serve printed", r.Method, r.URL.Path)
				return
			}
		} else if !s.loopback && r.URL.Path != bootstrapPath && !s.bearerOK(r) && !s.cookieOK(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="uwf"`)
			if !api {
				// A page: a bootstrap that takes the token from the URL's
				// fragment, gets the cookie and loads the page again.
				h.Set("Content-Type", "text/html; charset=utf-8")
				h.Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, bootstrapPage)
				return
			}
			writeError(w, http.StatusUnauthorized, "a server bound beyond loopback needs the token on every request: \"Authorization: Bearer <token>\" (or the cookie from POST /api/v1/session)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// queryToken reports whether the query string carries a token: a
// parameter named like one (token, access_token, auth, authorization, in
// any case), or any parameter whose name or value is the server's token
// (compared in constant time). Such a URL is refused whatever the token's
// validity: URLs end up in histories, proxies' logs and Referer headers.
func (s *Server) queryToken(r *http.Request) bool {
	if r.URL.RawQuery == "" {
		return false
	}
	q, _ := url.ParseQuery(r.URL.RawQuery) // what parses: a bad pair is no parameter
	found := false
	for k, vs := range q {
		switch strings.ToLower(k) {
		case "token", "access_token", "auth", "authorization", "bearer":
			found = true
		}
		if subtle.ConstantTimeCompare([]byte(k), s.token) == 1 {
			found = true
		}
		for _, v := range vs {
			v = strings.TrimSpace(strings.TrimPrefix(v, "Bearer "))
			if subtle.ConstantTimeCompare([]byte(v), s.token) == 1 {
				found = true
			}
		}
	}
	return found
}

// loopbackHost reports whether the Host header names this server on
// loopback: 127.0.0.1, localhost or [::1], on the bound port.
func (s *Server) loopbackHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != s.port {
		return false
	}
	switch strings.ToLower(host) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}

// sameOrigin reports whether a mutating request may come from where it
// says it comes from: a browser's Sec-Fetch-Site must be same-origin (or
// none: typed by the user), and an Origin header must be this server's
// (scheme http, the request's Host). A request with neither (curl, a
// script) is not a browser's cross-site request.
func (s *Server) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		return o == "http://"+r.Host || (r.TLS != nil && o == "https://"+r.Host)
	}
	return true
}

// bearerOK compares the Authorization header's bearer token with the
// server's in constant time.
func (s *Server) bearerOK(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), s.token) == 1
}

// cookieOK checks the events cookie in constant time.
func (s *Server) cookieOK(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.cookie)) == 1
}

// bootstrapPath is the one route that needs no token beyond loopback: the
// script of the bootstrap page (it holds no data).
const bootstrapPath = "/auth.js"

// bootstrapPage answers a page asked for without the token beyond
// loopback: its script takes the token from the URL's fragment (never
// sent to a server), exchanges it for the cookie and loads the page again.
const bootstrapPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>uwf: token needed</title>
<script src="/auth.js"></script></head>
<body><p>This uwf server needs its token: open the address <code>uwf serve</code> printed
(<code>http://HOST:PORT/#token=...</code>).</p></body></html>
`

// bootstrapScript is /auth.js.
const bootstrapScript = `(function () {
  var m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return;
  fetch("/api/v1/session", {method: "POST", headers: {"Authorization": "Bearer " + decodeURIComponent(m[1])}, credentials: "same-origin"})
    .then(function (r) { if (r.ok) location.reload(); });
})();
`

func (s *Server) handleBootstrap(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, bootstrapScript)
}

// handleSession is POST /api/v1/session: the guard has checked the bearer
// token; it sets the session cookie (HttpOnly, SameSite=Strict) and
// answers 204.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: s.cookie, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.WriteHeader(http.StatusNoContent)
}
