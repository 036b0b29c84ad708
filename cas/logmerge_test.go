package cas_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// le is a log entry for merge tables: hashes 1-9 by digit, 0 for none.
func le(old, new uint64, time int64, msg string) cas.LogEntry {
	return cas.LogEntry{Old: cas.Hash(old), New: cas.Hash(new), Time: time, Message: msg}
}

func same(e cas.LogEntry) cas.LogEntry { return e }

func msgs(log []cas.LogEntry) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = e.Message
	}
	return out
}

func TestMergeLog(t *testing.T) {
	create := le(0, 1, 100, "create")
	move := le(1, 2, 200, "move")
	cases := []struct {
		name               string
		existing, imported []cas.LogEntry
		cur                cas.Hash
		want               []string
	}{
		{"empty import", []cas.LogEntry{create}, nil, 1, []string{"create"}},
		{"into nothing, backward times kept", nil,
			[]cas.LogEntry{le(0, 1, 300, "c"), le(1, 2, 200, "m1"), le(2, 3, 100, "m2")}, 0,
			[]string{"c", "m1", "m2"}},
		{"into nothing, shuffled runs linked", nil,
			[]cas.LogEntry{le(2, 3, 100, "m2"), le(0, 1, 300, "c"), le(1, 2, 200, "m1")}, 0,
			[]string{"c", "m1", "m2"}},
		{"a pruned log continues after its creation", nil,
			[]cas.LogEntry{le(0, 1, 100, "c"), le(5, 6, 500, "kept"), le(6, 7, 600, "newest")}, 0,
			[]string{"c", "kept", "newest"}},
		{"duplicates dropped, here and in the import", []cas.LogEntry{create, move},
			[]cas.LogEntry{move, create, move}, 2, []string{"create", "move"}},
		{"same change, other message, is new", []cas.LogEntry{create},
			[]cas.LogEntry{le(0, 1, 100, "create elsewhere")}, 1, []string{"create", "create elsewhere"}},
		{"live: a detour back to the ref goes at the end", []cas.LogEntry{create, move},
			[]cas.LogEntry{le(2, 3, 10, "out"), le(3, 2, 5, "back")}, 2, []string{"create", "move", "out", "back"}},
		{"live: a move away goes before the creation", []cas.LogEntry{create, move},
			[]cas.LogEntry{le(2, 3, 900, "away")}, 2, []string{"away", "create", "move"}},
		{"live: before the last creation, not the first", []cas.LogEntry{create, le(1, 0, 300, "rm"), le(0, 4, 400, "again")},
			[]cas.LogEntry{le(7, 8, 50, "stray")}, 4, []string{"create", "rm", "stray", "again"}},
		{"live without a creation entry: at the start", []cas.LogEntry{move},
			[]cas.LogEntry{le(7, 8, 999, "stray")}, 2, []string{"stray", "move"}},
		{"strays by time, runs whole", []cas.LogEntry{create},
			[]cas.LogEntry{le(7, 8, 60, "late"), le(8, 9, 10, "late, second"), le(5, 6, 50, "early")}, 1,
			[]string{"early", "late", "late, second", "create"}},
		{"a run that would split a link waits", []cas.LogEntry{create, move},
			[]cas.LogEntry{le(1, 5, 150, "split")}, 2, []string{"split", "create", "move"}},
		{"a run filling a gap links at both ends", []cas.LogEntry{create, le(3, 4, 400, "after gap")},
			[]cas.LogEntry{le(1, 2, 200, "fill"), le(2, 3, 300, "fill 2")}, 4,
			[]string{"create", "fill", "fill 2", "after gap"}},
		{"deleted: an older creation goes first", []cas.LogEntry{create, le(1, 0, 200, "rm")},
			[]cas.LogEntry{le(0, 5, 50, "older")}, 0, []string{"older", "create", "rm"}},
		{"deleted: a newer creation restores", []cas.LogEntry{create, le(1, 0, 200, "rm")},
			[]cas.LogEntry{le(0, 5, 250, "newer")}, 0, []string{"create", "rm", "newer"}},
		{"deleted: a stray never restores", []cas.LogEntry{create, le(1, 0, 200, "rm")},
			[]cas.LogEntry{le(7, 8, 999, "stray")}, 0, []string{"stray", "create", "rm"}},
		{"missing ref: its log continues", []cas.LogEntry{create},
			[]cas.LogEntry{le(7, 8, 999, "stray")}, 0, []string{"create", "stray"}},
		{"A->B->A: time picks among equal places", []cas.LogEntry{create, move, le(2, 1, 300, "back"), le(1, 2, 400, "again")},
			[]cas.LogEntry{le(1, 3, 350, "detour"), le(3, 1, 360, "detour back")}, 2,
			[]string{"create", "move", "back", "detour", "detour back", "again"}},
		{"A->B->A: earlier than all, the first place", []cas.LogEntry{create, move, le(2, 1, 300, "back"), le(1, 2, 400, "again")},
			[]cas.LogEntry{le(1, 3, 10, "detour"), le(3, 1, 20, "detour back")}, 2,
			[]string{"create", "detour", "detour back", "move", "back", "again"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := cas.MergeLog(c.existing, c.imported, same, c.cur)
			if !slices.Equal(msgs(got), c.want) {
				t.Errorf("MergeLog = %q, want %q", msgs(got), c.want)
			}
		})
	}
}

// TestMergeLogElements checks that MergeLog returns the caller's own
// elements, existing and imported, not copies rebuilt from entries.
func TestMergeLogElements(t *testing.T) {
	type line struct {
		e   cas.LogEntry
		tag string
	}
	existing := []line{{le(0, 1, 100, "create"), "here"}}
	imported := []line{{le(1, 2, 50, "move"), "there"}, {le(0, 1, 100, "create"), "dup"}}
	got := cas.MergeLog(existing, imported, func(l line) cas.LogEntry { return l.e }, 0)
	want := []line{existing[0], imported[0]}
	if !slices.Equal(got, want) {
		t.Errorf("MergeLog = %v, want %v", got, want)
	}
	if len(existing) != 1 || existing[0].tag != "here" {
		t.Errorf("MergeLog changed its input: %v", existing)
	}
}

// FuzzMergeLog checks MergeLog's invariants on small logs over few hashes,
// so that entries link often.
func FuzzMergeLog(f *testing.F) {
	f.Add([]byte{3, 1, 0, 1, 1, 1, 2, 2, 2, 1, 3, 1, 3, 4, 0, 3, 1, 0})
	f.Add([]byte{0, 0, 0, 1, 5, 1, 2, 4, 2, 3, 3})
	f.Add([]byte{4, 1, 0, 1, 1, 1, 0, 2, 0, 2, 3, 2, 3, 0, 0, 1, 9, 2, 1, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > 3*64 {
			return
		}
		nExisting, live := int(data[0]%16), data[0]&16 != 0
		var entries []cas.LogEntry
		for i := 1; i+2 < len(data); i += 3 {
			entries = append(entries, le(uint64(data[i]%5), uint64(data[i+1]%5), int64(data[i+2]%8), fmt.Sprint(data[i+2]%3)))
		}
		nExisting = min(nExisting, len(entries))
		existing, imported := entries[:nExisting], entries[nExisting:]
		var cur cas.Hash
		if live && nExisting > 0 {
			cur = existing[nExisting-1].New
		}
		merged := cas.MergeLog(existing, imported, same, cur)

		// Existing entries keep their order; imported ones are added once
		// each, if new.
		seen := map[cas.LogEntry]bool{}
		for _, e := range existing {
			seen[e] = true
		}
		var added []cas.LogEntry
		for _, e := range imported {
			if !seen[e] {
				seen[e] = true
				added = append(added, e)
			}
		}
		isAdded := map[cas.LogEntry]bool{}
		for _, e := range added {
			isAdded[e] = true
		}
		var kept, got []cas.LogEntry
		for _, e := range merged {
			if isAdded[e] {
				got = append(got, e)
			} else {
				kept = append(kept, e)
			}
		}
		if !slices.Equal(kept, existing) {
			t.Fatalf("existing %v came out as %v (merged %v)", existing, kept, merged)
		}
		slices.SortFunc(got, cmpEntry)
		slices.SortFunc(added, cmpEntry)
		if !slices.Equal(got, added) {
			t.Fatalf("added %v, want %v", got, added)
		}
		// Imported entries that link in the given order keep it, linked:
		// what goes between them (a later detour) links at both ends.
		pos := map[cas.LogEntry]int{}
		for i, e := range merged {
			pos[e] = i
		}
		var prev *cas.LogEntry
		placed := map[cas.LogEntry]bool{}
		for _, e := range imported {
			if !isAdded[e] || placed[e] {
				continue
			}
			placed[e] = true
			if prev != nil && prev.New == e.Old {
				if pos[e] <= pos[*prev] {
					t.Fatalf("run reordered: %v then %v at %d and %d in %v", *prev, e, pos[*prev], pos[e], merged)
				}
				// Runs that link nowhere go just before the last
				// creation, which may stand between the two.
				creation := slices.ContainsFunc(merged[pos[*prev]+1:pos[e]+1], func(x cas.LogEntry) bool { return x.Old.IsZero() })
				for i := pos[*prev]; i < pos[e] && !creation; i++ {
					if merged[i].New != merged[i+1].Old {
						t.Fatalf("run %v then %v broken at %d: %v", *prev, e, i, merged)
					}
				}
			}
			prev = &e
		}
		// A live ref's log still ends at the ref; a deleted ref's log ends
		// with a delete unless a creation links after it.
		if n := len(merged); n > 0 && !cur.IsZero() && merged[n-1].New != cur {
			t.Fatalf("live ref at %v, merged log ends with %v: %v", cur, merged[n-1], merged)
		}
		// Merging the same again adds nothing.
		if again := cas.MergeLog(merged, imported, same, cur); !slices.Equal(again, merged) {
			t.Fatalf("merging again changed %v into %v", merged, again)
		}
	})
}

func cmpEntry(a, b cas.LogEntry) int {
	return cmp.Or(cmp.Compare(a.Old, b.Old), cmp.Compare(a.New, b.New), cmp.Compare(a.Time, b.Time), strings.Compare(a.Message, b.Message))
}
