package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/serve/web"
	"github.com/uncaged/uwf/thread"
)

// longThread commits n hostile-free steps to a new thread of the evil
// workflow (manual nodes: fast) and returns its id.
func (e *env) longThread(b testing.TB, n int) string {
	st, err := e.eng.Registry().LoadStored(e.ctx, e.evilWF)
	if err != nil {
		b.Fatal(err)
	}
	id, head, err := e.eng.Start(e.ctx, e.evilWF, "a long thread", "/tmp")
	if err != nil {
		b.Fatal(err)
	}
	d := &thread.Detail{Prompt: e.put(cas.ContentSchema, "the prompt"), Raw: e.put(cas.ContentSchema, "---\nstatus: done\ntext: hi\n---\n# Done\n\nA *short* body with `code`.\n"), EdgePrompt: "write", DurationMs: 5}
	det := e.put(cas.DetailSchema, d.Payload())
	out := e.put(st.Schemas["writer"], map[string]any{"status": "done", "text": "hi"})
	for i := 0; i < n; i++ {
		c, err := e.eng.Next(e.ctx, head)
		if err != nil {
			b.Fatal(err)
		}
		s := &thread.Step{Chain: c, Role: "writer", Agent: "synth", Output: out, Detail: det, StartedAt: int64(i), CompletedAt: int64(i + 5)}
		h := e.put(cas.StepSchema, s.Payload())
		if err := e.eng.Commit(e.ctx, id, h, "step"); err != nil {
			b.Fatal(err)
		}
		head = h
	}
	return id
}

// BenchmarkViewerThreadPage renders a thread's page (the newest 50 entries of a
// 5,000-step thread, markdown and graph included) beside the library
// reading the same nodes, in the same run: compare ns/op.
func BenchmarkViewerThreadPage(b *testing.B) {
	e := newEnv(b)
	id := e.longThread(b, 5000)
	h := web.New(e.eng, nil)
	b.Run("page", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/threads/"+id, nil))
			if w.Code != 200 {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			info, err := e.eng.Show(e.ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			k := 0
			for n, err := range e.eng.NewestFirst(e.ctx, info.Head) {
				if err != nil {
					b.Fatal(err)
				}
				if k++; k > 50 {
					break
				}
				if n.Step != nil {
					for _, x := range []cas.Hash{n.Step.Output, n.Step.Detail} {
						if _, err := e.repo.Get(e.ctx, x); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		}
	})
}
