package cas

import (
	"cmp"
	"slices"
)

// MergeLog merges imported entries into a ref's log, existing (oldest
// first), as every backend's [Refs.ImportLog] does; cur is the ref's value,
// zero if it does not exist. entry reads a backend's element as a log
// entry. The merged log holds every existing element, in its order, and
// every imported one whose entry is neither in existing nor earlier in
// imported (same old, new, time and message), so it is len(existing)
// elements long when nothing is new. Times order nothing but ties: they
// come from clocks that may step back, and from other stores.
//
// The imported entries, in their given order (an export's is its log's),
// are cut into runs, each entry's Old being the previous one's New. A run
// goes into a gap of the log where it links: its first Old is the New of
// the entry before the gap (zero at the start of the log: a creation), and
// its last New is the Old of the entry after it. At the end of the log the
// last New links if it is cur, for a live ref (the newest entry still
// equals the ref), or, for an absent ref, if the log is empty or its
// newest entry holds a value (a log continued, or a missing ref's); a live
// ref never gets a run at its end that would move it. A run may go between
// two entries that link to each other only if it links at both ends (an
// A->B->A detour); elsewhere it goes where most of its ends link, and among
// equal gaps into the last one whose entry before is not later than the
// run's first entry (else the first gap). Runs that link nowhere are tried
// again once others are placed; those that still link nowhere go, by the
// time of their first entry (stably), just before the log's last creation
// entry (the last with a zero Old: the ref's current incarnation), or at
// its start if it has none, so they never change what the newest entry
// says.
func MergeLog[T any](existing, imported []T, entry func(T) LogEntry, cur Hash) []T {
	m := &logMerger{cur: cur, head: -1, tail: -1, newAt: map[Hash][]int{}, oldAt: map[Hash][]int{}}
	seen := make(map[LogEntry]bool, len(existing)+len(imported))
	for i, x := range existing {
		e := entry(x)
		seen[e] = true
		m.insertAfter(m.tail, []LogEntry{e}, []int{i})
	}
	type run struct {
		entries []LogEntry
		srcs    []int
	}
	var runs []run
	for i, x := range imported {
		e := entry(x)
		if seen[e] {
			continue
		}
		seen[e] = true
		src := len(existing) + i
		if n := len(runs); n > 0 && runs[n-1].entries[len(runs[n-1].entries)-1].New == e.Old {
			runs[n-1].entries = append(runs[n-1].entries, e)
			runs[n-1].srcs = append(runs[n-1].srcs, src)
			continue
		}
		runs = append(runs, run{[]LogEntry{e}, []int{src}})
	}
	for len(runs) > 0 {
		var unplaced []run
		for _, r := range runs {
			if p, ok := m.bestGap(r.entries[0], r.entries[len(r.entries)-1]); ok {
				m.insertAfter(p, r.entries, r.srcs)
			} else {
				unplaced = append(unplaced, r)
			}
		}
		if len(unplaced) == len(runs) {
			break
		}
		runs = unplaced
	}
	if len(runs) > 0 {
		slices.SortStableFunc(runs, func(a, b run) int { return cmp.Compare(a.entries[0].Time, b.entries[0].Time) })
		p := -1 // before the last creation entry, or at the start
		for n := m.tail; n >= 0; n = m.nodes[n].prev {
			if m.nodes[n].e.Old.IsZero() {
				p = m.nodes[n].prev
				break
			}
		}
		var entries []LogEntry
		var srcs []int
		for _, r := range runs {
			entries = append(entries, r.entries...)
			srcs = append(srcs, r.srcs...)
		}
		m.insertAfter(p, entries, srcs)
	}
	out := make([]T, 0, len(m.nodes))
	for n := m.head; n >= 0; n = m.nodes[n].next {
		if src := m.nodes[n].src; src < len(existing) {
			out = append(out, existing[src])
		} else {
			out = append(out, imported[src-len(existing)])
		}
	}
	return out
}

// logMerger is the log [MergeLog] builds: a linked list of entries, with
// labels that grow along it (to compare positions) and the entries indexed
// by their Old and New (to find where a run links without a scan).
type logMerger struct {
	cur          Hash
	nodes        []mergeNode
	head, tail   int // -1: empty
	newAt, oldAt map[Hash][]int
}

type mergeNode struct {
	e          LogEntry
	src        int // the element's index in existing, then imported
	prev, next int // -1: none
	label      uint64
}

// Labels start at labelBase, labelGap apart, so that a log grows both
// ways without relabelling.
const (
	labelBase = 1 << 62
	labelGap  = 1 << 32
)

// insertAfter links entries (from srcs) in after node p (-1: at the start).
func (m *logMerger) insertAfter(p int, entries []LogEntry, srcs []int) {
	next := m.head
	if p >= 0 {
		next = m.nodes[p].next
	}
	base, step := m.span(p, next, len(entries))
	if step == 0 {
		m.relabel()
		base, step = m.span(p, next, len(entries))
	}
	prev := p
	for i, e := range entries {
		n := len(m.nodes)
		m.nodes = append(m.nodes, mergeNode{e: e, src: srcs[i], prev: prev, next: next, label: base + uint64(i+1)*step})
		if prev >= 0 {
			m.nodes[prev].next = n
		} else {
			m.head = n
		}
		m.newAt[e.New] = append(m.newAt[e.New], n)
		m.oldAt[e.Old] = append(m.oldAt[e.Old], n)
		prev = n
	}
	if next >= 0 {
		m.nodes[next].prev = prev
	} else {
		m.tail = prev
	}
}

// span returns base and step such that k labels base + i*step (i from 1
// to k) fit strictly between p's label and next's, in the gap after p
// (step 0 if they do not fit).
func (m *logMerger) span(p, next, k int) (base, step uint64) {
	width := uint64(k+1) * labelGap
	switch {
	case p < 0 && next < 0:
		return labelBase, labelGap
	case next < 0:
		return m.nodes[p].label, labelGap
	case p < 0 && m.nodes[next].label > width:
		return m.nodes[next].label - width, labelGap
	case p < 0:
		return 0, m.nodes[next].label / uint64(k+1)
	}
	return m.nodes[p].label, (m.nodes[next].label - m.nodes[p].label) / uint64(k+1)
}

// relabel spaces the labels evenly along the list.
func (m *logMerger) relabel() {
	l := uint64(labelBase)
	for n := m.head; n >= 0; n = m.nodes[n].next {
		l += labelGap
		m.nodes[n].label = l
	}
}

// bestGap returns the node after which a run from first to last goes (-1:
// the start), as [MergeLog] says, and whether it links anywhere.
func (m *logMerger) bestGap(first, last LogEntry) (int, bool) {
	cands := []int{-1, m.tail}
	cands = append(cands, m.newAt[first.Old]...)
	for _, n := range m.oldAt[last.New] {
		cands = append(cands, m.nodes[n].prev)
	}
	score, firstAt, fitAt := 0, -1, -1
	var firstLabel, fitLabel uint64
	for _, p := range cands {
		next, label := m.head, uint64(0)
		var head bool
		if p >= 0 {
			next, label = m.nodes[p].next, m.nodes[p].label
			head = m.nodes[p].e.New == first.Old
		} else {
			head = first.Old.IsZero()
		}
		var tail bool
		open := p < 0 || next < 0
		switch {
		case next >= 0:
			tail = m.nodes[next].e.Old == last.New
			open = open || m.nodes[p].e.New != m.nodes[next].e.Old
		case !m.cur.IsZero():
			tail = last.New == m.cur
			if !tail {
				continue // it would move a live ref
			}
		default:
			tail = m.tail < 0 || !m.nodes[m.tail].e.New.IsZero()
		}
		s := 0
		if head {
			s++
		}
		if tail {
			s++
		}
		if s == 0 || !open && s < 2 || s < score {
			continue
		}
		if s > score {
			score, firstAt, fitAt = s, p, -2
			firstLabel = label
		} else if label < firstLabel {
			firstAt, firstLabel = p, label
		}
		if (p < 0 || m.nodes[p].e.Time <= first.Time) && (fitAt == -2 || label > fitLabel) {
			fitAt, fitLabel = p, label
		}
	}
	switch {
	case score == 0:
		return 0, false
	case fitAt != -2:
		return fitAt, true
	}
	return firstAt, true
}
