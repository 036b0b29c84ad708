package serve

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// TestFeed: streams from the head share one watch (one subscription each,
// one watch started); each gets every move in order; a stream resuming
// from a recent cursor rides along from there without a repeat, one from
// a cursor the feed does not hold watches alone; a stream that falls
// behind the feed's buffer goes on alone and misses nothing; the watch
// stops with the last stream.
func TestFeed(t *testing.T) {
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(t.Context(), mem, mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newFeed(repo)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var chans []<-chan watchItem
	for range 3 {
		_, items, err := stream(f, ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, items)
	}
	slowCtx, stopSlow := context.WithCancel(ctx)
	defer stopSlow()
	_, slow, err := stream(f, slowCtx, "") // read only at the end
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	subs, gen := len(f.subs), f.gen
	f.mu.Unlock()
	if subs != 4 || gen != 1 {
		t.Fatalf("%d subscriptions over %d watches started, want 4 over 1", subs, gen)
	}
	var targets []cas.Hash
	for i := range 2 {
		h, err := repo.Put(ctx, cas.ContentSchema, fmt.Sprint("target ", i))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, h)
	}
	const moves = feedBuffer + 300 // more than the slow stream's buffers hold
	// The other streams read as the moves come.
	got := make([][]watchItem, len(chans))
	count := make([]atomic.Int64, len(chans))
	var wg sync.WaitGroup
	for i, c := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range c {
				got[i] = append(got[i], it)
				count[i].Add(1)
				if len(got[i]) == moves || it.err != nil {
					return
				}
			}
		}()
	}
	old := cas.Hash(0)
	for i := range moves {
		h := targets[i%2]
		if err := repo.Refs().CompareAndSwap(ctx, "feed/r", old, h, "test"); err != nil {
			t.Fatal(err)
		}
		old = h
		if i%100 == 99 {
			// The others keep up (the slow one does not read).
			for j := range count {
				for deadline := time.Now().Add(10 * time.Second); count[j].Load() < int64(i+1) && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
		}
	}
	read := func(name string, items <-chan watchItem, n int) []cas.Event {
		t.Helper()
		var evs []cas.Event
		for len(evs) < n {
			select {
			case it, ok := <-items:
				if !ok || it.err != nil {
					t.Fatalf("%s: ended after %d events: %v", name, len(evs), it.err)
				}
				evs = append(evs, it.ev)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: %d events, want %d", name, len(evs), n)
			}
		}
		for i, ev := range evs {
			if want := targets[i%2]; ev.New != want {
				t.Fatalf("%s: event %d moves to %s, want %s", name, i, ev.New, want)
			}
		}
		return evs
	}
	wg.Wait()
	var first []cas.Event
	for i := range chans {
		buf := make(chan watchItem, len(got[i]))
		for _, it := range got[i] {
			buf <- it
		}
		evs := read(fmt.Sprint("stream ", i), buf, moves)
		if i == 0 {
			first = evs
		}
	}
	read("the slow stream", slow, moves)
	f.mu.Lock()
	subs = len(f.subs)
	f.mu.Unlock()
	if subs != 3 {
		t.Errorf("%d subscriptions after the slow stream fell behind, want 3 (it goes on alone)", subs)
	}

	// Resuming from a recent cursor: the moves after it, once each.
	at := first[moves-10].Cursor
	start, items, err := stream(f, ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if start != at {
		t.Errorf("resumed from %s, want %s", start, at)
	}
	evs := make([]cas.Event, 0, 9)
	for range 9 {
		it := <-items
		if it.err != nil {
			t.Fatal(it.err)
		}
		evs = append(evs, it.ev)
	}
	for i, ev := range evs {
		if ev.Cursor != first[moves-9+i].Cursor {
			t.Fatalf("resumed event %d has cursor %s, want %s", i, ev.Cursor, first[moves-9+i].Cursor)
		}
	}
	// From the oldest cursor, which the feed no longer holds: alone, and
	// the same events.
	start, items, err = stream(f, ctx, first[0].Cursor)
	if err != nil || start != first[0].Cursor {
		t.Fatalf("from the first cursor: %s, %v", start, err)
	}
	if it := <-items; it.err != nil || it.ev.Cursor != first[1].Cursor {
		t.Fatalf("from the first cursor, the first event is %+v, want cursor %s", it, first[1].Cursor)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		stopped := f.cancel == nil && len(f.subs) == 0
		f.mu.Unlock()
		if stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shared watch runs on after every stream ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stream reads a source as the events handler does (moving on alone when
// the feed drops it) into one channel.
func stream(f *feed, ctx context.Context, after cas.Cursor) (cas.Cursor, <-chan watchItem, error) {
	src, start, err := f.open(ctx, after)
	if err != nil {
		return "", nil, err
	}
	out := make(chan watchItem)
	go func() {
		defer src.close()
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case <-src.dropped:
				src.alone(ctx)
			case it, ok := <-src.items:
				if !ok {
					return
				}
				if it.err == nil {
					src.last = it.ev.Cursor
				}
				select {
				case out <- it:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return start, out, nil
}
