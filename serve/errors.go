package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/usermsg"
	"github.com/uncaged/uwf/thread"
)

// badRequest is a request the server cannot make sense of: what the CLI
// reports as a usage error (exit 2). It answers 400.
type badRequest struct{ err error }

func (e *badRequest) Error() string { return e.err.Error() }
func (e *badRequest) Unwrap() error { return e.err }

func badRequestf(format string, args ...any) error {
	return &badRequest{fmt.Errorf(format, args...)}
}

// statusOf maps an error to the HTTP status with the meaning of the CLI's
// exit code for it (docs/CLI.md): usage 2 -> 400, not found 3 -> 404,
// conflict 4 -> 409 (and a thread that is not active, which cannot be
// stepped), invalid data given -> 400, interrupted -> 503, any other
// failure -> 500.
func statusOf(err error) int {
	var br *badRequest
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &br):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	case errors.Is(err, cas.ErrInvalidHash), errors.Is(err, cas.ErrInvalidRefName), errors.Is(err, cas.ErrInvalidCursor):
		return http.StatusBadRequest
	case errors.Is(err, cas.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, cas.ErrConflict), errors.Is(err, thread.ErrNotActive):
		return http.StatusConflict
	case errors.Is(err, cas.ErrWatchUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, cas.ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// errorJSON is every error's body. Thread and Head name a thread that a
// failed start created nonetheless.
type errorJSON struct {
	Error  string   `json:"error"`
	Status int      `json:"status"`
	Thread string   `json:"thread,omitempty"`
	Head   cas.Hash `json:"head,omitzero"`
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, errorJSON{Error: fmt.Sprintf(format, args...), Status: status})
}

// fail answers err with its status and its message in the user's words
// (as the CLI prints it: no "cas: not found"), known secrets masked. The
// log keeps the library's words.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	st := statusOf(err)
	if st >= 500 {
		s.log.Warn("request failed", "method", r.Method, "path", s.mask.String(r.URL.Path), "error", s.mask.String(err.Error()))
	}
	writeJSON(w, st, errorJSON{Error: s.userError(err.Error()), Status: st})
}

// userError is an error's text as a client reads it: the library's
// internal words rewritten (internal/usermsg), then secrets masked.
func (s *Server) userError(msg string) string {
	return s.mask.String(usermsg.Message(msg))
}

// writeJSON writes v as the JSON body, without escaping <, > and & (the
// CLI's --json does not either; the body is never HTML).
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
