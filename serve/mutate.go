package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// startBody is POST /api/v1/threads.
type startBody struct {
	Workflow string `json:"workflow"` // a registered name or a hash
	Prompt   string `json:"prompt"`
	// Cwd is a folder under the server's --root, relative to it; "" is the
	// root itself. Never an arbitrary path.
	Cwd   string `json:"cwd"`
	Agent string `json:"agent"`
	Seed  int64  `json:"seed"`
	// N is how many steps to run in the background: 0 (the default) until
	// the thread stops, as `thread run`; -1 none, as `thread start`.
	N int `json:"n"`
	// Queue queues the thread for `uwf worker`s instead of running it
	// here (as `thread start --queue`); N is then ignored.
	Queue bool `json:"queue"`
}

// runOptions builds the options of a background step loop from the
// server's template and the request's agent and seed.
func (s *Server) runOptions(agentName string, seed int64, id string) *thread.RunOptions {
	o := s.opts.Run
	o.Agent, o.Seed = agentName, seed
	o.HumanIn, o.HumanOut = nil, nil
	o.Progress = func(ev thread.Event) { s.hub.publish("progress", id, ev) }
	return &o
}

// cwdUnder resolves a start's cwd under the root: a relative, local path
// to an existing folder.
func (s *Server) cwdUnder(rel string) (string, error) {
	if rel == "" {
		return s.root, nil
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", badRequestf("invalid cwd %q: want a folder under the server's root, relative to it", rel)
	}
	dir := filepath.Join(s.root, filepath.FromSlash(rel))
	// A symbolic link must not lead out of the root.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", badRequestf("invalid cwd %q: not a folder under the server's root", rel)
	}
	rootReal, err := filepath.EvalSymlinks(s.root)
	if err != nil {
		return "", err
	}
	if r, err := filepath.Rel(rootReal, real); err != nil || !filepath.IsLocal(r) && r != "." {
		return "", badRequestf("invalid cwd %q: it leads out of the server's root", rel)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", badRequestf("invalid cwd %q: not a folder under the server's root", rel)
	}
	return dir, nil
}

func (s *Server) handleStart(w http.ResponseWriter, r *http.Request) {
	var b startBody
	if err := decodeBody(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Workflow == "" {
		s.fail(w, r, badRequestf("workflow is required: a registered name or a hash"))
		return
	}
	if b.N < -1 {
		s.fail(w, r, badRequestf("invalid n %d: want -1 (start only), 0 (until it stops) or more", b.N))
		return
	}
	if err := checkAgentName(b.Agent); err != nil {
		s.fail(w, r, err)
		return
	}
	cwd, err := s.cwdUnder(b.Cwd)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// A registered name or a hash, never a file: Resolve would read a
	// path on the server's disk.
	if !registry.ValidName(b.Workflow) {
		if _, err := cas.ParseHash(b.Workflow); err != nil {
			s.fail(w, r, badRequestf("invalid workflow %q: want a registered name or a hash", b.Workflow))
			return
		}
	}
	ctx := r.Context()
	res, err := s.eng.Registry().Show(ctx, b.Workflow)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if b.N >= 0 {
		// As thread run: an agent that cannot run is refused before the
		// thread is created.
		if err := s.eng.CheckRun(ctx, res.Hash, cwd, s.runOptions(b.Agent, b.Seed, "")); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	id, head, err := s.eng.Start(ctx, res.Hash, b.Prompt, cwd)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := thread.StartJSON{Thread: id, Head: head, Workflow: res.Hash}
	if b.Queue {
		if _, err := s.eng.Enqueue(ctx, id, thread.EnqueueOptions{Agent: b.Agent}); err != nil {
			s.failCreated(w, r, out, "queued", err)
			return
		}
		w.Header().Set("Location", "/api/v1/threads/"+id)
		writeJSON(w, http.StatusAccepted, out)
		return
	}
	if b.N < 0 {
		writeJSON(w, http.StatusCreated, out)
		return
	}
	if err := s.startJob(id, b.N, s.runOptions(b.Agent, b.Seed, id)); err != nil {
		s.failCreated(w, r, out, "stepped", err)
		return
	}
	w.Header().Set("Location", "/api/v1/threads/"+id)
	writeJSON(w, http.StatusAccepted, out)
}

// failCreated answers a start whose thread was created but could not be
// stepped or queued (the server shutting down: 503): the error's status,
// and the body names the thread and its head besides the error, with a
// Location, so that the client can step, queue or remove it.
func (s *Server) failCreated(w http.ResponseWriter, r *http.Request, out thread.StartJSON, not string, err error) {
	// The cause without its own "thread <id>: ", which the message says.
	why := strings.TrimPrefix(err.Error(), "thread "+out.Thread+": ")
	err = &wrapped{fmt.Sprintf("thread %s was created (head %s) but not %s: %s", out.Thread, out.Head, not, why), err}
	st := statusOf(err)
	if st >= 500 {
		s.log.Warn("request failed", "method", r.Method, "path", s.mask.String(r.URL.Path), "error", s.mask.String(err.Error()))
	}
	w.Header().Set("Location", "/api/v1/threads/"+out.Thread)
	writeJSON(w, st, errorJSON{Error: s.userError(err.Error()), Status: st, Thread: out.Thread, Head: out.Head})
}

// checkAgentName checks an agent name's form before anything is read: a
// replay:<thread> needs a thread id.
func checkAgentName(name string) error {
	if rest, ok := strings.CutPrefix(name, "replay:"); ok {
		if _, err := thread.ParseID(rest); err != nil {
			return badRequestf("invalid agent %q: replay:<thread> needs a thread id: %s", name, badIDReason)
		}
	}
	if len(name) > 200 || strings.ContainsAny(name, "\x00\n\r") {
		return badRequestf("invalid agent %q", name)
	}
	return nil
}

// stepBody is POST /api/v1/threads/{id}/step.
type stepBody struct {
	N     int    `json:"n"` // steps to run: 0 until the thread stops; 1 by default
	Agent string `json:"agent"`
	Seed  int64  `json:"seed"`
	Queue bool   `json:"queue"` // queue it for `uwf worker`s instead (n is ignored)
}

// acceptedJSON answers a step: the thread and the head it steps from.
type acceptedJSON struct {
	Thread string   `json:"thread"`
	Head   cas.Hash `json:"head"`
	N      int      `json:"n"`
}

func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b := stepBody{N: 1}
	if err := decodeBody(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.N < 0 {
		s.fail(w, r, badRequestf("invalid n %d: want 0 or more", b.N))
		return
	}
	if err := checkAgentName(b.Agent); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	opts := s.runOptions(b.Agent, b.Seed, id)
	if err := s.eng.CheckAgent(ctx, opts); err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.eng.Show(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if info.Status != thread.StatusActive {
		s.fail(w, r, fmt.Errorf("thread %s is %s: %w (resume it, or fork it to go on)", id, info.Status, thread.ErrNotActive))
		return
	}
	if b.Queue {
		if _, err := s.eng.Enqueue(ctx, id, thread.EnqueueOptions{Agent: b.Agent}); err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Location", "/api/v1/threads/"+id)
		writeJSON(w, http.StatusAccepted, acceptedJSON{id, info.Head, b.N})
		return
	}
	if err := s.startJob(id, b.N, opts); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/threads/"+id)
	writeJSON(w, http.StatusAccepted, acceptedJSON{id, info.Head, b.N})
}

// errBusy is a step asked for while this server is stepping the thread.
var errBusy = fmt.Errorf("%w: this server is already stepping the thread", cas.ErrConflict)

// startJob steps thread id up to n times (0: until it stops) in the
// background, under the server's job context: shutdown cancels it, and
// the engine leaves the thread as it was or moved forward. Its end is
// published on the events stream as a "job" event.
func (s *Server) startJob(id string, n int, opts *thread.RunOptions) error {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	if s.jobs[id] {
		return fmt.Errorf("thread %s: %w", id, errBusy)
	}
	if s.jobCtx.Err() != nil {
		return fmt.Errorf("thread %s: %w: the server is shutting down", id, context.Canceled)
	}
	// On a store where workers may run (version 2: it has run records),
	// run under a lease, so no worker runs the thread at once; a version-1
	// store has no queue, and running leaves it at version 1.
	var lease *thread.Lease
	queued := false // the thread was queued for workers before this run
	if v, err := s.eng.Repo().FormatVersion(s.jobCtx); err == nil && v >= cas.FormatV2 {
		if prior, err := s.eng.RunOf(s.jobCtx, id); err == nil && prior != nil {
			queued = true
		}
		if lease, err = s.eng.Acquire(s.jobCtx, id, s.leaseName(), &thread.LeaseOptions{Agent: opts.Agent}); err != nil {
			return err
		}
	}
	s.jobs[id] = true
	s.jobsWG.Add(1)
	go func() {
		defer s.jobsWG.Done()
		began := time.Now()
		ctx, stopLease := s.jobCtx, func() {}
		if lease != nil {
			ctx, stopLease = lease.Keep(s.jobCtx)
		}
		rs, err := s.eng.StepN(ctx, id, n, opts)
		if lease != nil {
			stopLease()
			if lost := lease.Err(); lost != nil {
				err = errors.Join(err, lost)
			} else if rerr := s.giveBack(lease, queued, rs); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		s.jobsMu.Lock()
		delete(s.jobs, id)
		s.jobsMu.Unlock()
		end := jobJSON{Thread: id, Steps: len(rs), Ms: time.Since(began).Milliseconds()}
		if len(rs) > 0 {
			last := rs[len(rs)-1]
			end.Kind, end.Head = last.Kind, last.Head
		}
		if err != nil {
			end.Error = s.userError(err.Error())
			s.log.Info("background step ended", "thread", id, "steps", len(rs), "error", end.Error)
		} else {
			s.log.Info("background step ended", "thread", id, "steps", len(rs), "kind", end.Kind)
		}
		s.hub.publish("job", id, end)
	}()
	return nil
}

// leaseName is the lease holder's name of this server's runs.
func (s *Server) leaseName() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "host"
	}
	return fmt.Sprintf("serve-%s-%d", host, os.Getpid())
}

// giveBack ends a lease after a background run: a thread that was queued
// before (for workers) goes back to the queue unless it stopped; otherwise
// the record is deleted.
func (s *Server) giveBack(l *thread.Lease, queued bool, rs []*thread.StepResult) error {
	ctx := context.WithoutCancel(s.jobCtx)
	stopped := len(rs) > 0 && rs[len(rs)-1].Kind != thread.EventStep
	if queued && !stopped {
		return l.Requeue(ctx, "stepped by the HTTP API")
	}
	return l.Release(ctx, "run by the HTTP API")
}

// jobJSON is a "job" event: a background step loop ended.
type jobJSON struct {
	Thread string   `json:"thread"`
	Steps  int      `json:"steps"`
	Kind   string   `json:"kind,omitempty"` // the last result: step, done, suspended or limit
	Head   cas.Hash `json:"head,omitzero"`
	Error  string   `json:"error,omitempty"`
	Ms     int64    `json:"elapsedMs"`
}

// killBody is the body of kill and suspend.
type killBody struct {
	Reason string `json:"reason"`
}

type resumeBody struct {
	Prompt string `json:"prompt"`
}

type hashJSON struct {
	Hash cas.Hash `json:"hash"`
}

func (s *Server) handleKill(w http.ResponseWriter, r *http.Request) {
	s.handleMark(w, r, s.eng.Kill)
}

func (s *Server) handleSuspend(w http.ResponseWriter, r *http.Request) {
	s.handleMark(w, r, s.eng.Suspend)
}

// handleMark appends the mark that mark makes, with the body's reason.
func (s *Server) handleMark(w http.ResponseWriter, r *http.Request, mark func(ctx context.Context, id, reason string) (cas.Hash, error)) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b killBody
	if err := decodeBody(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	h, err := mark(r.Context(), id, b.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hashJSON{h})
}

func (s *Server) handleResume(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b resumeBody
	if err := decodeBody(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	h, err := s.eng.Resume(r.Context(), id, b.Prompt)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hashJSON{h})
}

// forkBody is POST /api/v1/threads/{id}/fork: at a depth of the thread, or
// at a node of its chain by hash; with output, the node must be a step
// and the fork's head is that step with its output edited.
type forkBody struct {
	At     *int            `json:"at"`
	Node   string          `json:"node"`
	Output json.RawMessage `json:"output"`
}

func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b forkBody
	if err := decodeBody(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if (b.At == nil) == (b.Node == "") {
		s.fail(w, r, badRequestf("fork needs exactly one of at (a depth) and node (a hash)"))
		return
	}
	ctx := r.Context()
	head, err := s.eng.Head(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var at *thread.Node
	if b.At != nil {
		if *b.At < 0 {
			s.fail(w, r, badRequestf("invalid at %d: want 0 or more", *b.At))
			return
		}
		if at, err = s.eng.Ancestor(ctx, head, *b.At); err != nil {
			s.fail(w, r, err)
			return
		}
	} else {
		h, err := parseHash("node", b.Node)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		n, err := s.eng.Node(ctx, h)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if at, err = s.eng.Ancestor(ctx, head, n.Depth()); err != nil || at.Hash != h {
			s.fail(w, r, badRequestf("node %s is not on thread %s's chain", h, id))
			return
		}
	}
	var out thread.ForkJSON
	if len(b.Output) > 0 {
		v, err := cas.ParseJSON(b.Output)
		if err != nil {
			s.fail(w, r, badRequestf("invalid output: %v", err))
			return
		}
		out.Thread, out.Head, err = s.eng.ForkEdit(ctx, id, at.Hash, v)
		if err != nil {
			s.fail(w, r, err)
			return
		}
	} else {
		if out.Thread, err = s.eng.Fork(ctx, at.Hash, id); err != nil {
			s.fail(w, r, err)
			return
		}
		out.Head = at.Hash
	}
	w.Header().Set("Location", "/api/v1/threads/"+out.Thread)
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleRm(w http.ResponseWriter, r *http.Request) {
	id, err := threadID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := decodeBody(w, r, &struct{}{}); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.eng.Remove(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, thread.RemovedJSON{Thread: id, Removed: true})
}

// wrapped is an error with a message of its own over the one it wraps.
type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }
