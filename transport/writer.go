package transport

import (
	"context"
	"fmt"
	"sync"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// writer persists observations, coalesced: it keeps only the latest state
// per key while a write is in flight, and writes everything pending in one
// RecordStates call. It is the only writer of states, urgent or not, so its
// writes land in the order the states were queued: a state written at once
// (writeNow) replaces an earlier one of its key still pending, and is
// written after one in flight, which therefore cannot overwrite it in the
// store when both carry the same observed time (the store keeps the later
// write on a tie). Its goroutine runs only while there is something to
// write, so an idle writer holds no goroutine and needs no Stop. Safe for
// concurrent use.
type writer struct {
	st   store.Store
	warn func(string, ...any)

	mu      sync.Mutex
	pending map[quota.Key]quota.State
	running bool
	// queued counts enqueue calls; written is the count covered by the
	// writes done so far. done is closed (and replaced) after each write.
	queued, written uint64
	done            chan struct{}
	err             error // first failure since the last flush

	urgentQueued func() // tests: called when writeNow waits behind a write in flight
}

func newWriter(st store.Store, warn func(string, ...any)) *writer {
	return &writer{st: st, warn: warn, pending: map[quota.Key]quota.State{}, done: make(chan struct{})}
}

// enqueue queues states for the background writer; a later observation of
// a key replaces an earlier one still queued.
func (w *writer) enqueue(states []quota.State) {
	if len(states) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.enqueueLocked(states)
}

// writeNow queues states and waits until they are written, after every
// state queued before them; a failure is logged (and kept for flush) as a
// background one is. Each write is bounded by storeTimeout, so this waits
// at most for the write in flight and its own.
func (w *writer) writeNow(states []quota.State) {
	if len(states) == 0 {
		return
	}
	w.mu.Lock()
	behind := w.running
	target := w.enqueueLocked(states)
	hook := w.urgentQueued
	for w.written < target {
		done := w.done
		w.mu.Unlock()
		if behind && hook != nil {
			hook()
			hook = nil
		}
		<-done
		w.mu.Lock()
	}
	w.mu.Unlock()
}

// enqueueLocked queues states and returns the count a write must cover
// to include them. w.mu must be held.
func (w *writer) enqueueLocked(states []quota.State) uint64 {
	w.queued++
	for _, s := range states {
		if old, ok := w.pending[s.Key]; ok && old.ObservedAt.After(s.ObservedAt) {
			continue
		}
		w.pending[s.Key] = s
	}
	if !w.running {
		w.running = true
		go w.run()
	}
	return w.queued
}

// run writes batches until nothing is pending.
func (w *writer) run() {
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.running = false
			w.written = w.queued
			w.signalLocked()
			w.mu.Unlock()
			return
		}
		upto := w.queued
		batch := make([]quota.State, 0, len(w.pending))
		for _, s := range w.pending {
			batch = append(batch, s)
		}
		clear(w.pending)
		w.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		err := w.st.RecordStates(ctx, batch)
		cancel()
		if err != nil {
			w.warn("layover: write quota states", "states", len(batch), "err", err)
		}
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		w.written = upto
		w.signalLocked()
		w.mu.Unlock()
	}
}

func (w *writer) signalLocked() {
	close(w.done)
	w.done = make(chan struct{})
}

// flush waits until every state queued before it is written, or ctx ends
// (then it returns ctx.Err()). It returns the first write failure since
// the last flush. States queued while it waits do not hold it up.
func (w *writer) flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.queued
	for w.written < target {
		done := w.done
		w.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	err := w.err
	w.err = nil
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write quota states: %w", err)
	}
	return nil
}
