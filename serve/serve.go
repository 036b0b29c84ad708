package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/serve/web"
	"github.com/uncaged/uwf/thread"
)

// DefaultAddr is where `uwf serve` listens without --addr.
const DefaultAddr = "127.0.0.1:7464"

// Limits of what a request may carry.
const (
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes = 32 << 10
	// MaxBodyBytes bounds a request's body (a prompt, an edited output).
	MaxBodyBytes = 4 << 20
	// MaxPage bounds a page of threads or steps.
	MaxPage = 1000
	// DefaultPage is a page's size without ?limit=.
	DefaultPage = 50
)

// Options configure a [Server].
type Options struct {
	// Token is what a mutation's "Authorization: Bearer" header must
	// carry (and every request's, when the server is bound beyond
	// loopback). "" generates one: see [Server.Token].
	Token string
	// ExplicitToken says Token was given by the user (--token or the
	// environment): binding beyond loopback needs one.
	ExplicitToken bool
	// Root is the folder the cwd of a thread started through the API lies
	// under; "" means the current directory.
	Root string
	// Run is the template of the step loop's options for background
	// steps (Config, Home, Store, Durability, Secrets); Agent, Seed and
	// Progress are set per request.
	Run thread.RunOptions
	// Engine configures the thread engine; nil means defaults.
	Engine *thread.Options
	// Logger receives the request log at info; nil discards it.
	Logger *slog.Logger
	// Mask hides known secrets in errors sent to clients; nil masks none.
	Mask *secret.Masker
	// Web mounts the viewer's pages; nil means [web.Register] over the
	// server's engine.
	Web func(*http.ServeMux)
}

// Server is `uwf serve` over one store.
type Server struct {
	repo   *cas.Repo
	eng    *thread.Engine
	opts   Options
	token  []byte
	cookie string // the events cookie's value, derived from the token
	root   string
	log    *slog.Logger
	mask   *secret.Masker
	mux    *http.ServeMux
	hub    *hub
	feed   *feed // the events streams' shared watch

	// Set by Serve from the listener.
	loopback bool
	port     string

	// Background steps: their context is cancelled at shutdown, and
	// Serve waits for them.
	jobCtx    context.Context
	jobCancel context.CancelFunc
	jobsWG    sync.WaitGroup
	jobsMu    sync.Mutex
	jobs      map[string]bool // threads with a background step running
}

// New returns a server over repo. It fails only if no token can be
// generated or the root cannot be resolved.
func New(repo *cas.Repo, opts *Options) (*Server, error) {
	s := &Server{repo: repo, jobs: map[string]bool{}, hub: newHub()}
	if opts != nil {
		s.opts = *opts
	}
	s.eng = thread.New(repo, s.opts.Engine)
	s.feed = newFeed(repo)
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mask = s.opts.Mask
	if s.mask == nil {
		s.mask = secret.New()
	}
	tok := s.opts.Token
	if tok == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("generate a token: %w", err)
		}
		tok = base64.RawURLEncoding.EncodeToString(b)
	}
	s.token = []byte(tok)
	s.mask.Add(tok)
	mac := hmac.New(sha256.New, s.token)
	mac.Write([]byte("uwf serve events cookie"))
	s.cookie = base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	root := s.opts.Root
	if root == "" {
		root = "."
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("--root %s: %w", s.opts.Root, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--root %s: not a folder", root)
	}
	s.root = root
	s.jobCtx, s.jobCancel = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.routes()
	if s.opts.Web != nil {
		s.opts.Web(s.mux)
	} else {
		web.Register(s.mux, s.eng, &web.Options{Logger: s.log, Mask: s.mask})
	}
	return s, nil
}

// Token returns the token mutations need (the one given, or the one
// generated). Print it only in the viewer's URL fragment.
func (s *Server) Token() string { return string(s.token) }

// Engine returns the server's thread engine.
func (s *Server) Engine() *thread.Engine { return s.eng }

// ErrNeedToken is returned by [Server.Serve] for a listener beyond
// loopback without an explicit token.
var ErrNeedToken = errors.New("binding beyond loopback needs an explicit --token (or UWF_SERVE_TOKEN)")

// Serve answers requests on ln until ctx is done, then shuts down
// gracefully: it stops accepting, cancels the background steps (each
// leaves its thread as it was or moved forward) and waits for them and for
// the requests in flight (events streams end at once). It returns nil
// after a shutdown asked for by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	s.loopback = ip != nil && ip.IsLoopback()
	s.port = port
	if !s.loopback && !s.opts.ExplicitToken {
		ln.Close()
		return fmt.Errorf("%s: %w", ln.Addr(), ErrNeedToken)
	}
	baseCtx, cancelStreams := context.WithCancel(context.Background())
	defer cancelStreams()
	hs := &http.Server{
		Handler:           s.Handler(),
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.stopJobs()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "jobs", s.runningJobs())
	cancelStreams() // events streams end; their clients reconnect elsewhere
	s.stopJobs()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	<-errc
	return err
}

// stopJobs cancels the background steps and waits for them. The cancel
// is made under jobsMu, as startJob checks the context and adds to jobsWG
// under it: a job is either added before the Wait or refused, never added
// while Wait runs (which would let Serve return with a step still going).
func (s *Server) stopJobs() {
	s.jobsMu.Lock()
	s.jobCancel()
	s.jobsMu.Unlock()
	s.jobsWG.Wait()
}

func (s *Server) runningJobs() int {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	return len(s.jobs)
}

// Wait waits for the background steps started so far (tests use it).
func (s *Server) Wait() { s.jobsWG.Wait() }

// Handler returns the server's handler: the request log, the guards of
// [Server.guard], then the routes.
func (s *Server) Handler() http.Handler {
	return s.logged(s.guard(s.mux))
}

// statusWriter records a response's status and size for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush passes through, for the events stream.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logged logs each request at info: method, path (never the query, which
// a client might put a token in, nor any header), status, size, duration.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", s.mask.String(r.URL.Path)),
			slog.Int("status", sw.status), slog.Int64("bytes", sw.bytes),
			slog.Duration("took", time.Since(began)), slog.String("remote", r.RemoteAddr))
	})
}
