package cas

import "slices"

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
	seen := make(map[LogEntry]bool, len(existing)+len(imported))
	for _, x := range existing {
		seen[entry(x)] = true
	}
	var runs [][]T
	for _, x := range imported {
		e := entry(x)
		if seen[e] {
			continue
		}
		seen[e] = true
		if n := len(runs); n > 0 && entry(runs[n-1][len(runs[n-1])-1]).New == e.Old {
			runs[n-1] = append(runs[n-1], x)
			continue
		}
		runs = append(runs, []T{x})
	}
	log := slices.Clone(existing)
	for len(runs) > 0 {
		var unplaced [][]T
		for _, run := range runs {
			if g, ok := bestGap(log, run, entry, cur); ok {
				log = slices.Insert(log, g, run...)
			} else {
				unplaced = append(unplaced, run)
			}
		}
		if len(unplaced) == len(runs) {
			break
		}
		runs = unplaced
	}
	if len(runs) == 0 {
		return log
	}
	slices.SortStableFunc(runs, func(a, b []T) int {
		ta, tb := entry(a[0]).Time, entry(b[0]).Time
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return 0
	})
	at := 0
	for i := len(log) - 1; i >= 0; i-- {
		if entry(log[i]).Old.IsZero() {
			at = i
			break
		}
	}
	return slices.Insert(log, at, slices.Concat(runs...)...)
}

// bestGap returns the gap of log (0 before its first element, len(log)
// after its last) that run links to best, as [MergeLog] says, and whether
// it links anywhere.
func bestGap[T any](log, run []T, entry func(T) LogEntry, cur Hash) (int, bool) {
	first, last := entry(run[0]), entry(run[len(run)-1])
	best, score := -1, 0
	for g := 0; g <= len(log); g++ {
		var head, tail bool
		open := g == 0 || g == len(log)
		if g == 0 {
			head = first.Old.IsZero()
		} else {
			head = entry(log[g-1]).New == first.Old
		}
		switch {
		case g < len(log):
			tail = entry(log[g]).Old == last.New
			open = open || g > 0 && entry(log[g-1]).New != entry(log[g]).Old
		case !cur.IsZero():
			tail = last.New == cur
			if !tail {
				continue // it would move a live ref
			}
		default:
			tail = len(log) == 0 || !entry(log[len(log)-1]).New.IsZero()
		}
		s := 0
		if head {
			s++
		}
		if tail {
			s++
		}
		if s == 0 || !open && s < 2 {
			continue
		}
		fits := g == 0 || entry(log[g-1]).Time <= first.Time
		switch {
		case s > score:
			best, score = g, s
		case s == score && fits:
			best = g
		}
	}
	return best, best >= 0
}
