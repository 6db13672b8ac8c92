package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
)

// openJobStore opens the store for the job commands that write it.
func openJobStore(ctx context.Context, env *Env, loc string) (host.Store, error) {
	return openStore(ctx, env, loc)
}

// openJobStoreReadOnly opens the store for jobs and show, which only read
// it (see openStoreReadOnly).
func openJobStoreReadOnly(ctx context.Context, env *Env, loc string) (host.Store, error) {
	return openStoreReadOnly(ctx, env, loc)
}

// jobError maps host and store errors to exit codes: an unknown job or a
// refused transition is a failed operation (1).
func jobError(err error) error {
	switch {
	case err == nil:
		return nil
	case isErr(err, job.ErrNotFound):
		return failErr("%v", err)
	case isErr(err, job.ErrTransition), isErr(err, job.ErrConflict), isErr(err, job.ErrStaleFence), isErr(err, host.ErrNoLiveHost):
		return failErr("%v", err)
	}
	return internalErr("%v", err)
}

// parseDeadline reads --deadline: a duration from now or an RFC 3339 time,
// in the future and at most host.MaxDeadline from now.
func parseDeadline(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now.Add(host.DefaultDeadline), nil
	}
	var t time.Time
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("deadline %q must be in the future", s)
		}
		t = now.Add(d) // saturates: Time.Add cannot wrap
	} else if t, err = time.Parse(time.RFC3339, s); err != nil {
		return time.Time{}, fmt.Errorf("deadline %q: want a duration (90m) or an RFC 3339 time", s)
	} else if !t.After(now) {
		return time.Time{}, fmt.Errorf("deadline %q is in the past", s)
	}
	if t.Sub(now) > host.MaxDeadline {
		return time.Time{}, fmt.Errorf("deadline %q is more than %s away", s, host.MaxDeadline)
	}
	return t, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func isErr(err, target error) bool { return errors.Is(err, target) }
