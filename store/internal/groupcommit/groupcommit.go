// Package groupcommit lets the writes of many callers share transactions.
// A durable commit costs a disk flush (and, on a server, a round trip), far
// more than the statements of one small write, so a store queues its
// callers' writes and has a writer commit whatever is queued, up to a
// bound, in one transaction. Every caller returns only after the
// transaction holding its write committed or failed, so a nil error still
// means "durable".
//
// There is no timer: a lone call starts a writer at once and commits in a
// batch of one. A caller that finds fewer than the allowed writers running
// becomes one; after its first batch it hands any work queued meanwhile to
// a new goroutine, which exits when the queue is empty. No goroutine
// outlives the calls in flight, so a store's Close needs no hook.
//
// What a batch means (savepoints, set-based statements, retries) is the
// store's: the package only queues, hands out batches in queue order and
// releases the callers. docs/benchmarks.md has what it buys.
package groupcommit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Call states: a queued call is taken by a writer or abandoned by its
// caller, whichever comes first.
const (
	callPending int32 = iota
	callTaken
	callAbandoned
)

// ErrPanicked is the error of a call whose work panicked (see Call.Guard);
// its caller panics with the value instead of returning.
var ErrPanicked = errors.New("the write panicked")

// Call is one caller's share of a batch. Value is the caller's work; the
// commit function reads it and may write results into it (when it is a
// pointer), which the caller reads after Do returns.
type Call[T any] struct {
	Value T
	ctx   context.Context
	state atomic.Int32
	done  chan struct{}
	// Set by the writer before done is closed.
	err      error
	panicked any
}

// SetErr sets the error the call's Do returns; nil (the default) means the
// call's write committed.
func (c *Call[T]) SetErr(err error) { c.err = err }

// Err is the error set so far.
func (c *Call[T]) Err() error { return c.err }

// Panicked reports whether the call's work panicked in Guard.
func (c *Call[T]) Panicked() bool { return c.panicked != nil }

// Guard runs fn, the call's own work (code of the caller's, say), and
// returns its error. Should fn panic, Guard returns ErrPanicked and the
// call's Do panics with the value in the caller's goroutine, so that one
// bad call cannot take the writer, nor the batch's other calls, down.
func (c *Call[T]) Guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.panicked, err = r, ErrPanicked
		}
	}()
	return fn()
}

// Queue batches the calls of one store. The zero Queue is not usable; see
// New.
type Queue[T any] struct {
	commit     func(ctx context.Context, calls []*Call[T])
	maxBatch   int
	maxWriters int
	// enqueued, when set (by tests), is called after each call is queued.
	enqueued func()

	mu      sync.Mutex
	pending []*Call[T]
	writers int // running
}

// New returns a queue whose writers, at most maxWriters at once, hand
// batches of up to maxBatch calls, in queue order, to commit. commit must
// set the error of every call whose write did not commit, and return only
// once the batch's transaction ended; the batch's callers are released
// when it returns. Its ctx ends once every caller of the batch has given
// up waiting (their contexts ended), and not before.
func New[T any](maxBatch, maxWriters int, commit func(ctx context.Context, calls []*Call[T])) *Queue[T] {
	return &Queue[T]{commit: commit, maxBatch: max(1, maxBatch), maxWriters: max(1, maxWriters)}
}

// Do queues v and returns once the batch holding it committed (nil) or
// failed (its error). If ctx ends while v is still queued, Do returns
// ctx.Err() and v is never committed; once a writer took it, Do waits for
// its batch. Should v's work have panicked in Guard, Do panics with the
// same value.
func (q *Queue[T]) Do(ctx context.Context, v T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &Call[T]{Value: v, ctx: ctx, done: make(chan struct{})}
	q.mu.Lock()
	q.pending = append(q.pending, c)
	writer := q.writers < q.maxWriters
	if writer {
		q.writers++
	}
	q.mu.Unlock()
	if q.enqueued != nil {
		q.enqueued()
	}

	if writer {
		// This caller is a writer for one batch, which holds its own call
		// unless other writers left more than a batch queued. Work queued
		// meanwhile goes to a goroutine, so that this caller returns as
		// soon as its own batch committed.
		if b := q.take(); b != nil {
			q.run(b)
			if next := q.take(); next != nil {
				go func() {
					for ; next != nil; next = q.take() {
						q.run(next)
					}
				}()
			}
		}
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		if c.state.CompareAndSwap(callPending, callAbandoned) {
			return ctx.Err()
		}
		<-c.done
	}
	if c.panicked != nil {
		panic(c.panicked)
	}
	return c.err
}

// take removes up to maxBatch queued calls that their callers have not
// abandoned, and returns them. When none is left it ends the writer that
// called it and returns nil.
func (q *Queue[T]) take() []*Call[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) > 0 {
		n := min(len(q.pending), q.maxBatch)
		var taken []*Call[T]
		for _, c := range q.pending[:n] {
			if c.state.CompareAndSwap(callPending, callTaken) {
				taken = append(taken, c)
			}
		}
		// A copy, so that the backing array does not grow without bound.
		q.pending = append(q.pending[:0:0], q.pending[n:]...)
		if len(taken) > 0 {
			return taken
		}
	}
	q.writers--
	return nil
}

// run commits one batch and releases its callers, even should commit
// panic outside a Guard (each caller then panics with the value).
func (q *Queue[T]) run(calls []*Call[T]) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waiting atomic.Int64
	waiting.Store(int64(len(calls)))
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
	}
	defer func() {
		r := recover()
		for i, c := range calls {
			stops[i]()
			if r != nil && c.panicked == nil {
				c.panicked = r
			}
			close(c.done)
		}
	}()
	q.commit(ctx, calls)
}
