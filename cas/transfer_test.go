package cas_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

// transferFixture fills a store with a little of everything an export
// carries: schemas, a chain of notes, refs moved a few times, a deleted
// ref, a loose node.
type transferFixture struct {
	*fixture
	note, leaf, mid, top, loose, old cas.Hash
}

func newTransferFixture(t *testing.T) *transferFixture {
	t.Helper()
	f := &transferFixture{fixture: newFixture(t)}
	f.note = f.schema("note", mustJSON(t, noteSchema))
	f.leaf = f.put(f.note, map[string]any{"title": "leaf", "body": f.text("leaf body").String()})
	f.mid = f.put(f.note, map[string]any{"title": "mid", "body": f.text("mid body").String(), "links": []any{f.leaf.String()}})
	f.old = f.put(f.note, map[string]any{"title": "old top", "body": f.text("old body").String()})
	f.clock.Advance(time.Second)
	f.setRef("notes/top", f.old)
	f.clock.Advance(time.Second)
	f.top = f.put(f.note, map[string]any{"title": "top", "body": f.text("top body ünïcødé <&>").String(), "links": []any{f.mid.String()}})
	f.setRef("notes/top", f.top)
	f.setRef("notes/mid", f.mid)
	f.clock.Advance(time.Second)
	f.setRef("threads/gone", f.leaf)
	f.clock.Advance(time.Second)
	if err := f.repo.Refs().CompareAndSwap(f.ctx, "threads/gone", f.leaf, 0, "rm\nwith a second line"); err != nil {
		t.Fatal(err)
	}
	f.loose = f.text("loose")
	return f
}

func export(t *testing.T, r *cas.Repo, roots ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := cas.Export(t.Context(), r, &buf, roots); err != nil {
		t.Fatalf("Export(%q): %v", roots, err)
	}
	return buf.Bytes()
}

func mustImport(t *testing.T, r *cas.Repo, data []byte, opts *cas.ImportOptions) *cas.ImportReport {
	t.Helper()
	rep, err := cas.Import(t.Context(), r, bytes.NewReader(data), opts)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return rep
}

// tarEntry is one entry of a tar read back.
type tarEntry struct {
	name string
	data []byte
}

// readTar returns the entries of an export, checking their fixed metadata
// and that the tar ends with its end record.
func readTar(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	var out []tarEntry
	end := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			if !end {
				t.Errorf("the tar lacks its end record")
			}
			return out
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		if end {
			t.Errorf("%s after the end record", hdr.Name)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			end = hdr.Name == "uwf-export-end" && hdr.PAXRecords["UWF.objects"] != ""
			if !end {
				t.Errorf("unexpected global header %s %v", hdr.Name, hdr.PAXRecords)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Mode != 0o644 || !hdr.ModTime.Equal(time.Unix(0, 0)) || hdr.Uid != 0 || hdr.Uname != "" {
			t.Errorf("%s: mode %o, mtime %v, uid %d, user %q; want fixed metadata", hdr.Name, hdr.Mode, hdr.ModTime, hdr.Uid, hdr.Uname)
		}
		out = append(out, tarEntry{hdr.Name, b})
	}
}

// storeState is everything of a store an export carries.
type storeState struct {
	objects map[cas.Hash]int64
	refs    []cas.Ref
	logs    map[string][]cas.LogEntry
}

func stateOf(t *testing.T, st cas.Store, refs cas.Refs) storeState {
	t.Helper()
	ctx := t.Context()
	s := storeState{objects: map[cas.Hash]int64{}, logs: map[string][]cas.LogEntry{}}
	for o, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		s.objects[o.Hash] = o.Size
	}
	for ref, err := range refs.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		s.refs = append(s.refs, ref)
	}
	for name, err := range refs.Logs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		log, err := refs.Log(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		s.logs[name] = log
	}
	return s
}

// sameState fails t unless a and b hold the same objects, refs and logs;
// the built-in schema refs' logs are each store's own (Open writes them),
// so they are compared only when withBuiltinLogs.
func sameState(t *testing.T, a, b storeState, withBuiltinLogs bool) {
	t.Helper()
	if len(a.objects) != len(b.objects) {
		t.Errorf("object counts differ: %d and %d", len(a.objects), len(b.objects))
	}
	for h, size := range a.objects {
		if got, ok := b.objects[h]; !ok || got != size {
			t.Errorf("object %s (%d bytes): in the other store %v, %d bytes", h, size, ok, got)
		}
	}
	for h := range b.objects {
		if _, ok := a.objects[h]; !ok {
			t.Errorf("object %s is only in the second store", h)
		}
	}
	if !slices.Equal(a.refs, b.refs) {
		t.Errorf("refs differ:\n\t%v\n\t%v", a.refs, b.refs)
	}
	names := func(m map[string][]cas.LogEntry) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(names(a.logs), names(b.logs)) {
		t.Errorf("logs differ: %q and %q", names(a.logs), names(b.logs))
	}
	for name, log := range a.logs {
		if !withBuiltinLogs && strings.HasPrefix(name, "schemas/") && cas.IsBuiltinName(strings.TrimPrefix(name, "schemas/")) {
			continue
		}
		if !slices.Equal(log, b.logs[name]) {
			t.Errorf("log of %s differs:\n\t%v\n\t%v", name, log, b.logs[name])
		}
	}
}

func (f *fixture) fsckOK() {
	f.t.Helper()
	rep, err := f.repo.Fsck(f.ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range rep.Problems {
		f.t.Errorf("fsck: %s", p)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	src := newTransferFixture(t)
	tar1 := export(t, src.repo)
	if again := export(t, src.repo); !bytes.Equal(tar1, again) {
		t.Fatalf("two exports of one store differ (%d and %d bytes)", len(tar1), len(again))
	}

	dst := newFixture(t)
	dst.verifyOnCleanup()
	rep := mustImport(t, dst.repo, tar1, nil)
	want := &cas.ImportReport{
		Created: []string{"notes/mid", "notes/top", "schemas/note"},
		Logs:    1, // threads/gone
	}
	for _, b := range cas.BuiltinsAt(cas.FormatV1) {
		want.Unchanged = append(want.Unchanged, "schemas/"+b.Name)
	}
	slices.Sort(want.Unchanged)
	if !slices.Equal(rep.Created, want.Created) || !slices.Equal(rep.Unchanged, want.Unchanged) ||
		rep.Logs != want.Logs || len(rep.Conflicts)+len(rep.Forced)+len(rep.LogsSkipped) != 0 {
		t.Errorf("report = %+v, want %+v", rep, want)
	}
	a, b := stateOf(t, src.mem, src.mem.Refs()), stateOf(t, dst.mem, dst.mem.Refs())
	if rep.Objects != len(a.objects) {
		t.Errorf("report.Objects = %d, want %d", rep.Objects, len(a.objects))
	}
	// Both fixtures' clocks start at the same time, so even the built-in
	// schema refs' logs (each store's own) are equal.
	sameState(t, a, b, true)
	src.fsckOK()
	dst.fsckOK()
	if tar2 := export(t, dst.repo); !bytes.Equal(tar1, tar2) {
		t.Errorf("the export of the imported store differs from the original export")
	}

	// A second import changes nothing.
	rep = mustImport(t, dst.repo, tar1, nil)
	if len(rep.Created) != 0 || len(rep.Unchanged) != len(a.refs) || rep.Logs != 1 {
		t.Errorf("second import: %+v, want every ref unchanged", rep)
	}
	sameState(t, a, stateOf(t, dst.mem, dst.mem.Refs()), true)
}

func TestExportLayout(t *testing.T) {
	f := newTransferFixture(t)
	entries := readTar(t, export(t, f.repo))
	if len(entries) == 0 || entries[0].name != "objects/"+cas.MetaSchema.String() {
		t.Fatalf("first entry = %v, want the meta-schema", entries[0].name)
	}
	seen := map[cas.Hash]bool{}
	section := 0 // objects, refs, logs
	var prev string
	for _, e := range entries {
		kind, name, _ := strings.Cut(e.name, "/")
		switch kind {
		case "objects":
			if section != 0 {
				t.Fatalf("%s after refs or logs", e.name)
			}
			h, err := cas.ParseCanonicalHash(name)
			if err != nil || cas.Sum(e.data) != h {
				t.Fatalf("%s: bad name or bytes", e.name)
			}
			n, err := cas.DecodeNode(e.data)
			if err != nil {
				t.Fatal(err)
			}
			edges, err := f.repo.Edges(f.ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, edge := range edges {
				if !seen[edge.Hash] {
					t.Errorf("%s comes before its child %s", e.name, edge.Hash)
				}
			}
			seen[h] = true
		case "refs":
			if section > 1 {
				t.Fatalf("%s after logs", e.name)
			}
			if section == 1 && e.name <= prev {
				t.Errorf("%s after %s", e.name, prev)
			}
			section, prev = 1, e.name
			h, err := cas.ParseCanonicalHash(strings.TrimSuffix(string(e.data), "\n"))
			if err != nil || !strings.HasSuffix(string(e.data), "\n") {
				t.Errorf("%s = %q, want a hash and a newline", e.name, e.data)
			}
			if !seen[h] {
				t.Errorf("%s points at %s, which the tar lacks", e.name, h)
			}
		case "logs":
			if section == 2 && e.name <= prev {
				t.Errorf("%s after %s", e.name, prev)
			}
			section, prev = 2, e.name
		default:
			t.Errorf("unexpected entry %s", e.name)
		}
	}
	if !seen[f.loose] {
		t.Errorf("a full export lacks the loose node")
	}
	var gone string
	for _, e := range entries {
		if e.name == "logs/threads/gone.jsonl" {
			gone = string(e.data)
		}
	}
	if want := `"message":"rm\nwith a second line"}` + "\n"; !strings.HasSuffix(gone, want) || strings.Count(gone, "\n") != 2 {
		t.Errorf("logs/threads/gone.jsonl = %q, want two lines, the last ending %q", gone, want)
	}
}

func TestExportRoots(t *testing.T) {
	f := newTransferFixture(t)
	ctx := f.ctx
	data := export(t, f.repo, "notes/top", strings.ToLower(f.mid.String()), "threads/gone")
	names := map[string]bool{}
	for _, e := range readTar(t, data) {
		names[e.name] = true
	}
	for _, h := range []cas.Hash{f.top, f.mid, f.leaf, f.old, f.note, cas.MetaSchema, cas.ContentSchema} {
		if !names["objects/"+h.String()] {
			t.Errorf("the export lacks %s", h)
		}
	}
	if names["objects/"+f.loose.String()] {
		t.Errorf("the export holds the loose node")
	}
	for _, want := range []string{"refs/notes/top", "logs/notes/top.jsonl", "logs/threads/gone.jsonl"} {
		if !names[want] {
			t.Errorf("the export lacks %s", want)
		}
	}
	for _, unwanted := range []string{"refs/notes/mid", "refs/schemas/note", "logs/schemas/content.jsonl"} {
		if names[unwanted] {
			t.Errorf("the export holds %s", unwanted)
		}
	}
	dst := newFixture(t)
	rep := mustImport(t, dst.repo, data, nil)
	if !slices.Equal(rep.Created, []string{"notes/top"}) || rep.Logs != 1 {
		t.Errorf("report = %+v", rep)
	}
	dst.fsckOK()
	if err := dst.repo.Walk(ctx, []cas.Hash{f.top, f.old}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil }); err != nil {
		t.Errorf("walk the imported closure: %v", err)
	}

	for _, tc := range []struct {
		root string
		want error
	}{
		{"no/such/ref", cas.ErrNotFound},
		{cas.Sum([]byte("absent")).String(), cas.ErrNotFound},
		{"../etc", cas.ErrInvalidHash},
	} {
		_, err := cas.Export(ctx, f.repo, io.Discard, []string{tc.root})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.root) {
			t.Errorf("Export(%q) = %v, want an error naming it and wrapping %v", tc.root, err, tc.want)
		}
	}
}

func TestImportDifferingRefs(t *testing.T) {
	src := newTransferFixture(t)
	data := export(t, src.repo)
	for _, force := range []bool{false, true} {
		dst := newFixture(t)
		other := dst.text("another value")
		dst.setRef("notes/top", other)
		dst.setRef("Notes/Mid", other) // clashes with notes/mid
		rep, err := cas.Import(dst.ctx, dst.repo, bytes.NewReader(data), &cas.ImportOptions{Force: force})
		if !errors.Is(err, cas.ErrConflict) || !strings.Contains(err.Error(), "notes/mid") {
			t.Fatalf("force=%v: Import = %v, want an error wrapping ErrConflict naming notes/mid", force, err)
		}
		wantConflicts := []cas.RefConflict{{Name: "notes/mid", Imported: src.mid, Clash: "Notes/Mid"}}
		if !force {
			wantConflicts = append(wantConflicts, cas.RefConflict{Name: "notes/top", Current: other, Imported: src.top})
		}
		if !slices.Equal(rep.Conflicts, wantConflicts) {
			t.Errorf("force=%v: conflicts = %v, want %v", force, rep.Conflicts, wantConflicts)
		}
		h, err := dst.repo.Refs().Get(dst.ctx, "notes/top")
		if err != nil {
			t.Fatal(err)
		}
		log, _ := dst.repo.Refs().Log(dst.ctx, "notes/top")
		last := log[len(log)-1]
		if force {
			if h != src.top || !slices.Equal(rep.Forced, []string{"notes/top"}) || last.Message != "import --force" || last.Old != other {
				t.Errorf("forced: notes/top = %s, forced %v, last log entry %+v", h, rep.Forced, last)
			}
		} else if h != other || len(log) != 1 {
			t.Errorf("not forced: notes/top = %s with %d log entries, want it left at %s", h, len(log), other)
		}
		if !slices.Equal(rep.Created, []string{"schemas/note"}) {
			t.Errorf("force=%v: created %v, want [schemas/note]", force, rep.Created)
		}
		dst.fsckOK()
	}
}

// TestImportMergesDeletedLogs: a ref missing here whose log here ends after
// the tar's is still created at the tar's value, logged "import"; a deleted
// ref's log is left alone where the ref is live.
func TestImportMergesDeletedLogs(t *testing.T) {
	src := newTransferFixture(t)
	data := export(t, src.repo)
	dst := newFixture(t)
	dst.clock.Advance(time.Hour) // the store's own entries are newer
	x := dst.text("x")
	dst.setRef("notes/top", x)
	if err := dst.repo.Refs().CompareAndSwap(dst.ctx, "notes/top", x, 0, "deleted here"); err != nil {
		t.Fatal(err)
	}
	dst.setRef("threads/gone", x) // live here, deleted in the tar
	rep := mustImport(t, dst.repo, data, nil)
	if !slices.Contains(rep.Created, "notes/top") || !slices.Equal(rep.LogsSkipped, []string{"threads/gone"}) {
		t.Errorf("report = %+v", rep)
	}
	log, err := dst.repo.Refs().Log(dst.ctx, "notes/top")
	if err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1]; last.Message != "import" || last.New != src.top || len(log) != 5 {
		t.Errorf("log of notes/top = %v, want the tar's 2 entries, the store's 2 and an import", log)
	}
	if g, _ := dst.repo.Refs().Log(dst.ctx, "threads/gone"); len(g) != 1 {
		t.Errorf("log of threads/gone = %v, want the store's own entry only", g)
	}
	dst.fsckOK()
}

// tarFile is an entry of a hand-made tar.
type tarFile struct {
	name string
	data string
	typ  byte              // 0: a regular file
	pax  map[string]string // the records of a tar.TypeXGlobalHeader
}

func makeTar(t testing.TB, files ...tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if f.typ == tar.TypeXGlobalHeader {
			if err := tw.WriteHeader(&tar.Header{Typeflag: f.typ, Name: f.name, PAXRecords: f.pax}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}
		if f.typ != 0 {
			hdr.Typeflag = f.typ
			if f.typ != tar.TypeReg {
				hdr.Size = 0
			}
		}
		if f.typ == tar.TypeSymlink {
			hdr.Linkname = "/etc/passwd"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func objectFile(data string) tarFile {
	return tarFile{name: "objects/" + cas.Sum([]byte(data)).String(), data: data}
}

func TestImportBadTars(t *testing.T) {
	content := func(s string) string {
		b, err := (cas.Node{Type: cas.ContentSchema, Payload: s}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := objectFile(content("good"))
	goodHash := strings.TrimPrefix(good.name, "objects/")
	nonCanonical := `{"type":"` + cas.ContentSchema.String() + `","payload":"x"}`
	tests := []struct {
		name  string
		files []tarFile
		entry string // the entry the error must name
		want  error
	}{
		{"corrupt object", []tarFile{{name: good.name, data: content("tampered")}}, good.name, cas.ErrCorrupt},
		{"not canonical", []tarFile{objectFile(nonCanonical)}, "objects/" + cas.Sum([]byte(nonCanonical)).String(), cas.ErrInvalid},
		{"not a node", []tarFile{objectFile(`[1,2]`)}, "objects/" + cas.Sum([]byte(`[1,2]`)).String(), cas.ErrInvalid},
		{"invalid payload", []tarFile{objectFile(`{"payload":42,"type":"` + cas.ContentSchema.String() + `"}`)},
			"objects/" + cas.Sum([]byte(`{"payload":42,"type":"`+cas.ContentSchema.String()+`"}`)).String(), cas.ErrInvalid},
		{"missing edge", []tarFile{objectFile(`{"payload":"x","type":"` + cas.Sum([]byte("no schema")).String() + `"}`)},
			"objects/" + cas.Sum([]byte(`{"payload":"x","type":"`+cas.Sum([]byte("no schema")).String()+`"}`)).String(), cas.ErrNotFound},
		{"unknown entry", []tarFile{good, {name: "README", data: "hi"}}, "README", cas.ErrInvalid},
		{"unknown folder", []tarFile{{name: "blobs/x", data: "hi"}}, "blobs/x", cas.ErrInvalid},
		{"lower-case object name", []tarFile{{name: strings.ToLower(good.name), data: good.data}}, strings.ToLower(good.name), cas.ErrInvalid},
		{"traversal", []tarFile{{name: "objects/../../etc/passwd", data: "x"}}, "objects/../../etc/passwd", cas.ErrInvalid},
		{"leading dotdot", []tarFile{{name: "../x", data: "x"}}, "../x", cas.ErrInvalid},
		{"absolute", []tarFile{{name: "/refs/a", data: goodHash}}, "/refs/a", cas.ErrInvalid},
		{"ref traversal", []tarFile{{name: "refs/a/../../b", data: goodHash}}, "refs/a/../../b", cas.ErrInvalid},
		{"symlink", []tarFile{{name: "refs/a", typ: tar.TypeSymlink}}, "refs/a", cas.ErrInvalid},
		{"hard link", []tarFile{{name: "objects/" + goodHash, typ: tar.TypeLink}}, "objects/" + goodHash, cas.ErrInvalid},
		{"oversized object", []tarFile{objectFile(content(strings.Repeat("x", 2000)))},
			"objects/" + cas.Sum([]byte(content(strings.Repeat("x", 2000)))).String(), cas.ErrTooLarge},
		{"oversized ref", []tarFile{{name: "refs/a", data: strings.Repeat(goodHash, 10)}}, "refs/a", cas.ErrTooLarge},
		{"bad ref", []tarFile{good, {name: "refs/a", data: "not a hash\n"}}, "refs/a", cas.ErrInvalid},
		{"zero ref", []tarFile{good, {name: "refs/a", data: "0000000000000\n"}}, "refs/a", cas.ErrInvalid},
		{"dangling ref", []tarFile{{name: "refs/a", data: cas.Sum([]byte("absent")).String() + "\n"}}, "refs/a", cas.ErrNotFound},
		{"bad log", []tarFile{{name: "logs/a.jsonl", data: `{"old":"0000000000000"}` + "\n"}}, "logs/a.jsonl", cas.ErrInvalid},
		{"log with extra field", []tarFile{{name: "logs/a.jsonl",
			data: `{"old":"0000000000000","new":"0000000000000","time":1,"message":"","x":1}` + "\n"}}, "logs/a.jsonl", cas.ErrInvalid},
		{"log with trailing junk", []tarFile{{name: "logs/a.jsonl",
			data: `{"old":"0000000000000","new":"0000000000000","time":1,"message":""}}` + "\n"}}, "logs/a.jsonl", cas.ErrInvalid},
		{"log disagrees with ref", []tarFile{good, {name: "refs/a", data: goodHash + "\n"},
			{name: "logs/a.jsonl", data: `{"old":"0000000000000","new":"` + cas.ContentSchema.String() + `","time":1,"message":""}` + "\n"}},
			"logs/a.jsonl", cas.ErrInvalid},
		{"log of a live ref without the ref", []tarFile{good,
			{name: "logs/a.jsonl", data: `{"old":"0000000000000","new":"` + goodHash + `","time":1,"message":""}` + "\n"}},
			"logs/a.jsonl", cas.ErrInvalid},
		{"duplicate ref", []tarFile{good, {name: "refs/a", data: goodHash}, {name: "refs/a", data: goodHash}}, "refs/a", cas.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := cas.NewMemStore(nil)
			r, err := cas.Open(t.Context(), mem, mem.Refs(), &cas.Options{MaxNodeSize: 1024})
			if err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, mem, mem.Refs())
			_, err = cas.Import(t.Context(), r, bytes.NewReader(makeTar(t, tc.files...)), nil)
			var ie *cas.ImportError
			if !errors.As(err, &ie) || ie.Entry != tc.entry || !errors.Is(err, tc.want) {
				t.Fatalf("Import = %v, want an *ImportError naming %s and wrapping %v", err, tc.entry, tc.want)
			}
			if !strings.Contains(err.Error(), tc.entry) {
				t.Errorf("error %q does not name %s", err, tc.entry)
			}
			after := stateOf(t, mem, mem.Refs())
			if !slices.Equal(before.refs, after.refs) || len(before.logs) != len(after.logs) {
				t.Errorf("a bad tar changed refs or logs")
			}
			for h := range after.objects {
				if _, ok := before.objects[h]; !ok && h.String() != goodHash {
					t.Errorf("a bad tar stored %s", h)
				}
			}
			castest.Verify(t, mem)
		})
	}
}

// TestImportAcceptsPlainTars: directory entries and a leading "./", as tar
// writes them, are fine.
func TestImportAcceptsPlainTars(t *testing.T) {
	f := newTransferFixture(t)
	var files []tarFile
	files = append(files, tarFile{name: "./", typ: tar.TypeDir}, tarFile{name: "./objects/", typ: tar.TypeDir})
	for _, e := range readTar(t, export(t, f.repo, "notes/mid")) {
		files = append(files, tarFile{name: "./" + e.name, data: string(e.data)})
	}
	files = append(files, tarFile{name: "./refs/notes/", typ: tar.TypeDir})
	dst := newFixture(t)
	rep := mustImport(t, dst.repo, makeTar(t, files...), nil)
	if !slices.Equal(rep.Created, []string{"notes/mid"}) {
		t.Errorf("report = %+v", rep)
	}
	dst.fsckOK()
}

func TestImportCancelled(t *testing.T) {
	f := newTransferFixture(t)
	data := export(t, f.repo)
	dst := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := cas.Import(ctx, dst.repo, bytes.NewReader(data), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Import(cancelled ctx) = %v, want context.Canceled", err)
	}
	if _, err := cas.Export(ctx, f.repo, io.Discard, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Export(cancelled ctx) = %v, want context.Canceled", err)
	}
}

// FuzzImport: whatever the tar, Import does not panic, and what it accepts
// leaves the store consistent (fsck clean).
func FuzzImport(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("not a tar"))
	f.Add(makeTar(f, tarFile{name: "../x", data: "x"}))
	f.Add(makeTar(f, tarFile{name: "logs/a.jsonl", data: `{"old":"0000000000000","new":"0000000000000","time":1,"message":""}`}))
	f.Add(seedExport(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := cas.NewMemStore(nil)
		r, err := cas.Open(t.Context(), mem, mem.Refs(), &cas.Options{MaxNodeSize: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = cas.Import(t.Context(), r, bytes.NewReader(data), &cas.ImportOptions{Force: len(data)%2 == 0})
		rep, err := r.Fsck(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("fsck after import: %s", p)
		}
	})
}

// seedExport returns an export of a small store, for the fuzzer's corpus.
func seedExport(tb testing.TB) []byte {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	r, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := r.Put(ctx, cas.ContentSchema, "seed")
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Refs().CompareAndSwap(ctx, "seed", 0, h, "create"); err != nil {
		tb.Fatal(err)
	}
	if err := r.Refs().CompareAndSwap(ctx, "seed", h, 0, "delete"); err != nil {
		tb.Fatal(err)
	}
	if err := r.Refs().CompareAndSwap(ctx, "kept", 0, h, "create"); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := cas.Export(ctx, r, &buf, nil); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// TestImportClockSteppedBack imports a ref whose log's times go backwards
// (the source's clock stepped back): the log is taken in its order, so the
// tar is accepted and the ref and its log come out as they went in.
func TestImportClockSteppedBack(t *testing.T) {
	src := newFixture(t)
	a, b, c := src.text("a"), src.text("b"), src.text("c")
	src.setRef("notes/back", a)
	src.clock.Advance(-time.Hour)
	if err := src.repo.Refs().CompareAndSwap(src.ctx, "notes/back", a, b, "after a step back"); err != nil {
		t.Fatal(err)
	}
	src.clock.Advance(-time.Hour)
	if err := src.repo.Refs().CompareAndSwap(src.ctx, "notes/back", b, c, "after another"); err != nil {
		t.Fatal(err)
	}
	want, err := src.repo.Refs().Log(src.ctx, "notes/back")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 || want[0].Time <= want[2].Time {
		t.Fatalf("source log = %v, want three entries going back in time", want)
	}

	dst := newFixture(t)
	rep := mustImport(t, dst.repo, export(t, src.repo), nil)
	if !slices.Contains(rep.Created, "notes/back") {
		t.Errorf("report = %+v, want notes/back created", rep)
	}
	if got, err := dst.repo.Refs().Get(dst.ctx, "notes/back"); err != nil || got != c {
		t.Errorf("Get(notes/back) = %v, %v; want %v", got, err, c)
	}
	if got, err := dst.repo.Refs().Log(dst.ctx, "notes/back"); err != nil || !slices.Equal(got, want) {
		t.Errorf("Log(notes/back) = %v, %v;\nwant %v", got, err, want)
	}
	dst.fsckOK()
}
