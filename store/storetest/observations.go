package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// bucketStart is the start of the history bucket t falls in.
func bucketStart(t time.Time) time.Time {
	return time.UnixMilli(store.ObservationBucket(t) * store.ObservationSpacing.Milliseconds()).UTC()
}

// diffObservation lists every field in which got differs from want.
func diffObservation(got, want store.Observation) []string {
	var d []string
	add := func(field string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	add("Key", got.Key, want.Key)
	add("Remaining", got.Remaining, want.Remaining)
	add("Limit", got.Limit, want.Limit)
	add("ObservedBy", got.ObservedBy, want.ObservedBy)
	for _, s := range []string{diffTime("ObservedAt", got.ObservedAt, want.ObservedAt),
		diffTime("ResetAt", got.ResetAt, want.ResetAt)} {
		if s != "" {
			d = append(d, s)
		}
	}
	return d
}

// checkObservations fails t unless got holds exactly the observations of
// want, in want's order.
func checkObservations(t *testing.T, what string, got []store.Observation, want ...quota.State) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d observations %+v, want %d", what, len(got), got, len(want))
	}
	for i := range want {
		if d := diffObservation(got[i], store.ObservationOf(want[i])); d != nil {
			t.Errorf("%s[%d]:\n\t%s", what, i, strings.Join(d, "\n\t"))
		}
	}
}

func mustObservations(t *testing.T, ctx context.Context, s store.Store, k quota.Key, since time.Time, limit int) []store.Observation {
	t.Helper()
	got, err := s.Observations(ctx, k, since, limit)
	if err != nil {
		t.Fatalf("Observations(%s, %s, %d): %v", k, since, limit, err)
	}
	return got
}

func testObservations(t *testing.T, setup setupFunc) {
	// observed is a state of k observed at, with remaining left.
	observed := func(k quota.Key, at time.Time, remaining int64) quota.State {
		st := fullState(k, remaining, at)
		st.ObservedBy = fmt.Sprintf("host-%d", remaining)
		return st
	}

	t.Run("OldestFirstPerKey", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		k, other := key(gh, "octocat", "core"), key(gh, "octocat", "search")
		a := observed(k, base, 300)
		b := observed(k, base.Add(store.ObservationSpacing), 200)
		c := observed(k, base.Add(3*store.ObservationSpacing), 100)
		c.Limit, c.Remaining, c.ResetAt = quota.Unknown, quota.Unknown, base.Add(2*time.Hour+time.Microsecond)
		mustRecord(t, ctx, s, c, a) // out of order, in one call
		mustRecord(t, ctx, s, observed(other, base, 7))
		mustRecord(t, ctx, s, b)

		checkObservations(t, "Observations", mustObservations(t, ctx, s, k, time.Time{}, 0), a, b, c)
		checkObservations(t, "the other key's", mustObservations(t, ctx, s, other, time.Time{}, 0),
			observed(other, base, 7))
		if got := mustObservations(t, ctx, s, key(gh, "hubot", "core"), time.Time{}, 0); len(got) != 0 {
			t.Errorf("an unobserved key's observations = %+v, want none", got)
		}
		checkStates(t, "the state", mustStates(t, ctx, s, k), []quota.State{stored(c)})
	})

	t.Run("NewestPerBucketWins", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		k := key(gh, "octocat", "core")
		start := bucketStart(base).Add(store.ObservationSpacing)
		first := observed(k, start.Add(time.Second), 10)
		newest := observed(k, start.Add(store.ObservationSpacing-time.Millisecond), 8)
		late := observed(k, start.Add(2*time.Second), 9) // committed after newest, observed before
		next := observed(k, start.Add(store.ObservationSpacing), 7)
		mustRecord(t, ctx, s, first)
		mustRecord(t, ctx, s, newest)
		mustRecord(t, ctx, s, late)
		checkObservations(t, "one bucket", mustObservations(t, ctx, s, k, time.Time{}, 0), newest)

		mustRecord(t, ctx, s, next, observed(k, start.Add(store.ObservationSpacing+time.Second), 6),
			observed(k, start.Add(store.ObservationSpacing+500*time.Millisecond), 5))
		checkObservations(t, "the next bucket, written in one call", mustObservations(t, ctx, s, k, time.Time{}, 0),
			newest, observed(k, start.Add(store.ObservationSpacing+time.Second), 6))
	})

	t.Run("SinceAndLimit", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		k := key(gh, "octocat", "core")
		var all []quota.State
		for i := range 5 {
			all = append(all, observed(k, base.Add(time.Duration(i)*store.ObservationSpacing), int64(50-i)))
		}
		mustRecord(t, ctx, s, all...)

		checkObservations(t, "since the third", mustObservations(t, ctx, s, k, all[2].ObservedAt.Truncate(time.Millisecond), 0), all[2:]...)
		checkObservations(t, "since 1 ms after the third", mustObservations(t, ctx, s, k, all[2].ObservedAt.Add(time.Millisecond), 0), all[3:]...)
		checkObservations(t, "the newest 2", mustObservations(t, ctx, s, k, time.Time{}, 2), all[3:]...)
		checkObservations(t, "the newest 10 since the second", mustObservations(t, ctx, s, k, all[1].ObservedAt.Add(-time.Second), 10), all[1:]...)
		checkObservations(t, "limit -1", mustObservations(t, ctx, s, k, time.Time{}, -1), all...)
		if got := mustObservations(t, ctx, s, k, all[4].ObservedAt.Add(time.Second), 0); len(got) != 0 {
			t.Errorf("observations since after the last = %+v, want none", got)
		}
	})

	t.Run("Bounded", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		k, other := key(gh, "octocat", "core"), key(gh, "hubot", "core")
		const extra = 10
		var all []quota.State
		for i := range store.ObservationsKept + extra {
			all = append(all, observed(k, base.Add(time.Duration(i)*store.ObservationSpacing), int64(i)))
		}
		mustRecord(t, ctx, s, observed(other, base, 1))
		// Half in one call, the rest one at a time.
		half := len(all) / 2
		mustRecord(t, ctx, s, all[:half]...)
		for _, st := range all[half:] {
			mustRecord(t, ctx, s, st)
		}
		got := mustObservations(t, ctx, s, k, time.Time{}, 0)
		checkObservations(t, "after more than the bound", got, all[extra:]...)
		if span := got[len(got)-1].ObservedAt.Sub(got[0].ObservedAt); span < (store.ObservationsKept-1)*store.ObservationSpacing {
			t.Errorf("the kept history spans %s, want at least %s", span, (store.ObservationsKept-1)*store.ObservationSpacing)
		}

		// An observation older than the kept window, committed late, is not kept.
		mustRecord(t, ctx, s, observed(k, base.Add(-time.Hour), 99))
		checkObservations(t, "after a late old write", mustObservations(t, ctx, s, k, time.Time{}, 0), all[extra:]...)
		// The other key's history is its own.
		checkObservations(t, "the other key's", mustObservations(t, ctx, s, other, time.Time{}, 0), observed(other, base, 1))
	})

	t.Run("LearnLoginMergesHistories", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		const fp = "0123456789ab"
		tok, login := key(gh, "tok:"+fp, "core"), key(gh, "octocat", "core")
		otherHost := key("ghe.example.com", "tok:"+fp, "core")
		start := bucketStart(base)
		at := func(bucket int, d time.Duration) time.Time {
			return start.Add(time.Duration(bucket)*store.ObservationSpacing + d)
		}
		tok1, tok2 := observed(tok, at(1, time.Second), 90), observed(tok, at(2, 5*time.Second), 80)
		login2, login3 := observed(login, at(2, time.Second), 85), observed(login, at(3, 0), 70)
		mustRecord(t, ctx, s, tok1, tok2, login2, login3, observed(otherHost, at(1, 0), 5))

		if err := s.LearnLogin(ctx, gh, fp, "octocat", at(4, 0)); err != nil {
			t.Fatalf("LearnLogin: %v", err)
		}
		asLogin := func(st quota.State) quota.State {
			st.Principal = "octocat"
			return st
		}
		// Bucket 2 keeps the newer of the two; the token's history is gone.
		checkObservations(t, "the login's", mustObservations(t, ctx, s, login, time.Time{}, 0),
			asLogin(tok1), asLogin(tok2), login3)
		if got := mustObservations(t, ctx, s, tok, time.Time{}, 0); len(got) != 0 {
			t.Errorf("the token principal's observations after LearnLogin = %+v, want none", got)
		}
		checkObservations(t, "another host's", mustObservations(t, ctx, s, otherHost, time.Time{}, 0),
			observed(otherHost, at(1, 0), 5))
	})
}
