package cas

import (
	"context"
	"time"
)

// StaleTempAge is how old a backend's temporary file must be to count as a
// crash leftover: far longer than any write takes. It is fixed, and never
// tied to GC's grace period, so that "gc --grace 0" cannot take a live
// writer's file.
const StaleTempAge = time.Hour

// TempCleaner is implemented by backends that write temporary files (the
// disk store): [Repo.GC] calls it so that a store that stays open (a
// worker, a server) still loses the leftovers of crashed writers, which
// otherwise only opening the store removes.
type TempCleaner interface {
	// RemoveStaleTemps removes the temporary files older than
	// [StaleTempAge] and reports how many it removed. It goes on past a
	// file it cannot remove and returns the first such error.
	RemoveStaleTemps(ctx context.Context) (removed int, err error)
}

// TempCounter is implemented by backends that write temporary files:
// [Repo.Fsck] reports what it counts.
type TempCounter interface {
	// CountTemps reports how many temporary files there are, and how many
	// of them are older than [StaleTempAge] (crash leftovers).
	CountTemps(ctx context.Context) (total, stale int, err error)
}
