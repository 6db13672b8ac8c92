package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// recorder is a commit function that records each batch's values, in
// order, and holds a batch until the test releases it when hold is set.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	hold    bool
	started chan []int // a batch began (when hold)
	// release lets one held batch commit; buffered, so that a batch that
	// never comes fails the test instead of hanging it.
	release chan struct{}
	fail    map[int]error // the error of a value's call
}

func newRecorder(hold bool) *recorder {
	return &recorder{hold: hold, started: make(chan []int, 16), release: make(chan struct{}, 16)}
}

func (r *recorder) commit(ctx context.Context, calls []*Call[int]) {
	var vs []int
	for _, c := range calls {
		vs = append(vs, c.Value)
	}
	r.mu.Lock()
	r.batches = append(r.batches, vs)
	r.mu.Unlock()
	if r.hold {
		r.started <- vs
		<-r.release
	}
	for _, c := range calls {
		c.SetErr(r.fail[c.Value])
	}
}

func (r *recorder) got() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// queued returns a queue on r whose enqueued hook reports each call queued
// on the channel returned.
func queued(r *recorder, maxBatch, maxWriters int) (*Queue[int], chan struct{}) {
	q := New(maxBatch, maxWriters, r.commit)
	ch := make(chan struct{}, 64)
	q.enqueued = func() { ch <- struct{}{} }
	return q, ch
}

// doAll calls Do for each value in its own goroutine and returns their
// errors by value once all returned.
func doAll(q *Queue[int], ctx context.Context, vs ...int) func() map[int]error {
	var mu sync.Mutex
	errs := map[int]error{}
	var wg sync.WaitGroup
	for _, v := range vs {
		wg.Go(func() {
			err := q.Do(ctx, v)
			mu.Lock()
			errs[v] = err
			mu.Unlock()
		})
	}
	return func() map[int]error {
		wg.Wait()
		return errs
	}
}

func TestLoneCallCommitsAlone(t *testing.T) {
	t.Parallel()
	r := newRecorder(false)
	q := New(8, 1, r.commit)
	for v := range 3 {
		if err := q.Do(t.Context(), v); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(r.got()); got != "[[0] [1] [2]]" {
		t.Errorf("batches %s, want one per call", got)
	}
	if q.writers != 0 || len(q.pending) != 0 {
		t.Errorf("after the calls: %d writers, %d queued", q.writers, len(q.pending))
	}
}

// While a batch commits, the calls queued meanwhile wait and then share
// the next batches, in queue order, up to maxBatch each; each gets its own
// error.
func TestQueuedCallsShareBatchesInOrder(t *testing.T) {
	t.Parallel()
	r := newRecorder(true)
	r.fail = map[int]error{3: errors.New("three failed")}
	q, enq := queued(r, 4, 1)
	first := doAll(q, t.Context(), 0)
	<-enq
	<-r.started
	var waits []func() map[int]error
	for v := 1; v <= 6; v++ {
		waits = append(waits, doAll(q, t.Context(), v))
		<-enq // queued in this order
	}
	for range 3 { // each held batch takes one release
		r.release <- struct{}{}
	}
	if err := first()[0]; err != nil {
		t.Fatal(err)
	}
	for i, w := range waits {
		v := i + 1
		err := w()[v]
		if (v == 3) != (err != nil) {
			t.Errorf("call %d: %v", v, err)
		}
	}
	if got := fmt.Sprint(r.got()); got != "[[0] [1 2 3 4] [5 6]]" {
		t.Errorf("batches %s, want [[0] [1 2 3 4] [5 6]]", got)
	}
}

// Up to maxWriters batches commit at once; a call beyond waits for one.
func TestWritersAtOnce(t *testing.T) {
	t.Parallel()
	r := newRecorder(true)
	q, enq := queued(r, 8, 2)
	a := doAll(q, t.Context(), 1)
	<-enq
	<-r.started
	b := doAll(q, t.Context(), 2)
	<-enq
	<-r.started // a second writer, while the first holds its batch
	c := doAll(q, t.Context(), 3)
	<-enq
	select {
	case vs := <-r.started:
		t.Fatalf("a third batch %v began with two writers allowed", vs)
	default:
	}
	for range 3 {
		r.release <- struct{}{}
	}
	for v, w := range map[int]func() map[int]error{1: a, 2: b, 3: c} {
		if err := w()[v]; err != nil {
			t.Errorf("call %d: %v", v, err)
		}
	}
	if got := fmt.Sprint(r.got()); got != "[[1] [2] [3]]" {
		t.Errorf("batches %s", got)
	}
}

// A caller that gives up while its call is queued gets its context's
// error, and its call is never committed; one that gives up once a writer
// took its call waits for the batch. The batch's context ends once all its
// callers gave up.
func TestGivingUp(t *testing.T) {
	t.Parallel()
	var commitCtx context.Context
	started, release := make(chan struct{}), make(chan struct{})
	var batches [][]int
	q := New(8, 1, func(ctx context.Context, calls []*Call[int]) {
		var vs []int
		for _, c := range calls {
			vs = append(vs, c.Value)
		}
		batches = append(batches, vs)
		if calls[0].Value == 0 {
			commitCtx = ctx
			started <- struct{}{}
			<-release
		}
	})
	enq := make(chan struct{}, 8)
	q.enqueued = func() { enq <- struct{}{} }

	ctx0, cancel0 := context.WithCancel(t.Context())
	first := doAll(q, ctx0, 0)
	<-enq
	<-started
	ctx1, cancel1 := context.WithCancel(t.Context())
	queuedCall := doAll(q, ctx1, 1)
	<-enq
	cancel1()
	if err := queuedCall()[1]; !errors.Is(err, context.Canceled) {
		t.Errorf("a queued call given up: %v, want context.Canceled", err)
	}
	if commitCtx.Err() != nil {
		t.Fatal("the batch's context ended while its caller waited")
	}
	cancel0()
	<-commitCtx.Done() // the only caller of the batch gave up
	select {
	case err := <-errCh(first):
		t.Fatalf("the taken call returned (%v) before its batch ended", err)
	default:
	}
	close(release)
	if err := first()[0]; err != nil {
		t.Errorf("the taken call: %v, want its batch's nil", err)
	}
	if err := q.Do(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(batches); got != "[[0] [2]]" {
		t.Errorf("batches %s: the abandoned call was committed", got)
	}
}

// errCh reports w's error for value 0 should it be ready at once.
func errCh(w func() map[int]error) chan error {
	ch := make(chan error, 1)
	go func() { ch <- w()[0] }()
	return ch
}

// A call whose work panics in Guard panics in its own caller with the
// value; the other calls of its batch commit.
func TestGuardedPanic(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	q := New(8, 1, func(_ context.Context, calls []*Call[int]) {
		if calls[0].Value == 0 {
			started <- struct{}{}
			<-release
			return
		}
		for _, c := range calls {
			err := c.Guard(func() error {
				if c.Value == 2 {
					panic("bad mutate")
				}
				return nil
			})
			if c.Value == 2 && !errors.Is(err, ErrPanicked) {
				t.Errorf("Guard of a panic: %v", err)
			}
		}
	})
	enq := make(chan struct{}, 8)
	q.enqueued = func() { enq <- struct{}{} }
	first := doAll(q, t.Context(), 0)
	<-enq
	<-started
	var mu sync.Mutex
	got := map[int]any{}
	var wg sync.WaitGroup
	for v := 1; v <= 3; v++ {
		wg.Go(func() {
			defer func() {
				mu.Lock()
				got[v] = recover()
				mu.Unlock()
			}()
			if err := q.Do(t.Context(), v); err != nil {
				t.Errorf("call %d: %v", v, err)
			}
		})
		<-enq
	}
	close(release)
	wg.Wait()
	first()
	if fmt.Sprint(got) != "map[1:<nil> 2:bad mutate 3:<nil>]" {
		t.Errorf("panics per call: %v, want only call 2's", got)
	}
}

// A commit function that panics outside Guard releases every caller of
// its batch, each panicking with the value, and later calls still commit.
func TestCommitPanic(t *testing.T) {
	t.Parallel()
	q := New(8, 1, func(_ context.Context, calls []*Call[int]) {
		if calls[0].Value == 1 {
			panic("store bug")
		}
	})
	func() {
		defer func() {
			if r := recover(); r != "store bug" {
				t.Errorf("recovered %v, want the commit's panic", r)
			}
		}()
		_ = q.Do(t.Context(), 1)
	}()
	if err := q.Do(t.Context(), 2); err != nil {
		t.Errorf("the call after: %v", err)
	}
}

func TestDoneContext(t *testing.T) {
	t.Parallel()
	q := New(8, 1, func(context.Context, []*Call[int]) { t.Error("a call with a done context was committed") })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := q.Do(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Do: %v", err)
	}
}
