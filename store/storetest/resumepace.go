package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// fullQuotas resolves "github[:RESOURCE]" for octocat and reads every key
// as full: the quota has reset.
type fullQuotas struct{}

func (fullQuotas) Keys(_ context.Context, names []string) ([]quota.Key, error) {
	var out []quota.Key
	for _, n := range names {
		_, res, ok := strings.Cut(n, ":")
		if !ok {
			res = "core"
		}
		out = append(out, key(gh, "octocat", res))
	}
	return out, nil
}

func (fullQuotas) Fresh(_ context.Context, keys []quota.Key) ([]quota.State, error) {
	var out []quota.State
	for _, k := range keys {
		out = append(out, quota.State{Key: k, Limit: 5000, Remaining: 5000, ResetAt: base.Add(3 * time.Hour), ResetKnown: true})
	}
	return out, nil
}

// ResumePacing checks the per-key resume rate across a fleet
// (docs/lifecycle.md, Resume pacing): three durable hosts, each on its own
// handle of one store (open returns a new handle on the same store each
// time), run jobs that all defer on one key's reset; after the reset the
// fleet together starts no more than the resume rate per second on that
// key, each at most one interval after its slot. The hosts share a fake
// clock that the test moves in steps smaller than the resume interval,
// each once every host is still (host.Host.Still: a resume waiting for
// its slot is not work), so every host has acted on a step before the
// next.
func ResumePacing(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	ctx := t.Context()
	const (
		hosts = 3
		jobs  = 24
		rate  = 4.0 // resumes per second per key
	)
	interval := time.Duration(float64(time.Second) / rate)
	clk := clock.NewFake(base)
	reset := base.Add(10 * time.Minute)
	var mu sync.Mutex
	ran := map[string]int{}
	var resumes []time.Time
	started := make(chan struct{}, 4*jobs)
	runner := host.FuncRunner(func(_ context.Context, r host.Run) error {
		mu.Lock()
		ran[r.Job.ID]++
		first := ran[r.Job.ID] == 1
		if !first {
			resumes = append(resumes, clk.Now())
		}
		mu.Unlock()
		started <- struct{}{}
		if first {
			return host.Quota("github", "core", reset)
		}
		return nil
	})
	policy := quota.DefaultPolicy()
	policy.Jitter = 0 // every job wakes at once: the rate alone spreads them
	events := make(chan host.Event, 64*jobs)
	var fleet []*host.Host
	var slots []time.Time
	record := func(at time.Time) {
		mu.Lock()
		slots = append(slots, at)
		mu.Unlock()
	}
	stilled := make(chan struct{}, 1)
	for i := range hosts {
		id := fmt.Sprintf("host-%d", i+1)
		h, err := host.New(host.Config{Store: slotRecorder(open(t), record), Runner: runner, Quotas: fullQuotas{}, Policy: policy,
			Clock: clk, ID: id, Hostname: id, ResumeRate: rate, Lease: time.Minute, Heartbeat: 10 * time.Second,
			Env: []string{}, CheckpointDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		sub := h.Subscribe(4 * jobs)
		go func() {
			for ev := range sub.C() {
				events <- ev
			}
		}()
		go func() {
			for {
				select {
				case <-h.Stilled():
					store.Signal(stilled)
				case <-ctx.Done():
					return
				}
			}
		}()
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Stop)
		fleet = append(fleet, h)
	}
	for i := range jobs {
		if _, _, err := fleet[i%hosts].Submit(ctx, fmt.Sprintf("pace-%02d", i), job.Spec{Argv: []string{"true"}, Quota: []string{"github"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Every job runs once and defers until the reset.
	var wake time.Time
	timeout := time.After(60 * time.Second)
	for deferred := 0; deferred < jobs; {
		select {
		case ev := <-events:
			if ev.To == job.Deferred && ev.From == job.Running {
				deferred++
				if wake.IsZero() || ev.WakeAt.Before(wake) {
					wake = ev.WakeAt
				}
			}
		case <-timeout:
			t.Fatalf("%d of %d jobs deferred", deferred, jobs)
		}
	}
	// Past the wake-up, in steps of a fifth of the interval, each once
	// every host is still: it has acted on the step before.
	allStill := func() bool {
		for _, h := range fleet {
			if still, _ := h.Still(); !still {
				return false
			}
		}
		return true
	}
	clk.Set(wake.Add(-interval / 5))
	for done := 0; done < jobs; {
		clk.Advance(interval / 5)
		for !allStill() {
			select {
			case <-stilled:
			case <-timeout:
				t.Fatalf("%d of %d jobs completed after the reset; the hosts never became still", done, jobs)
			}
		}
		for drained := false; !drained; {
			select {
			case ev := <-events:
				if ev.To == job.Complete {
					done++
				}
			case <-started:
			default:
				drained = true
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(resumes, time.Time.Compare)
	if len(resumes) != jobs {
		t.Fatalf("%d resumes, want %d", len(resumes), jobs)
	}
	inFirst := 0
	for k, at := range resumes {
		if at.Before(wake.Add(time.Second)) {
			inFirst++
		}
		if earliest := wake.Add(time.Duration(k) * interval); at.Before(earliest.Add(-time.Millisecond)) {
			t.Errorf("resume %d of the fleet started %v after the wake-up; the rate of %g/s allows it no sooner than %v",
				k+1, at.Sub(wake), rate, earliest.Sub(wake))
		}
	}
	slices.SortFunc(slots, time.Time.Compare)
	if len(slots) != jobs {
		t.Fatalf("%d resume slots taken, want %d", len(slots), jobs)
	}
	// Both sorted: the k-th resume starts no sooner than the k-th slot
	// (each resume after its own), and at most one interval after it.
	for k, at := range resumes {
		if latest := slots[k].Add(interval); at.After(latest) {
			t.Errorf("resume %d of the fleet started at +%v, more than an interval after its slot at +%v",
				k+1, at.Sub(wake), slots[k].Sub(wake))
		}
	}
	if inFirst > int(rate) {
		t.Errorf("%d resumes started in the first second after the wake-up across %d hosts; want at most %g", inFirst, hosts, rate)
	}
	t.Logf("resumes in the first second: %d; last at +%v", inFirst, resumes[len(resumes)-1].Sub(wake))
}

// slotRecorder is st reporting each resume slot it gives to record; it
// keeps st's watch for changes (store.Changes) when st has one.
func slotRecorder(st store.Store, record func(time.Time)) store.Store {
	r := recordingSlots{Store: st, record: record}
	if c, ok := st.(store.Changes); ok {
		return watchingSlots{r, c}
	}
	return r
}

type recordingSlots struct {
	store.Store
	record func(time.Time)
}

func (r recordingSlots) TakeResumeSlot(ctx context.Context, key quota.Key, now time.Time, interval time.Duration) (time.Time, error) {
	at, err := r.Store.TakeResumeSlot(ctx, key, now, interval)
	if err == nil {
		r.record(at)
	}
	return at, err
}

type watchingSlots struct {
	recordingSlots
	store.Changes
}
