package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// routes registers the API. docs/HTTP.md has the same table.
func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /api/v1/threads", s.handleThreads)
	m.HandleFunc("POST /api/v1/threads", s.handleStart)
	m.HandleFunc("GET /api/v1/threads/{id}", s.handleThread)
	m.HandleFunc("GET /api/v1/threads/{id}/steps", s.handleSteps)
	m.HandleFunc("GET /api/v1/threads/{id}/read", s.handleRead)
	m.HandleFunc("GET /api/v1/threads/{id}/log", s.handleThreadLog)
	m.HandleFunc("POST /api/v1/threads/{id}/step", s.handleStep)
	m.HandleFunc("POST /api/v1/threads/{id}/kill", s.handleKill)
	m.HandleFunc("POST /api/v1/threads/{id}/suspend", s.handleSuspend)
	m.HandleFunc("POST /api/v1/threads/{id}/resume", s.handleResume)
	m.HandleFunc("POST /api/v1/threads/{id}/fork", s.handleFork)
	m.HandleFunc("POST /api/v1/threads/{id}/rm", s.handleRm)
	m.HandleFunc("GET /api/v1/steps/{hash}", s.handleStepView)
	m.HandleFunc("GET /api/v1/nodes/{hash}", s.handleNode)
	m.HandleFunc("GET /api/v1/workflows", s.handleWorkflows)
	m.HandleFunc("GET /api/v1/workflows/{name}", s.handleWorkflow)
	m.HandleFunc("GET /api/v1/refs", s.handleRefs)
	m.HandleFunc("GET /api/v1/refs/{name...}", s.handleRef)
	m.HandleFunc("GET /api/v1/events", s.handleEvents)
	m.HandleFunc("POST /api/v1/session", s.handleSession)
	m.HandleFunc("GET "+bootstrapPath, s.handleBootstrap)
	m.HandleFunc("/api/", s.handleNoRoute)
}

// handleNoRoute answers what no route takes: 405 with Allow for a path a
// route takes with another method, else 404.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		r2 := r.Clone(r.Context())
		r2.Method = method
		if _, p := s.mux.Handler(r2); p != "" && p != "/api/" {
			allow = append(allow, method)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "%s %s: method not allowed (want %s)", r.Method, r.URL.Path, strings.Join(allow, " or "))
		return
	}
	writeError(w, http.StatusNotFound, "no route %s %s (see docs/HTTP.md)", r.Method, r.URL.Path)
}

// Parsing of path and query values: each is checked strictly before it
// touches the store, with the CLI's messages.

const badIDReason = "want a ULID, 26 characters of Crockford Base32 (as thread list prints them)"

func threadID(r *http.Request) (string, error) {
	arg := r.PathValue("id")
	id, err := thread.ParseID(arg)
	if err != nil {
		return "", badRequestf("invalid thread id %q: %s", arg, badIDReason)
	}
	return id, nil
}

func parseHash(what, arg string) (cas.Hash, error) {
	h, err := cas.ParseHash(arg)
	if err != nil {
		return 0, &badRequest{fmt.Errorf("invalid %s: %w", what, err)}
	}
	return h, nil
}

// limitParam reads ?limit= (1 to MaxPage; DefaultPage if absent).
func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return DefaultPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPage {
		return 0, badRequestf("invalid limit %q: want 1 to %d", v, MaxPage)
	}
	return n, nil
}

// decodeBody reads a JSON object of at most MaxBodyBytes into v, refusing
// unknown fields and trailing data. An empty body is an empty object.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return badRequestf("Content-Type %q: want application/json", ct)
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return badRequestf("read the body: %v", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return badRequestf("invalid JSON body: %v", err)
	}
	if dec.More() {
		return badRequestf("invalid JSON body: more than one value")
	}
	return nil
}

// threadsJSON is GET /api/v1/threads: a page of thread list's elements,
// the id to pass as before for the next page (null on the last), and the
// threads left out as damaged (thread list names them on stderr).
type threadsJSON struct {
	Threads []thread.InfoJSON `json:"threads"`
	Next    *string           `json:"next"`
	LeftOut []string          `json:"leftOut"`
}

func (s *Server) handleThreads(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := limitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	opts := thread.ListOptions{Status: q.Get("status"), Workflow: q.Get("workflow"), Limit: limit + 1}
	if err := thread.CheckListStatus(opts.Status); err != nil {
		s.fail(w, r, badRequestf("invalid status %q: %v", opts.Status, err))
		return
	}
	if wf := opts.Workflow; wf != "" && !registry.ValidName(wf) {
		if _, err := cas.ParseHash(wf); err != nil {
			s.fail(w, r, badRequestf("invalid workflow %q: want a workflow name or hash", wf))
			return
		}
	}
	if b := q.Get("before"); b != "" {
		if opts.Before, err = thread.ParseID(b); err != nil {
			s.fail(w, r, badRequestf("invalid before %q: %s", b, badIDReason))
			return
		}
	}
	infos, listErr := s.eng.List(r.Context(), opts)
	if listErr != nil && infos == nil {
		s.fail(w, r, listErr)
		return
	}
	out := threadsJSON{Threads: []thread.InfoJSON{}, LeftOut: []string{}}
	for i, info := range infos {
		if i == limit {
			out.Next = &infos[i-1].ID
			break
		}
		if info.Err != nil {
			out.LeftOut = append(out.LeftOut, s.userError(fmt.Sprintf("thread %s skipped: %v", info.ID, info.Err)))
			continue
		}
		out.Threads = append(out.Threads, info.JSON())
	}
	if listErr != nil {
		out.LeftOut = append(out.LeftOut, s.userError(listErr.Error()))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleThread(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.eng.Show(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info.ShowJSON())
}

func (s *Server) handleSteps(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := limitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var before cas.Hash
	if b := r.URL.Query().Get("before"); b != "" {
		if before, err = parseHash("before", b); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	p, err := s.eng.Page(r.Context(), id, before, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) handleRead(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	opts := thread.ReadOptions{Quota: thread.DefaultQuota}
	q := r.URL.Query()
	if v := q.Get("quota"); v != "" {
		if opts.Quota, err = strconv.Atoi(v); err != nil || opts.Quota <= 0 {
			s.fail(w, r, badRequestf("invalid quota %q: want a positive number", v))
			return
		}
	}
	if b := q.Get("before"); b != "" {
		if opts.Before, err = parseHash("before", b); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	rd, err := s.eng.Read(r.Context(), id, opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rd.JSON())
}

func (s *Server) handleThreadLog(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeLog(w, r, thread.ThreadPrefix+id)
}

func (s *Server) writeLog(w http.ResponseWriter, r *http.Request, name string) {
	entries, err := s.repo.Refs().Log(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if entries == nil {
		entries = []cas.LogEntry{}
	}
	writeJSON(w, http.StatusOK, entries)
}

func (s *Server) handleStepView(w http.ResponseWriter, r *http.Request) {
	h, err := parseHash("step hash", r.PathValue("hash"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.eng.StepView(r.Context(), h)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, err := v.JSON()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// nodeJSON is GET /api/v1/nodes/{hash}: `cas get --json`'s object and the
// node's edges (the hashes its payload refers to, with their JSON paths).
type nodeJSON struct {
	*cas.NodeJSON
	Edges []cas.Edge `json:"edges"` // as `cas refs --json`
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) {
	h, err := parseHash("hash", r.PathValue("hash"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	n, err := s.repo.Get(ctx, h)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, err := n.JSON(h)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	edges, err := s.repo.Edges(ctx, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if edges == nil {
		edges = []cas.Edge{}
	}
	out := nodeJSON{NodeJSON: j, Edges: edges}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleWorkflows(w http.ResponseWriter, r *http.Request) {
	entries, err := s.eng.Registry().List(r.Context())
	if err != nil && entries == nil {
		s.fail(w, r, err)
		return
	}
	if err != nil {
		s.log.Warn("workflows left out", "error", s.mask.String(err.Error()))
	}
	out := []registry.EntryJSON{}
	for _, e := range entries {
		out = append(out, e.JSON())
	}
	writeJSON(w, http.StatusOK, out)
}

// workflowJSON is GET /api/v1/workflows/{name}: `workflow show --json`'s
// object, its graph and its versions (`workflow history --json`).
type workflowJSON struct {
	*registry.StoredJSON
	Graph    registry.GraphJSON     `json:"graph"`
	Versions []registry.VersionJSON `json:"versions"`
}

func (s *Server) handleWorkflow(w http.ResponseWriter, r *http.Request) {
	arg := r.PathValue("name")
	if !registry.ValidName(arg) {
		if _, err := cas.ParseHash(arg); err != nil {
			s.fail(w, r, badRequestf("invalid workflow %q: want a name ([A-Za-z0-9][A-Za-z0-9._-]*, at most %d characters) or a hash", arg, registry.MaxNameLen))
			return
		}
	}
	ctx := r.Context()
	reg := s.eng.Registry()
	st, err := reg.Show(ctx, arg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, err := st.JSON()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := workflowJSON{StoredJSON: j, Graph: st.Graph(), Versions: []registry.VersionJSON{}}
	if st.Name != "" {
		versions, err := reg.History(ctx, st.Name)
		if err != nil && !errors.Is(err, cas.ErrNotFound) {
			s.fail(w, r, err)
			return
		}
		for _, v := range versions {
			out.Versions = append(out.Versions, v.JSON())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleRefs(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	if prefix != "" {
		if err := cas.ValidateRefName(strings.TrimSuffix(prefix, "/") + "/x"); err != nil {
			s.fail(w, r, badRequestf("invalid prefix %q: %v", prefix, err))
			return
		}
	}
	out := []cas.Ref{}
	for ref, err := range s.repo.Refs().List(r.Context(), prefix) {
		if errors.Is(err, cas.ErrBadRef) {
			s.log.Warn("ref left out", "error", s.mask.String(err.Error()))
			continue
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out = append(out, ref)
	}
	writeJSON(w, http.StatusOK, out)
}

// refLogJSON is GET /api/v1/refs/{name}: the ref's target (null if it was
// deleted) and its log (`cas ref log --json`).
type refLogJSON struct {
	Name string            `json:"name"`
	Hash thread.HashOrNull `json:"hash"`
	Log  []cas.LogEntry    `json:"log"`
}

func (s *Server) handleRef(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := cas.ValidateRefName(name); err != nil {
		s.fail(w, r, &badRequest{err})
		return
	}
	ctx := r.Context()
	h, err := s.repo.Refs().Get(ctx, name)
	if err != nil && !errors.Is(err, cas.ErrNotFound) {
		s.fail(w, r, err)
		return
	}
	entries, lerr := s.repo.Refs().Log(ctx, name)
	if lerr != nil && !errors.Is(lerr, cas.ErrNotFound) {
		s.fail(w, r, lerr)
		return
	}
	if err != nil && len(entries) == 0 {
		s.fail(w, r, err)
		return
	}
	if entries == nil {
		entries = []cas.LogEntry{}
	}
	writeJSON(w, http.StatusOK, refLogJSON{name, thread.HashOrNull(h), entries})
}
