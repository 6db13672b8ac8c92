package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// watchTimeout bounds how long the suite waits for a watcher: generous, so
// a loaded machine never fails it; a store that works answers in about its
// polling interval.
const watchTimeout = 30 * time.Second

// RunChanges checks a backend's store.Changes: open must return two
// handles on one new, empty store (as two processes would open it), both
// implementing store.Changes; the suite closes them. A write through either
// handle that leaves a job due wakes the other's watchers; a watch ends
// with its context or its store's Close.
func RunChanges(t *testing.T, open func(t *testing.T) (watched, writer store.Store)) {
	t.Helper()
	setup := func(t *testing.T) (context.Context, store.Changes, store.Store) {
		t.Helper()
		a, b := open(t)
		t.Cleanup(func() { a.Close(); b.Close() })
		w, ok := a.(store.Changes)
		if !ok {
			t.Fatalf("%T does not implement store.Changes", a)
		}
		return t.Context(), w, b
	}
	watch := func(t *testing.T, ctx context.Context, w store.Changes) <-chan struct{} {
		t.Helper()
		c, err := w.WatchJobs(ctx)
		if err != nil {
			t.Fatalf("WatchJobs: %v", err)
		}
		return c
	}
	await := func(t *testing.T, c <-chan struct{}, what string) {
		t.Helper()
		select {
		case _, ok := <-c:
			if !ok {
				t.Fatalf("%s: the watch ended instead of signalling", what)
			}
		case <-time.After(watchTimeout):
			t.Fatalf("%s: no signal in %s", what, watchTimeout)
		}
	}

	t.Run("SubmitWakes", func(t *testing.T) {
		t.Parallel()
		ctx, w, other := setup(t)
		c1, c2 := watch(t, ctx, w), watch(t, ctx, w)
		mustSubmit(t, ctx, other, newJob("w1"), nil, at(0))
		await(t, c1, "a job submitted through another handle")
		await(t, c2, "the same submission, for a second watcher")
	})
	t.Run("UnblockWakes", func(t *testing.T) {
		t.Parallel()
		ctx, w, other := setup(t)
		bring(t, ctx, other, job.Blocked, "b1")
		// Watching from now on: the submission and the block are before.
		c := watch(t, ctx, w)
		mustApply(t, ctx, other, "b1", job.NoFence, job.Change{To: job.Ready, From: []job.State{job.Blocked}, Reason: "unblocked", Now: at(time.Minute),
			Mutate: func(j *job.Job) { j.RunAt = at(time.Minute) }})
		await(t, c, "a blocked job made ready through another handle")
	})
	t.Run("EndsWithContext", func(t *testing.T) {
		t.Parallel()
		ctx, w, _ := setup(t)
		wctx, cancel := context.WithCancel(ctx)
		c := watch(t, wctx, w)
		cancel()
		awaitClosed(t, c, "a watch whose context ended")
	})
	t.Run("EndsWithClose", func(t *testing.T) {
		t.Parallel()
		ctx, w, _ := setup(t)
		c := watch(t, ctx, w)
		if err := w.(store.Store).Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		awaitClosed(t, c, "a watch of a closed store")
		if _, err := w.WatchJobs(ctx); err == nil {
			t.Errorf("WatchJobs on a closed store succeeded")
		}
	})
}

// awaitClosed waits for c to close, taking any signal still pending.
func awaitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	timeout := time.After(watchTimeout)
	for {
		select {
		case _, ok := <-c:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("%s: the channel stayed open %s", what, watchTimeout)
		}
	}
}
