package cas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// derivedBatch is how many derived-cache keys GC judges, and drops, at a
// time: memory stays bounded however large the cache.
const derivedBatch = 1000

// dropOrphanDerived drops the entries of the derived cache ([Repo.Derived])
// whose subject is gone: a "ref/<name>" entry whose ref does not exist, and
// a "<kind>/<HASH>" entry (rest a canonical hash) whose node is absent.
// Other keys are left alone. objs is GC's listing with its deletions
// marked (a dry run marks the candidates) and live the refs GC listed:
// a subject they show present is kept without a read; any other is looked
// up (Has, or the ref's Get) before its entry goes, so an entry of a node
// or ref made after the listing stays. It reports how many it dropped (or,
// with dryRun, would drop).
//
// It holds no lock, so it may still drop the entry of a subject that a
// writer makes between the look-up and the drop (a node put again after
// the sweep deleted it, a thread created meanwhile). That costs a
// recomputation and nothing else: every reader checks an entry against
// the nodes it describes, and recomputes a missing one. No entry is ever
// written or changed here, so none can become wrong.
func (r *Repo) dropOrphanDerived(ctx context.Context, objs gcTable, live map[string]bool, dryRun bool, pr *progress) (int, error) {
	d := r.Derived()
	dropped := 0
	var batch []string
	flush := func() error {
		orphans, err := r.derivedOrphans(ctx, batch, objs, live, dryRun)
		batch = batch[:0]
		if err != nil {
			return err
		}
		if len(orphans) == 0 {
			return nil
		}
		if !dryRun {
			if err := d.DropDerived(ctx, orphans...); err != nil {
				return err
			}
		}
		dropped += len(orphans)
		if r.log.Enabled(ctx, slog.LevelDebug) {
			for _, k := range orphans {
				r.log.Debug("gc dropped a derived-cache entry", "key", k, "dryRun", dryRun)
			}
		}
		return nil
	}
	for k, err := range d.DerivedKeys(ctx) {
		if err != nil {
			return dropped, err
		}
		pr.add(1)
		batch = append(batch, k)
		if len(batch) == derivedBatch {
			if err := flush(); err != nil {
				return dropped, err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return dropped, err
		}
	}
	return dropped, nil
}

// derivedOrphans returns the keys of keys whose subject is gone (see
// [Repo.dropOrphanDerived]), in their order. The nodes to look up are
// looked up together ([HasBatch]).
func (r *Repo) derivedOrphans(ctx context.Context, keys []string, objs gcTable, live map[string]bool, dryRun bool) ([]string, error) {
	orphan := make([]bool, len(keys))
	var ask []Hash // nodes to look up, and the keys naming them
	var askKeys []int
	for i, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		kind, rest, _ := strings.Cut(k, "/")
		if kind == "ref" {
			if live[rest] {
				continue
			}
			_, err := r.raw.Get(ctx, rest)
			switch {
			case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalid):
				// ErrInvalid: no ref can have that name.
				orphan[i] = true
			case err != nil && !isBadRef(err):
				return nil, fmt.Errorf("read ref %s of derived-cache entry %s: %w", rest, k, err)
			}
			continue
		}
		h, err := ParseHash(rest)
		if err != nil || h.String() != rest {
			continue
		}
		j, listed := objs.find(h)
		switch {
		case listed && objs[j].size >= 0:
			// Present, and not deleted.
		case listed && dryRun:
			orphan[i] = true // would be deleted
		default:
			ask = append(ask, h)
			askKeys = append(askKeys, i)
		}
	}
	if len(ask) > 0 {
		present, err := HasBatch(ctx, r.st, ask)
		if err != nil {
			return nil, fmt.Errorf("look up the nodes of %d derived-cache entries: %w", len(ask), err)
		}
		for j, ok := range present {
			if !ok {
				orphan[askKeys[j]] = true
			}
		}
	}
	var orphans []string
	for i, k := range keys {
		if orphan[i] {
			orphans = append(orphans, k)
		}
	}
	return orphans, nil
}

// isBadRef reports whether err says a ref exists but cannot be read.
func isBadRef(err error) bool {
	var b *BadRefError
	return errors.As(err, &b)
}
