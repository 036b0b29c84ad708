package thread

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// KeyPrefix is the ref folder of start keys: keys/<key> points at a
// thread-key node naming the thread started under the key
// ([Engine.StartKeyed]).
const KeyPrefix = "keys/"

// keyLogPrefix begins the log message of a thread started under a key
// ("start key <key>"); [Engine.Remove] reads it to find the key to drop.
const keyLogPrefix = "start key "

// ErrInvalidKey is wrapped by errors about a start key that cannot be a
// ref name. It wraps [cas.ErrInvalidRefName].
var ErrInvalidKey = fmt.Errorf("%w: invalid start key", cas.ErrInvalidRefName)

// Key is a start key: the thread started under it, as its thread-key node
// ([cas.ThreadKeySchema], a format version 2 kind) records it.
type Key struct {
	Key    string   // the key: the ref keys/<Key>
	Thread string   // the thread started under it
	Start  cas.Hash // that thread's start node
	At     int64    // when the key was taken, Unix milliseconds
}

func (k *Key) payload() map[string]any {
	return map[string]any{"key": k.Key, "thread": k.Thread, "start": k.Start.String(), "at": float64(k.At)}
}

// ValidateKey checks a start key: one or more '/'-separated segments of
// [A-Za-z0-9][A-Za-z0-9._-]*, at most 195 characters (so that keys/<key> is
// a ref name). The error wraps [ErrInvalidKey] and says what is wrong.
func ValidateKey(key string) error {
	if err := cas.ValidateRefName(KeyPrefix + key); err != nil || key == "" {
		why := "it must be 1-195 characters of '/'-separated segments, each [A-Za-z0-9][A-Za-z0-9._-]*"
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why)
	}
	return nil
}

// ReadKey returns the start key key, or an error wrapping
// [cas.ErrNotFound] if no thread was started under it (or its thread was
// removed), [ErrInvalidKey] for a key that cannot be one.
func (e *Engine) ReadKey(ctx context.Context, key string) (*Key, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	h, err := e.refs.Get(ctx, KeyPrefix+key)
	if err != nil {
		if errors.Is(err, cas.ErrNotFound) {
			return nil, fmt.Errorf("start key %s: %w: no thread was started under it", key, cas.ErrNotFound)
		}
		return nil, fmt.Errorf("start key %s: %w", key, err)
	}
	return e.keyNode(ctx, key, h)
}

// keyNode reads the thread-key node h that keys/<key> points at.
func (e *Engine) keyNode(ctx context.Context, key string, h cas.Hash) (*Key, error) {
	n, err := e.repo.Get(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("start key %s: its node %s: %w", key, h, err)
	}
	if n.Type != cas.ThreadKeySchema {
		return nil, fmt.Errorf("start key %s: %w: its ref %s%s points at a node of type %s, not a thread key", key, cas.ErrInvalid, KeyPrefix, key, n.Type)
	}
	p, _ := n.Payload.(map[string]any)
	k := &Key{}
	k.Key, _ = p["key"].(string)
	k.Thread, _ = p["thread"].(string)
	start, _ := p["start"].(string)
	at, _ := p["at"].(float64)
	k.At = int64(at)
	if k.Start, err = cas.ParseCanonicalHash(start); err != nil {
		return nil, fmt.Errorf("start key %s: %w: its node %s has a bad start: %v", key, cas.ErrInvalid, h, err)
	}
	return k, nil
}

// StartKeyed is [Engine.Start] under a key, for work that must start once
// however often it is asked for (a cron job, a retried script): if a
// thread was already started under key, it starts nothing and returns that
// thread with existing set; else it starts a thread and records it under
// the ref keys/<key>, a thread-key node (the first one moves the store to
// format version 2: [cas.Repo.RequireVersion]).
//
// Two starts with one key, in any processes, start one thread: the key's
// ref is created by compare-and-swap before the thread's, and the loser
// returns the winner's thread. A start that stopped between the two (the
// key taken, the thread's ref not made) is finished by the next start with
// that key. A key whose thread was removed ([Engine.Remove] drops it) is
// free again.
//
// Errors: as Start's, and [ErrInvalidKey] for a key that cannot be a ref
// name.
func (e *Engine) StartKeyed(ctx context.Context, key string, workflow cas.Hash, prompt, cwd string) (id string, head cas.Hash, existing *Key, err error) {
	if err := ValidateKey(key); err != nil {
		return "", 0, nil, err
	}
	ref := KeyPrefix + key
	var lastErr error
	for range 5 {
		kh, err := e.refs.Get(ctx, ref)
		switch {
		case errors.Is(err, cas.ErrNotFound):
			id, head, err := e.startUnderKey(ctx, key, workflow, prompt, cwd)
			if errors.Is(err, cas.ErrConflict) {
				lastErr = err
				continue // another start took the key meanwhile: return its thread
			}
			return id, head, nil, err
		case err != nil:
			return "", 0, nil, fmt.Errorf("start key %s: %w", key, err)
		}
		k, err := e.keyNode(ctx, key, kh)
		if err != nil {
			return "", 0, nil, err
		}
		th, err := e.refs.Get(ctx, refName(k.Thread))
		if err == nil {
			return k.Thread, th, k, nil
		}
		if !errors.Is(err, cas.ErrNotFound) {
			return "", 0, nil, fmt.Errorf("start key %s: thread %s: %w", key, k.Thread, err)
		}
		log, err := e.refs.Log(ctx, refName(k.Thread))
		if err != nil && !errors.Is(err, cas.ErrNotFound) {
			return "", 0, nil, fmt.Errorf("start key %s: thread %s: %w", key, k.Thread, err)
		}
		if len(log) > 0 {
			// The thread was made and removed, by an rm that stopped before
			// dropping its key: the key is free.
			lastErr = e.refs.CompareAndSwap(ctx, ref, kh, 0, "rm (thread "+k.Thread+" was removed)")
			if lastErr != nil && !errors.Is(lastErr, cas.ErrConflict) {
				return "", 0, nil, fmt.Errorf("start key %s: free it: %w", key, lastErr)
			}
			continue
		}
		// The start that took the key stopped before making its thread:
		// finish it (the key node keeps the start node reachable).
		lastErr = e.refs.CompareAndSwap(ctx, refName(k.Thread), 0, k.Start, keyLogPrefix+key)
		if lastErr == nil {
			e.storeOrigin(ctx, k.Thread, Origin{Node: k.Start})
			return k.Thread, k.Start, k, nil
		}
		if !errors.Is(lastErr, cas.ErrConflict) {
			return "", 0, nil, fmt.Errorf("start key %s: thread %s: %w", key, k.Thread, lastErr)
		}
	}
	return "", 0, nil, fmt.Errorf("start key %s: it keeps changing: %w", key, lastErr)
}

// startUnderKey stores a start node and a thread-key node, takes the key,
// then makes the thread's ref. The error wraps [cas.ErrConflict] if the
// key was taken meanwhile (and nothing but unreferenced nodes was written).
func (e *Engine) startUnderKey(ctx context.Context, key string, workflow cas.Hash, prompt, cwd string) (string, cas.Hash, error) {
	wn, err := e.repo.Get(ctx, workflow)
	if err != nil {
		return "", 0, fmt.Errorf("start: workflow %s: %w", workflow, err)
	}
	if wn.Type != cas.WorkflowSchema {
		return "", 0, fmt.Errorf("start: %s: %w: not a workflow node", workflow, cas.ErrInvalid)
	}
	s := &Start{Workflow: workflow, Prompt: prompt, Cwd: cwd}
	head, err := e.repo.Put(ctx, cas.StartSchema, s.Payload())
	if err != nil {
		return "", 0, fmt.Errorf("start: %w", err)
	}
	id := e.newID().String()
	k := &Key{Key: key, Thread: id, Start: head, At: e.nowMs()}
	kh, err := e.repo.Put(ctx, cas.ThreadKeySchema, k.payload()) // moves the store to version 2
	if err != nil {
		return "", 0, fmt.Errorf("start key %s: %w", key, err)
	}
	if err := e.refs.CompareAndSwap(ctx, KeyPrefix+key, 0, kh, "start "+id); err != nil {
		return "", 0, fmt.Errorf("start key %s: %w", key, err)
	}
	if err := e.refs.CompareAndSwap(ctx, refName(id), 0, head, keyLogPrefix+key); err != nil {
		return "", 0, fmt.Errorf("start: %w", err)
	}
	e.storeOrigin(ctx, id, Origin{Node: head})
	return id, head, nil
}

// dropKey removes the start key of thread id, if it was started under one
// that still names it. The key is read from the first entry of the
// thread's log ("start key <key>"); a log pruned of it makes dropKey look
// through every key.
func (e *Engine) dropKey(ctx context.Context, id string) error {
	var keys []string
	log, err := e.refs.Log(ctx, refName(id))
	switch {
	case errors.Is(err, cas.ErrNotFound) || err == nil && len(log) == 0:
		return nil // never made
	case err != nil:
		return fmt.Errorf("look for the start key of thread %s: %w", id, err)
	case log[0].Old.IsZero():
		k, ok := strings.CutPrefix(log[0].Message, keyLogPrefix)
		if !ok {
			return nil // started without a key, or forked
		}
		keys = []string{k}
	default:
		for r, err := range e.refs.List(ctx, KeyPrefix) {
			if err != nil {
				return fmt.Errorf("look for the start key of thread %s: %w", id, err)
			}
			keys = append(keys, strings.TrimPrefix(r.Name, KeyPrefix))
		}
	}
	for _, key := range keys {
		kh, err := e.refs.Get(ctx, KeyPrefix+key)
		if errors.Is(err, cas.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("drop start key %s of thread %s: %w", key, id, err)
		}
		k, err := e.keyNode(ctx, key, kh)
		if err != nil || k.Thread != id {
			continue // not this thread's (a damaged key is fsck's to report)
		}
		if err := e.refs.CompareAndSwap(ctx, KeyPrefix+key, kh, 0, "rm "+id); err != nil && !errors.Is(err, cas.ErrNotFound) {
			return fmt.Errorf("drop start key %s of thread %s: %w", key, id, err)
		}
	}
	return nil
}
