package cas

import (
	"context"
	"errors"
	"fmt"
)

// LinkedSwapper is a [Refs] fast path for [Repo.PutNodesMove]: a step's
// nodes and its ref move in one atomic step (on PostgreSQL one round trip
// and one commit, where [LinkedPutter] and [TouchingSwapper] take two of
// each, and each commit waits for its own WAL flush).
//
// PutLinkedSwap does in st what [LinkedPutter.PutLinked] of data and edges
// does and then, only if every edge is present and every object of data
// holds its own bytes, what CompareAndSwap of name from old to new does
// (new, never zero, is one of data's hashes; old is never zero either),
// all under st's store-wide shared lock, as one transaction. It reports
// done false, having moved nothing, when it cannot do it so: st is not the
// store these refs belong to, nor wraps it (as for [TouchingSwapper]), an
// edge is absent, or an object meets other bytes at its hash (corrupt ones
// to heal, a collision); the repo then takes the slow path, which says
// what is wrong. With done true, err is the move's (a *[ConflictError]
// when name is not at old: the objects are stored anyway, as a put
// followed by a failed move leaves them, and hs is returned) or the whole
// step's failure (nothing stored, hs nil), and hs, on success, the hashes
// of data in order.
//
// With the put it writes entries to the store's [Derived] cache, in the same
// transaction (they are written whether or not the ref moves, and need not
// be durable: a store without the cache's table keeps none).
type LinkedSwapper interface {
	PutLinkedSwap(ctx context.Context, st Store, data [][]byte, edges []Hash, name string, old, new Hash, message string, entries []DerivedEntry) (hs []Hash, done bool, err error)
}

// DerivedEntry is an entry of a [Derived] cache: its key and its bytes.
type DerivedEntry struct {
	Key  string
	Data []byte
}

// moveCheckKey is the context key of [WithMoveCheck]'s function.
type moveCheckKey struct{}

// WithMoveCheck returns a context under which [Repo.PutNodesMove] calls
// check right before it moves the ref, after everything else it does
// first (the nodes' put, where that is a step of its own), and moves
// nothing when check fails: a fence, such as a lease that must still be
// valid when the ref moves.
func WithMoveCheck(ctx context.Context, check func() error) context.Context {
	return context.WithValue(ctx, moveCheckKey{}, check)
}

// checkMove runs ctx's [WithMoveCheck] function, if any.
func checkMove(ctx context.Context) error {
	if check, _ := ctx.Value(moveCheckKey{}).(func() error); check != nil {
		return check()
	}
	return nil
}

// PutNodesMove stores nodes as [Repo.PutNodes] does, then moves ref name
// from old to the last node's hash as Refs().CompareAndSwap does, and
// returns the nodes' hashes. On refs with [LinkedSwapper] (PostgreSQL)
// the two are one atomic step: the ref never moves without
// the nodes, and a conflict leaves them stored, as the two calls do. hs is
// nil if the nodes were not stored (err is then PutNodes'); with hs and an
// error, the nodes are stored and the move failed (a *[ConflictError] if
// name was not at old).
//
// It first writes entries to the [Derived] cache ([Repo.Derived]), as
// [Repo.PutDerived] does (on PostgreSQL in the same round trip): a
// higher layer's entries that describe the nodes. Writing them is best
// effort, as the cache's are: a failure is logged, not returned; a bad key
// fails the call with an error wrapping [ErrInvalid] before anything is
// written. Under [WithMoveCheck] a failed check leaves the nodes stored
// and the ref where it was, and is the error returned with hs.
func (r *Repo) PutNodesMove(ctx context.Context, nodes []Node, name string, old Hash, message string, entries ...DerivedEntry) (hs []Hash, err error) {
	for _, e := range entries {
		if err := ValidateDerivedKey(e.Key); err != nil {
			return nil, err
		}
	}
	if ls, ok := r.raw.(LinkedSwapper); ok && len(nodes) > 0 && !old.IsZero() {
		if hs, done, err := r.putNodesSwap(ctx, ls, nodes, name, old, message, entries); done {
			if m := readMemoOf(ctx); m != nil {
				for _, e := range entries {
					m.storeDerived(e.Key, derivedRead{data: e.Data, ok: true})
				}
			}
			return hs, err
		}
	}
	for _, e := range entries {
		if err := r.PutDerived(ctx, e.Key, e.Data); err != nil {
			r.log.Debug("write a derived-cache entry", "key", e.Key, "err", err)
		}
	}
	if hs, err = r.PutNodes(ctx, nodes); err != nil {
		return nil, err
	}
	if err := checkMove(ctx); err != nil {
		return hs, err // the nodes are stored, the ref is not moved
	}
	return hs, r.refs.CompareAndSwap(ctx, name, old, hs[len(hs)-1], message)
}

// putNodesSwap is PutNodesMove's fast path; done false means nothing is
// moved and the slow path is to run (it reports a bad node, name or
// message, an absent edge, a lost built-in schema).
func (r *Repo) putNodesSwap(ctx context.Context, ls LinkedSwapper, nodes []Node, name string, old Hash, message string, entries []DerivedEntry) (hs []Hash, done bool, err error) {
	if ValidateRefName(name) != nil {
		return nil, false, nil
	}
	ps := make([]prepared, len(nodes))
	for i, n := range nodes {
		if r.requireKind(ctx, n.Type) != nil {
			return nil, false, nil
		}
		p, err := r.prepare(ctx, n)
		if err != nil || r.requireEdges(ctx, p.edges) != nil {
			return nil, false, nil
		}
		ps[i] = p
	}
	newHash := ps[len(ps)-1].hash
	if newHash == old || r.requireKind(ctx, newHash) != nil {
		return nil, false, nil
	}
	data, edges, pos := linkedBatch(ps)
	if checkMove(ctx) != nil {
		return nil, false, nil // the slow path stores the nodes and says why
	}
	stored, done, err := ls.PutLinkedSwap(ctx, r.st, data, edges, name, old, newHash, message, entries)
	if !done {
		return nil, false, nil
	}
	var ce *ConflictError
	switch {
	case errors.As(err, &ce):
		// The objects are stored; the ref is elsewhere.
	case err != nil:
		// The whole step failed: nothing is stored.
		return nil, true, err
	}
	hs = make([]Hash, len(ps))
	for i, p := range ps {
		if j := pos[p.hash]; j >= len(stored) || stored[j] != p.hash {
			return nil, true, fmt.Errorf("put node: the store returned %d hashes for %d objects, want %s at %d", len(stored), len(data), p.hash, j)
		}
		hs[i] = p.hash
	}
	return hs, true, err
}
