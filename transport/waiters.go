package transport

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
	"github.com/layoverhq/layover/store"
)

// waitReg is this process's entry in the store's waiter table for one key:
// however many requests wait on the key, status lists the process once.
type waitReg struct {
	n     int           // requests waiting on the key; guarded by Transport.wmu
	ready chan struct{} // closed once id is known
	id    int64         // 0 when the store refused the entry
}

// waitStage is what status shows for a wait of kind until at.
func waitStage(kind WaitKind, at time.Time) string {
	what := "Quota wait"
	if kind == WaitSecondary {
		what = "Secondary limit wait"
	}
	return fmt.Sprintf("%s until %s", what, at.Local().Format("2006-01-02 15:04:05 MST"))
}

// register lists w in the store's waiter table, with the Transport's
// command, while requests wait on w's key; the returned func ends this
// request's part of it. Without a store it does nothing. A store that
// fails is logged and the wait goes on: being listed is not worth a
// failed request.
func (t *Transport) register(ctx context.Context, w plannedWait) (done func()) {
	if t.store == nil {
		return func() {}
	}
	t.wmu.Lock()
	r := t.waiting[w.key]
	first := r == nil
	if first {
		r = &waitReg{ready: make(chan struct{})}
		t.waiting[w.key] = r
	}
	r.n++
	t.wmu.Unlock()
	if first {
		id, err := t.store.RegisterWaiter(context.WithoutCancel(ctx), store.Waiter{
			Hostname: t.hostname, PID: os.Getpid(), Command: t.command, Key: w.key,
			Stage: waitStage(w.kind, w.at), WaitUntil: w.at, StartedAt: t.clock.Now(),
		})
		if err != nil {
			t.log.Warn("layover: store: list the wait", "key", w.key.String(), "err", err.Error())
		}
		r.id = id
		close(r.ready)
	}
	return func() {
		t.wmu.Lock()
		r.n--
		last := r.n == 0
		if last && t.waiting[w.key] == r {
			delete(t.waiting, w.key)
		}
		t.wmu.Unlock()
		if !last {
			return
		}
		<-r.ready
		if r.id != 0 {
			if err := t.store.RemoveWaiter(context.WithoutCancel(ctx), r.id); err != nil {
				t.log.Warn("layover: store: unlist the wait", "key", w.key.String(), "err", err.Error())
			}
		}
	}
}

// ListWait lists a wait of kind on key until at in the store's waiter
// table as the Transport's own waits are (one entry per key and process,
// however many wait), for a caller that waits out a DeferralError itself
// (the gateway's holds); the returned func, called once the wait ends,
// takes this wait's part of the entry back. Without a store it does
// nothing. It never fails the wait: a store that refuses is logged.
func (t *Transport) ListWait(ctx context.Context, key quota.Key, kind WaitKind, at time.Time) (done func()) {
	return t.register(ctx, plannedWait{key: key, kind: kind, base: at, at: at})
}

// defaultCommand is the program's command line with secrets masked.
func defaultCommand() string {
	return redact.String(strings.Join(os.Args, " "))
}
