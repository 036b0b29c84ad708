package serve

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"

	"github.com/uncaged/uwf/serve/web"
)

// CookieName is the events cookie: set by POST /api/v1/session (a
// token-checked call), it lets a browser's EventSource, which cannot send
// a header, read the events stream of a server bound beyond loopback.
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
		q := r.URL.Query()
		for _, k := range []string{"token", "access_token", "auth", "authorization"} {
			if q.Has(k) {
				writeError(w, http.StatusBadRequest, "a token in the query string is refused: send it as \"Authorization: Bearer <token>\"")
				return
			}
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
		} else if !s.loopback && !strings.HasPrefix(r.URL.Path, "/static/") && !s.bearerOK(r) && !s.cookieOK(r) {
			if !api { // a viewer page shows store data: the sign-in page sets the cookie
				web.SignIn(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="uwf"`)
			writeError(w, http.StatusUnauthorized, "a server bound beyond loopback needs the token on every request: \"Authorization: Bearer <token>\" (or the events cookie from POST /api/v1/session)")
			return
		}
		next.ServeHTTP(w, r)
	})
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

// handleSession is POST /api/v1/session: the guard has checked the bearer
// token; it sets the events cookie (HttpOnly, SameSite=Strict, for
// /api/v1/ only) and answers 204.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: s.cookie, Path: "/", // the viewer's pages and the API
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.WriteHeader(http.StatusNoContent)
}
