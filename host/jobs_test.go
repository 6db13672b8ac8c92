package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
)

// PrepareDeferred uses the jitter it is given, draws none of its own, and
// stores nothing: the receipt `run --defer-after` prints is handoff.
func TestPrepareDeferredUsesTheGivenJitter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := quota.DefaultPolicy() // a 60 s margin, and a jitter the given one replaces
	jobs, err := host.NewJobs(host.Config{Store: b.st, Clock: b.clock, Policy: p, Rand: panicRand{}})
	if err != nil {
		t.Fatal(err)
	}
	reset := t0.Add(10 * time.Minute)
	j, rc, data, err := jobs.PrepareDeferred(context.Background(), "p", job.Spec{Argv: []string{"true"}},
		host.Deferral{Key: coreKey, Provider: "github", ResetAt: reset, Jitter: 7 * time.Second}, []quota.Key{coreKey})
	if err != nil {
		t.Fatal(err)
	}
	if want := reset.Add(p.ResetMargin + 7*time.Second); !rc.ResumeAfter().Equal(want) || !j.RunAt.Equal(want) {
		t.Errorf("resume_after %s, job RunAt %s; want reset + margin + the given jitter, %s", rc.ResumeAfter(), j.RunAt, want)
	}
	if rc.IsRetained() || j.Ownership != job.Handoff || len(data) == 0 {
		t.Errorf("prepared receipt retained=%v, ownership %q, %d bytes; want a handoff receipt", rc.IsRetained(), j.Ownership, len(data))
	}
	if _, err := b.st.Job(context.Background(), "p"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("PrepareDeferred stored the job: %v", err)
	}
	if _, _, _, err := jobs.PrepareDeferred(context.Background(), "q", job.Spec{Argv: []string{"true"}},
		host.Deferral{Key: coreKey, Provider: "github"}, nil); !errors.Is(err, host.ErrNoDeclaredReset) {
		t.Errorf("without a declared reset: %v, want host.ErrNoDeclaredReset", err)
	}
}

// A Jobs of its own retains a deferral when the store lists a live host,
// judged by that host's own recorded lease, not by a default: a host last
// seen a minute ago is live with its 90 s lease and not with a 45 s one.
func TestSubmitDeferredRetainedWhileAHostIsLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	d := host.Deferral{Key: coreKey, Provider: "github", ResetAt: t0.Add(time.Hour)}
	j, rc, err := b.ops.SubmitDeferred(ctx, "live", job.Spec{Argv: []string{"true"}}, d, nil)
	if err != nil || !rc.IsRetained() || j.Ownership != job.Retained {
		t.Fatalf("with host-a live: %+v %v", j, err)
	}
	live, err := b.ops.LiveHosts(ctx)
	if err != nil || len(live) != 1 || live[0].ID != "host-a" || live[0].Lease != host.DefaultLease {
		t.Fatalf("LiveHosts = %+v, %v; want host-a with its %s lease", live, err, host.DefaultLease)
	}
	b.host.Stop() // host-a unregisters

	seen := t0.Add(-time.Minute)
	for _, c := range []struct {
		lease     time.Duration
		ownership job.Ownership
	}{{90 * time.Second, job.Retained}, {45 * time.Second, job.Handoff}} {
		if err := b.st.RegisterHost(ctx, job.Host{ID: "host-z", StartedAt: seen, LastSeen: seen, Lease: c.lease}); err != nil {
			t.Fatal(err)
		}
		id := "lease-" + c.lease.String()
		j, rc, err = b.ops.SubmitDeferred(ctx, id, job.Spec{Argv: []string{"true"}}, d, nil)
		if err != nil || j.Ownership != c.ownership || rc.IsRetained() != (c.ownership == job.Retained) {
			t.Errorf("host-z seen 60 s ago with a %s lease: ownership %q, err %v; want %q", c.lease, j.Ownership, err, c.ownership)
		}
	}
}

// Only a claim's holder checkpoints: job.NoFence is refused.
func TestCheckpointRefusesNoFence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.ops.Checkpoint(context.Background(), "j", job.NoFence, "stage", nil); !errors.Is(err, job.ErrStaleFence) {
		t.Errorf("Checkpoint with job.NoFence = %v, want job.ErrStaleFence", err)
	}
}

// panicRand fails a test that draws a jitter it was handed.
type panicRand struct{}

func (panicRand) Int64N(int64) int64 { panic("a jitter was drawn, not taken as given") }
