package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// ReadOnly checks a backend's read-only open, what status, activity, jobs
// and show use. openRW opens a read-write store, the same each time (a new,
// empty one the first time); openRO opens it read-only. ReadOnly writes
// through a read-write store what those commands show and closes it; then
// checks that every read through the read-only store sees it and that every
// write through it fails, and closes it; then opens the read-write store
// again to check that nothing changed.
func ReadOnly(t *testing.T, openRW, openRO func(t *testing.T) store.Store) {
	t.Helper()
	rw := openRW(t)
	ctx := t.Context()
	key := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	st := quota.State{Key: key, Limit: 5000, Remaining: 0, ResetAt: base.Add(time.Hour), ResetKnown: true,
		ObservedAt: base, ObservedBy: "host-a", Source: quota.SourceRejected, Cause: quota.CauseExhausted}
	_, err := rw.RegisterWaiter(ctx, store.Waiter{Hostname: "host-a", PID: 7, Command: "gh api /user", Key: key,
		Stage: "Quota wait until …", WaitUntil: base.Add(time.Hour), StartedAt: base})
	if err := errors.Join(err,
		rw.RecordStates(ctx, []quota.State{st}),
		rw.LearnLogin(ctx, key.Host, "0123456789ab", "octocat", base),
		rw.AppendActivity(ctx, store.Activity{At: base, Kind: "wait", Line: "waited"})); err != nil {
		t.Fatalf("writing through the read-write store: %v", err)
	}
	if _, _, err := rw.SubmitJob(ctx, newJob("ro-1"), nil, base); err != nil {
		t.Fatalf("SubmitJob: %v", err)
	}
	if err := rw.RegisterHost(ctx, job.Host{ID: "h1", Hostname: "host-a", PID: 9, StartedAt: base, LastSeen: base, Lease: 30 * time.Second}); err != nil {
		t.Fatalf("RegisterHost: %v", err)
	}

	if err := rw.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	ro := openRO(t)
	check := func(what string, n int, err error, want int) {
		t.Helper()
		if err != nil || n != want {
			t.Errorf("%s: %d rows, %v; want %d", what, n, err, want)
		}
	}
	states, err := ro.AllStates(ctx)
	check("read-only AllStates", len(states), err, 1)
	states, err = ro.States(ctx, []quota.Key{key})
	check("read-only States", len(states), err, 1)
	obs, err := ro.Observations(ctx, key, time.Time{}, 0)
	check("read-only Observations", len(obs), err, 1)
	login, ok, err := ro.Login(ctx, key.Host, "0123456789ab")
	if login != "octocat" || !ok || err != nil {
		t.Errorf("read-only Login = %q, %v, %v; want octocat", login, ok, err)
	}
	lines, err := ro.Activity(ctx, 0)
	check("read-only Activity", len(lines), err, 1)
	waiters, err := ro.Waiters(ctx)
	check("read-only Waiters", len(waiters), err, 1)

	writes := map[string]func() error{
		"RecordStates":   func() error { return ro.RecordStates(ctx, []quota.State{st}) },
		"LearnLogin":     func() error { return ro.LearnLogin(ctx, key.Host, "fedcba987654", "hubot", base) },
		"AppendActivity": func() error { return ro.AppendActivity(ctx, store.Activity{At: base, Kind: "x", Line: "x"}) },
		"RemoveWaiter":   func() error { return ro.RemoveWaiter(ctx, waiters[0].ID) },
		"RecordSkip": func() error {
			_, err := ro.RecordSkip(ctx, "pass:x", "core@1", store.Activity{At: base, Kind: "skip", Line: "skipped"})
			return err
		},
		"RegisterWaiter": func() error {
			_, err := ro.RegisterWaiter(ctx, store.Waiter{Hostname: "h", PID: 1, Key: key, WaitUntil: base})
			return err
		},
	}
	j, err := ro.Job(ctx, "ro-1")
	if err != nil || j.State != job.Ready {
		t.Errorf("read-only Job = %+v, %v", j, err)
	}
	list, err := ro.ListJobs(ctx, "")
	check("read-only ListJobs", len(list), err, 1)
	counts, err := ro.CountJobs(ctx)
	check("read-only CountJobs ready", counts[job.Ready], err, 1)
	if h, err := ro.JobHistory(ctx, "ro-1"); err != nil || len(h.Transitions) == 0 {
		t.Errorf("read-only JobHistory = %+v, %v; want the submission's transition", h, err)
	}
	hosts, err := ro.Hosts(ctx)
	check("read-only Hosts", len(hosts), err, 1)
	writes["SubmitJob"] = func() error { _, _, err := ro.SubmitJob(ctx, newJob("ro-2"), nil, base); return err }
	writes["ApplyJob"] = func() error {
		_, err := ro.ApplyJob(ctx, "ro-1", job.NoFence, job.Change{To: job.Cancelled, Reason: "test", Now: base})
		return err
	}
	writes["ClaimJobs"] = func() error { _, err := ro.ClaimJobs(ctx, "h1", base, time.Minute, 1); return err }
	writes["TakeResumeSlot"] = func() error { _, err := ro.TakeResumeSlot(ctx, key, base, time.Second); return err }
	writes["HostHeartbeat"] = func() error { return ro.HostHeartbeat(ctx, "h1", base.Add(time.Minute)) }
	for name, write := range writes {
		if err := write(); err == nil {
			t.Errorf("read-only %s = nil error, want the write refused", name)
		}
	}

	if err := ro.Close(); err != nil {
		t.Errorf("read-only Close: %v", err)
	}

	// Nothing changed: the read-write store still sees exactly what it wrote.
	rw = openRW(t)
	defer rw.Close()
	after, err := rw.AllStates(ctx)
	if err != nil || len(after) != 1 || after[0].Principal != "octocat" {
		t.Errorf("states after refused writes = %+v, %v", after, err)
	}
	if l, _, _ := rw.Login(ctx, key.Host, "fedcba987654"); l != "" {
		t.Errorf("a read-only LearnLogin was kept: %q", l)
	}
	lines, err = rw.Activity(ctx, 0)
	check("Activity after refused writes", len(lines), err, 1)
	waiters, err = rw.Waiters(ctx)
	check("Waiters after refused writes", len(waiters), err, 1)
	list, err = rw.ListJobs(ctx, "")
	if err != nil || len(list) != 1 || list[0].State != job.Ready || list[0].Fence != 0 {
		t.Errorf("jobs after refused writes = %+v, %v; want ro-1 ready, unclaimed", list, err)
	}
	hosts, err = rw.Hosts(ctx)
	if err != nil || len(hosts) != 1 || !hosts[0].LastSeen.Equal(msUTC(base)) {
		t.Errorf("hosts after a refused heartbeat = %+v, %v", hosts, err)
	}
	if !slices.ContainsFunc(states, func(s quota.State) bool { return s.Key == key }) {
		t.Errorf("read-only States lacks %v", key)
	}
}
