package cas_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// endRecord returns the records of an export's end record.
func endRecord(t *testing.T, data []byte) map[string]string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no end record: %v", err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			return hdr.PAXRecords
		}
	}
}

// asFiles turns an export's entries back into files for makeTar.
func asFiles(entries []tarEntry) []tarFile {
	files := make([]tarFile, len(entries))
	for i, e := range entries {
		files[i] = tarFile{name: e.name, data: string(e.data)}
	}
	return files
}

// refsUnchanged imports data into a fresh store and checks that it fails
// as want says and changes no ref and no log.
func importRefused(t *testing.T, data []byte, want func(error) bool) error {
	t.Helper()
	dst := newFixture(t)
	before := stateOf(t, dst.mem, dst.mem.Refs())
	rep, err := cas.Import(dst.ctx, dst.repo, bytes.NewReader(data), nil)
	if err == nil || !want(err) {
		t.Fatalf("Import = %v, want a refusal", err)
	}
	if !errors.Is(err, cas.ErrInvalid) {
		t.Errorf("Import = %v, want an error wrapping ErrInvalid", err)
	}
	after := stateOf(t, dst.mem, dst.mem.Refs())
	if !slices.Equal(before.refs, after.refs) || !maps.EqualFunc(before.logs, after.logs, slices.Equal) ||
		len(rep.Created)+len(rep.Forced)+rep.Logs != 0 {
		t.Errorf("a refused tar changed refs or logs: %+v", rep)
	}
	dst.fsckOK()
	return err
}

// TestImportRefusesCutTars cuts an export at every block boundary: every
// cut before the end-of-archive marker, the end record's own boundary
// included, is refused with no ref or log changed; only the whole tar (or
// one that lost just its padding after the first zero block) imports.
func TestImportRefusesCutTars(t *testing.T) {
	f := newTransferFixture(t)
	data := export(t, f.repo)
	entries := readTar(t, data)
	// The position of the first zero block after the end record.
	end := len(data) - 1024
	for end > 0 && bytes.Equal(data[end-512:end], make([]byte, 512)) {
		end -= 512
	}
	for cut := 0; cut < len(data); cut += 512 {
		isCut := func(err error) bool { return strings.Contains(err.Error(), "cut short") }
		if cut > end {
			rep := mustImport(t, newFixture(t).repo, data[:cut], nil)
			if !rep.EndRecord {
				t.Errorf("cut at %d, after the first zero block: EndRecord false", cut)
			}
			continue
		}
		importRefused(t, data[:cut], isCut)
	}
	// A tar from before end records (format version 1) imports whole
	// and is refused cut at an entry boundary.
	v1 := makeTar(t, asFiles(entries)...)
	rep := mustImport(t, newFixture(t).repo, v1, nil)
	if rep.EndRecord || len(rep.Created) == 0 {
		t.Errorf("import of a version-1 tar: %+v, want refs created and EndRecord false", rep)
	}
	short := makeTar(t, asFiles(entries[:len(entries)-1])...)
	short = short[:len(short)-1024] // the end-of-archive marker
	err := importRefused(t, short, func(err error) bool { return strings.Contains(err.Error(), "cut short") })
	if !strings.Contains(err.Error(), "end-of-archive marker") {
		t.Errorf("error %q does not say what is missing", err)
	}
}

// TestImportChecksEndRecord: an end record that does not match what the
// tar holds refuses the tar, naming the end record, and changes no ref.
func TestImportChecksEndRecord(t *testing.T) {
	f := newTransferFixture(t)
	data := export(t, f.repo)
	entries := readTar(t, data)
	rec := endRecord(t, data)
	with := func(change func(map[string]string)) tarFile {
		m := maps.Clone(rec)
		change(m)
		return tarFile{name: "uwf-export-end", typ: tar.TypeXGlobalHeader, pax: m}
	}
	same := with(func(map[string]string) {})
	var withoutTop []tarEntry
	for _, e := range entries {
		if e.name != "refs/notes/top" {
			withoutTop = append(withoutTop, e)
		}
	}
	damaged := asFiles(entries)
	for i := range damaged {
		if damaged[i].name == "logs/notes/top.jsonl" {
			damaged[i].data = strings.Replace(damaged[i].data, `"message":"test"`, `"message":"tost"`, 1)
		}
	}
	tests := []struct {
		name  string
		files []tarFile
		entry string
		msg   string
	}{
		{"a ref left out", append(asFiles(withoutTop), same), "uwf-export-end", "counts 11 refs, the tar holds 10"},
		{"a log changed", append(damaged, same), "uwf-export-end", "the tar is damaged"},
		{"a count that is not one", append(asFiles(entries), with(func(m map[string]string) { m["UWF.objects"] = "07" })), "uwf-export-end", "not a count"},
		{"no digest", append(asFiles(entries), with(func(m map[string]string) { delete(m, "UWF.xxh64") })), "uwf-export-end", "lacks UWF.xxh64"},
		{"an unknown record", append(asFiles(entries), with(func(m map[string]string) { m["UWF.next"] = "1" })), "uwf-export-end", "unknown record"},
		{"an entry after it", append(asFiles(entries), same, tarFile{name: "refs/late", data: f.top.String() + "\n"}), "refs/late", "after the end record"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := importRefused(t, makeTar(t, tc.files...), func(err error) bool {
				var ie *cas.ImportError
				return errors.As(err, &ie) && ie.Entry == tc.entry
			})
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Import = %v, want %q", err, tc.msg)
			}
		})
	}
	// The same entries with the record unchanged import.
	rep := mustImport(t, newFixture(t).repo, makeTar(t, append(asFiles(entries), same)...), nil)
	if !rep.EndRecord {
		t.Errorf("EndRecord false for a matching end record")
	}
}
