package host_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// clockedQuotas records the fake clock's time at each fresh quota read.
type clockedQuotas struct {
	*fakeQuotas
	now  func() time.Time
	mu   sync.Mutex
	read []time.Time
}

func (q *clockedQuotas) Fresh(ctx context.Context, keys []quota.Key) ([]quota.State, error) {
	q.mu.Lock()
	q.read = append(q.read, q.now())
	q.mu.Unlock()
	return q.fakeQuotas.Fresh(ctx, keys)
}

func (q *clockedQuotas) reads() []time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]time.Time(nil), q.read...)
}

// awaitStillWith waits until the host is still (host.Host.Still) with
// cond true, on its Stilled signal.
func (b *bundle) awaitStillWith(cond func() bool, what string) {
	b.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if still, _ := b.host.Still(); still && cond() {
			return
		}
		select {
		case <-b.host.Stilled():
		case <-timeout:
			b.t.Fatal("the host never became still, " + what)
		}
	}
}

// deferOnCore runs job j once into a quota wait on core and returns its
// wake-up.
func (b *bundle) deferOnCore(id string) time.Time {
	b.t.Helper()
	reset := t0.Add(30 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) }, ok)
	b.submit(id, job.Spec{Quota: []string{"github"}, CheckCmd: "exit 1"})
	return b.awaitState(id, job.Deferred).RunAt
}

// A resume waits for its turn under the resume rate before it reads the
// quota, so the read happens at its turn (docs/lifecycle.md, The resume
// preflight), and the wait is not work for Still.
func TestResumeReadsTheQuotaAtItsTurn(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		q := &clockedQuotas{fakeQuotas: &fakeQuotas{}}
		b := setupOn(t, st, func(c *host.Config) { c.Quotas = q })
		q.now = b.clock.Now
		wake := b.deferOnCore("j")
		// Other resumes took the key's slots for the next 2 s.
		if _, err := st.TakeResumeSlot(context.Background(), coreKey, wake, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		slot := wake.Add(2 * time.Second)
		b.clock.Set(wake)
		b.awaitStillWith(func() bool { return !b.host.Pacing().IsZero() }, "waiting for a slot")
		if got := b.host.Pacing(); !got.Equal(slot) {
			t.Fatalf("host waits for a slot at %v; want %v", got, slot)
		}
		if r := q.reads(); len(r) != 0 {
			t.Fatalf("the quota was read at %v, before the job's turn at %v", r, slot)
		}
		b.clock.Set(slot)
		b.awaitState("j", job.Complete)
		if r := q.reads(); len(r) != 1 || !r[0].Equal(slot) {
			t.Fatalf("quota reads at %v; want one, at the turn %v", r, slot)
		}
	})
}

// A slot after the job's resume_by cancels the job at once rather than
// holding it past its receipt.
func TestResumeSlotPastResumeByCancels(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		b := setupOn(t, st)
		wake := b.deferOnCore("j")
		if _, err := st.TakeResumeSlot(context.Background(), coreKey, wake, 48*time.Hour); err != nil {
			t.Fatal(err)
		}
		b.clock.Set(wake)
		j := b.awaitState("j", job.Cancelled)
		if !strings.Contains(j.Stage, "resume_by") || b.script.count() != 1 {
			t.Fatalf("stage %q after %d runs; want cancelled past resume_by after one", j.Stage, b.script.count())
		}
	})
}
