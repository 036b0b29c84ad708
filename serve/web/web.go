// Package web is the viewer `uwf serve` serves at /: pages embedded in the
// binary, over the thread engine the API uses.
package web

import (
	"io"
	"log/slog"
	"net/http"

	"github.com/uncaged/uwf/thread"
)

// Options configure the viewer; nil means defaults.
type Options struct {
	// Logger receives debug events; nil discards them.
	Logger *slog.Logger
}

// Register mounts the viewer's pages on mux. The API under /api/v1/ is
// the server's; every other GET path is the viewer's.
func Register(mux *http.ServeMux, eng *thread.Engine, opts *Options) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	})
}

const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>uwf</title></head>
<body><h1>uwf</h1><p>The JSON API is under <a href="/api/v1/threads">/api/v1/</a>.</p></body></html>
`
