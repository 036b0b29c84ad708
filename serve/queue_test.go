package serve_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/thread"
)

// TestQueueAndLeases: "queue": true queues for workers; the list filters
// by run; a step of a thread a worker leases is 409 naming the worker; on
// a version-2 store the server runs a thread under a lease of its own and
// gives it back.
func TestQueueAndLeases(t *testing.T) {
	e := newEnv(t, "memory")
	e.reviewLoop()
	r := e.do("POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"queued","agent":"synth","queue":true}`, true)
	if r.status != 202 {
		t.Fatalf("start with queue: %d %s", r.status, r.body)
	}
	var st thread.StartJSON
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		t.Fatal(err)
	}
	var show thread.ShowJSON
	e.getJSON("/api/v1/threads/"+st.Thread, &show)
	if show.Run != "queued" || show.RunRecord == nil || show.RunRecord.Agent != "synth" || show.Depth != 0 {
		t.Errorf("queued thread = %+v (run record %+v)", show, show.RunRecord)
	}
	var page struct{ Threads []thread.InfoJSON }
	e.getJSON("/api/v1/threads?status=queued", &page)
	if len(page.Threads) != 1 || page.Threads[0].ID != st.Thread {
		t.Errorf("status=queued lists %+v", page.Threads)
	}
	if r := e.do("GET", "/api/v1/threads?status=busy", "", false); r.status != 400 || !strings.Contains(r.body, "queued, running") {
		t.Errorf("status=busy: %d %s", r.status, r.body)
	}
	// A worker holds it: the server will not step it.
	l, err := e.eng.Claim(t.Context(), st.Thread, "w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", "/api/v1/threads/"+st.Thread+"/step", `{"agent":"synth"}`, true); r.status != 409 || !strings.Contains(r.body, "worker w1") {
		t.Errorf("step of a leased thread: %d %s", r.status, r.body)
	}
	if err := l.Release(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	// The store is at version 2 now: the server runs under a lease.
	r = e.do("POST", "/api/v1/threads", `{"workflow":"review-loop","prompt":"run here","agent":"synth"}`, true)
	if r.status != 202 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := e.eng.Show(t.Context(), st.Thread)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == thread.StatusDone && info.Run == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's run did not end: %+v", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, err := e.eng.Log(t.Context(), st.Thread)
	if err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1].Message; !strings.Contains(last, "(worker serve-") {
		t.Errorf("the server's commit %q does not name its lease", last)
	}
	rlog, err := e.repo.Refs().Log(t.Context(), thread.RunPrefix+st.Thread)
	if err != nil || len(rlog) < 2 || !strings.HasPrefix(rlog[0].Message, "acquire by serve-") || !strings.HasPrefix(rlog[len(rlog)-1].Message, "release by serve-") {
		t.Errorf("runs/ log = %+v, %v", rlog, err)
	}
}
