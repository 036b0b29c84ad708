// Package castest is the conformance suite for [cas.Store] and [cas.Refs]
// backends, and the failing-backend wrappers that drive error paths in the
// layers above them.
//
// A backend's test is one call:
//
//	func TestConformance(t *testing.T) {
//		castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
//			s := openFreshStore(t)
//			return s, s.Refs()
//		})
//	}
//
// [Run] calls open once per subtest, for a fresh, empty store and its refs,
// and re-hashes every object when the subtest ends ([Verify]). [RunStore]
// and [RunRefs] run the halves separately.
//
// # Clocks
//
// The suite never sets a backend's clock: it reads it with
// [cas.Store.Now] and works with cutoffs relative to it, sleeping a few
// milliseconds where time must pass, so it also suits a backend whose clock
// is a database server's. The clock must advance. [RunRefs] alone has no
// store: it reads the refs' clock through [Clock] if the refs implement it,
// else the local clock.
//
// # Optional abilities
//
// A store that implements [Corrupter] also gets the corruption tests (Get
// reports [cas.ErrCorrupt], Put heals). A store that implements
// [cas.BatchPutter] has its PutBatch tested; others are tested through the
// [cas.PutBatch] fallback.
//
// # Fault injection
//
// [FaultyStore] and [FaultyRefs] wrap a backend and fail the calls a Fail
// function chooses; [FailOp], [FailOn], [FailAfter] and [FailFirst] build
// common Fail functions, and [ErrInjected] is a ready-made error for them.
package castest
