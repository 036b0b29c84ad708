package disk_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestStepFlushes pins the flushes of a strict thread step, made through the
// calls `uwf thread step` makes: one Repo.PutNodes of the step's nodes (the
// prompt, the raw output, the output, the detail and the step, each with
// edges to the ones before it and the step to the thread's head), then one
// CompareAndSwap of the thread's ref from the old head to the new step.
// With syncfs a step makes four flushes, whichever folders its nodes land
// in: two for the nodes (their files, then their folders' entries), two
// for the ref move (the log line with the new ref file, then the ref's
// folder). Without syncfs (macOS) it syncs each file and folder instead,
// and stays correct (TestDurabilityBatch, TestDurabilityRefChange).
func TestStepFlushes(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys atomicfile.FS
		pool bool
		max  int // flushes per step
	}{
		{"syncfs", atomicfile.OS, false, 4},
		// 5 temporary files, up to 5 shard folders and objects/, then
		// the log line, the journal record, the new ref file and the
		// ref's folder.
		{"portable", atomicfile.Portable, false, 5 + 6 + 4},
		{"pool", atomicfile.OS, true, 5 + 6 + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rec := recordedOn(t, disk.DurabilityStrict, tc.pool, tc.fsys)
			ctx := t.Context()
			repo, err := cas.Open(ctx, s, s.Refs(), nil)
			if err != nil {
				t.Fatal(err)
			}
			typ, err := repo.PutSchema(ctx, "stepnode", refsSchema)
			if err != nil {
				t.Fatal(err)
			}
			const ref = "threads/01JBQZ4V6Y8D0C5X9N2M7K3H1G"
			head, err := repo.Put(ctx, typ, map[string]any{"refs": []any{}, "start": true})
			if err != nil {
				t.Fatal(err)
			}
			mustCAS(t, s.Refs(), ref, 0, head, "start")
			lo, hi := 1<<30, 0
			for step := range 6 {
				rec.Reset()
				prompt := cas.Node{Type: cas.ContentSchema, Payload: fmt.Sprintf("prompt %d", step)}
				raw := cas.Node{Type: cas.ContentSchema, Payload: fmt.Sprintf("---\nstatus: done\n---\nraw %d", step)}
				hp, _ := prompt.Hash()
				hr, _ := raw.Hash()
				out := cas.Node{Type: typ, Payload: map[string]any{"refs": []any{}, "status": "done", "step": step}}
				ho, _ := out.Hash()
				det := cas.Node{Type: typ, Payload: map[string]any{"refs": []any{hp.String(), hr.String()}}}
				hd, _ := det.Hash()
				st := cas.Node{Type: typ, Payload: map[string]any{"refs": []any{head.String(), ho.String(), hd.String()}}}
				hs, err := repo.PutNodes(ctx, []cas.Node{prompt, raw, out, det, st})
				if err != nil {
					t.Fatal(err)
				}
				next := hs[len(hs)-1]
				mustCAS(t, s.Refs(), ref, head, next, "step")
				head = next
				ops := rec.Ops()
				n := flushes(ops)
				if n > tc.max {
					t.Errorf("step %d: %d flushes, want at most %d:%s", step, n, tc.max, dump(ops))
				}
				lo, hi = min(lo, n), max(hi, n)
				// Whatever the count, every node is durable before the
				// ref moves to the step.
				move := -1
				for i, op := range ops {
					if op.Kind == "rename" && op.To == "refs/"+strings.ToLower(ref) && !op.Err {
						move = i
					}
				}
				if move < 0 {
					t.Fatalf("step %d: the ref did not move:%s", step, dump(ops))
				}
				for _, op := range ops[:move] {
					if op.Kind == "publish" && !op.Err && !dataDurable(ops, move, op.Path) {
						t.Errorf("step %d: %s: not durable before the ref moves:%s", step, op, dump(ops))
					}
				}
				for _, h := range hs {
					file, _ := objRel(h)
					if !entryDurable(ops, move, file) {
						t.Errorf("step %d: node %s is not durable before the ref moves:%s", step, h, dump(ops))
					}
				}
			}
			if tc.name == "syncfs" && (lo != tc.max || hi != tc.max) {
				t.Errorf("a step made %d to %d flushes, want exactly %d", lo, hi, tc.max)
			}
		})
	}
}
