package web

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/internal/usermsg"
	"github.com/uncaged/uwf/thread"
)

// CSP is the Content-Security-Policy of every response of the viewer (the
// same as package serve's): nothing by default, scripts and styles only
// from the page's own origin (no inline script, no eval), connections only
// back to it, images from it or inline data, no plugin, no frame, no base
// or form target elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a [Handler]; nil means defaults.
type Options struct {
	// Logger receives debug events; nil discards them.
	Logger *slog.Logger
	// PageSize is how many threads a list page and how many steps a
	// timeline page show; 0 means 50.
	PageSize int
	// Mask hides known secrets in what the pages show of an error; nil
	// masks none.
	Mask *secret.Masker
}

// Handler serves the viewer's pages and assets. Its routes (all GET):
//
//	/                          the thread list (?status=, ?workflow=, ?page=)
//	/threads/{id}              a thread's timeline (?before=<depth> pages back)
//	/threads/{id}/forks        where it came from and what was forked from it
//	/threads/{id}/diff         side by side with its origin, from where they part
//	/workflows                 the registered workflows
//	/workflows/{name}          roles, routing graph (SVG) and versions (?version=, ?thread=)
//	/nodes/{hash}              any node as JSON, its edges as links
//	/steps/{hash}/detail       a step's detail (prompt, raw output, stderr), loaded on demand
//	/static/...                the stylesheet and the script
//
// and /frag/... the parts the script fetches again when the events stream
// says something moved. Mount it at the server's root; the JSON API under
// /api/v1/ is the server's.
type Handler struct {
	eng      *thread.Engine
	log      *slog.Logger
	pageSize int
	tmpl     *template.Template
	mux      *http.ServeMux
	mask     *secret.Masker
}

var _ http.Handler = (*Handler)(nil)

// New returns the viewer over eng. It panics if the embedded templates do
// not parse, which a test catches.
func New(eng *thread.Engine, opts *Options) *Handler {
	if opts == nil {
		opts = &Options{}
	}
	h := &Handler{eng: eng, log: opts.Logger, pageSize: opts.PageSize, mask: opts.Mask}
	if h.mask == nil {
		h.mask = secret.New()
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.pageSize <= 0 {
		h.pageSize = 50
	}
	h.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))
	static, _ := fs.Sub(staticFS, "static")
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", h.threads)
	m.HandleFunc("GET /frag/threads", h.threadsFrag)
	m.HandleFunc("GET /threads/{id}", h.thread)
	m.HandleFunc("GET /frag/threads/{id}", h.threadFrag)
	m.HandleFunc("GET /threads/{id}/forks", h.forks)
	m.HandleFunc("GET /threads/{id}/diff", h.diff)
	m.HandleFunc("GET /workflows", h.workflows)
	m.HandleFunc("GET /workflows/{name}", h.workflow)
	m.HandleFunc("GET /nodes/{hash}", h.node)
	m.HandleFunc("GET /steps/{hash}/detail", h.stepDetail)
	m.Handle("GET /static/", http.StripPrefix("/static/", noListing(http.FileServerFS(static))))
	h.mux = m
	return h
}

// Register mounts the viewer on mux at the routes [Handler] lists; the
// server keeps /api/v1/ for its own.
func Register(mux *http.ServeMux, eng *thread.Engine, opts *Options) {
	h := New(eng, opts)
	for _, p := range routes {
		mux.Handle(p, h)
	}
}

// routes are the patterns the viewer answers, for [Register].
var routes = []string{"GET /{$}", "GET /frag/", "GET /threads/", "GET /workflows", "GET /workflows/", "GET /nodes/", "GET /steps/", "GET /static/"}

// ServeHTTP sets the security headers and serves the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

// noListing refuses a directory (no listing of the embedded files).
func noListing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// render executes template name into a buffer first, so a failure gives a
// clean error page rather than half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var b bytes.Buffer
	if err := h.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// errorPage is what a failed page shows.
type errorPage struct {
	Title  string
	Status int
	Error  string
}

// fail writes an error page whose status says what went wrong: 400 for a
// malformed id, hash or name or a hash of the wrong kind of node, 404 for
// something absent, 500 otherwise.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var bad *badRequest
	switch {
	case errors.As(err, &bad):
		status = http.StatusBadRequest
	case errors.Is(err, cas.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, cas.ErrInvalid):
		// A hash given for a kind of node it is not (as the API's 400).
		status = http.StatusBadRequest
	case errors.Is(err, r.Context().Err()) && r.Context().Err() != nil:
		return // the client went away
	}
	h.log.Debug("viewer page failed", "path", r.URL.Path, "status", status, "err", err)
	var b bytes.Buffer
	if terr := h.tmpl.ExecuteTemplate(&b, "error.html", errorPage{Title: http.StatusText(status), Status: status, Error: h.userError(err.Error())}); terr != nil {
		http.Error(w, h.userError(err.Error()), status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// userError is an error's text as a page shows it: in the user's words
// (internal/usermsg, as the CLI and the API say it), secrets masked.
func (h *Handler) userError(msg string) string {
	return h.mask.String(usermsg.Message(msg))
}

// badRequest is a malformed argument in a URL.
type badRequest struct{ err error }

func (e *badRequest) Error() string { return e.err.Error() }
func (e *badRequest) Unwrap() error { return e.err }

// threadID parses the {id} path value strictly.
func threadID(r *http.Request) (string, error) {
	id, err := thread.ParseID(r.PathValue("id"))
	if err != nil {
		return "", &badRequest{err}
	}
	return id, nil
}

// parseHash parses a hash strictly, naming what it was for.
func parseHash(what, s string) (cas.Hash, error) {
	h, err := cas.ParseHash(s)
	if err != nil {
		return 0, &badRequest{errors.Join(errors.New(what+": not a hash: "+quote(s)), err)}
	}
	return h, nil
}

// quote is strconv.Quote bounded to 80 bytes of input, for messages.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
