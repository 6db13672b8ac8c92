// Package storetest is the conformance suite every store.Store backend
// passes whole. A backend's tests call Run (the ledger, the activity log,
// the waiting commands) and RunJobs (the jobs and hosts) with a function
// that opens a new, empty store, and ReadOnly with its read-only open; the
// suite checks the behaviour store.Store documents, never how a backend
// keeps it.
package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// base is the fixed time the suite's observations are made around. It has
// sub-millisecond digits and a non-UTC zone on purpose: stores keep
// milliseconds and return UTC.
var base = time.Date(2026, 11, 10, 15, 4, 5, 123_456_789, time.FixedZone("CET", 3600))

// Run runs the conformance suite of the ledger, the activity log and the
// waiting commands. open must return a new, empty store each
// time it is called; the suite closes it when the subtest that opened it
// ends. Every subtest runs in parallel with the others.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()

	setup := func(t *testing.T) (context.Context, store.Store) {
		t.Helper()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return t.Context(), s
	}

	t.Run("RecordStates", func(t *testing.T) {
		t.Parallel()
		testRecordStates(t, setup)
	})
	t.Run("States", func(t *testing.T) {
		t.Parallel()
		testStates(t, setup)
	})
	t.Run("AllStates", func(t *testing.T) {
		t.Parallel()
		testAllStates(t, setup)
	})
	t.Run("Observations", func(t *testing.T) {
		t.Parallel()
		testObservations(t, setup)
	})
	t.Run("Login", func(t *testing.T) {
		t.Parallel()
		testLogin(t, setup)
	})
	t.Run("RecordSkip", func(t *testing.T) {
		t.Parallel()
		testRecordSkip(t, setup)
	})
	t.Run("Activity", func(t *testing.T) {
		t.Parallel()
		testActivity(t, setup)
	})
	t.Run("Waiters", func(t *testing.T) {
		t.Parallel()
		testWaiters(t, setup)
	})
	t.Run("Schedules", func(t *testing.T) {
		t.Parallel()
		testSchedules(t, setup)
	})
	t.Run("ResumeSlots", func(t *testing.T) {
		t.Parallel()
		testResumeSlots(t, setup)
	})
}

type setupFunc func(t *testing.T) (context.Context, store.Store)

const gh = "api.github.com"

func key(host, principal, resource string) quota.Key {
	return quota.Key{Host: host, Principal: principal, Resource: resource}
}

// fullState sets every field of quota.State to a value that is not its zero.
func fullState(k quota.Key, remaining int64, observed time.Time) quota.State {
	return quota.State{
		Key:        k,
		Limit:      5000,
		Remaining:  remaining,
		ResetAt:    base.Add(37*time.Minute + 250*time.Microsecond),
		ResetKnown: true,
		RawReset:   base.Add(37 * time.Minute).Unix(),
		ObservedAt: observed,
		ObservedBy: "host-a",
		Source:     quota.SourceHeaders,
		Cause:      quota.CauseBelowReserve,
	}
}

// stored is s as a store returns it: times at millisecond precision, UTC.
func stored(s quota.State) quota.State {
	s.ResetAt = s.ResetAt.Truncate(time.Millisecond).UTC()
	s.ObservedAt = s.ObservedAt.Truncate(time.Millisecond).UTC()
	return s
}

// diffTime describes how got differs from want, which must be UTC at
// millisecond precision, or returns "".
func diffTime(field string, got, want time.Time) string {
	switch {
	case !got.Equal(want):
		return fmt.Sprintf("%s = %s, want %s", field, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	case !got.IsZero() && got.Location() != time.UTC:
		return fmt.Sprintf("%s = %s, want it in UTC", field, got)
	}
	return ""
}

// diffState lists every field in which got differs from want.
func diffState(got, want quota.State) []string {
	var d []string
	add := func(field string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	add("Key", got.Key, want.Key)
	add("Limit", got.Limit, want.Limit)
	add("Remaining", got.Remaining, want.Remaining)
	add("ResetKnown", got.ResetKnown, want.ResetKnown)
	add("RawReset", got.RawReset, want.RawReset)
	add("ObservedBy", got.ObservedBy, want.ObservedBy)
	add("Source", got.Source, want.Source)
	add("Cause", got.Cause, want.Cause)
	for _, s := range []string{diffTime("ResetAt", got.ResetAt, want.ResetAt),
		diffTime("ObservedAt", got.ObservedAt, want.ObservedAt)} {
		if s != "" {
			d = append(d, s)
		}
	}
	return d
}

// checkStates fails t unless got holds exactly want, in want's order.
func checkStates(t *testing.T, what string, got, want []quota.State) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d states %v, want %d %v", what, len(got), stateKeys(got), len(want), stateKeys(want))
	}
	for i := range want {
		if d := diffState(got[i], want[i]); d != nil {
			t.Errorf("%s[%d] (%s):\n\t%s", what, i, want[i].Key, strings.Join(d, "\n\t"))
		}
	}
}

func stateKeys(states []quota.State) []string {
	var ks []string
	for _, s := range states {
		ks = append(ks, s.String())
	}
	return ks
}

func byKey(a, b quota.State) int {
	return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Principal, b.Principal),
		cmp.Compare(a.Resource, b.Resource))
}

func mustRecord(t *testing.T, ctx context.Context, s store.Store, states ...quota.State) {
	t.Helper()
	if err := s.RecordStates(ctx, states); err != nil {
		t.Fatalf("RecordStates: %v", err)
	}
}

func mustStates(t *testing.T, ctx context.Context, s store.Store, keys ...quota.Key) []quota.State {
	t.Helper()
	got, err := s.States(ctx, keys)
	if err != nil {
		t.Fatalf("States: %v", err)
	}
	slices.SortFunc(got, byKey)
	return got
}

func mustAll(t *testing.T, ctx context.Context, s store.Store) []quota.State {
	t.Helper()
	got, err := s.AllStates(ctx)
	if err != nil {
		t.Fatalf("AllStates: %v", err)
	}
	return got
}

func testRecordStates(t *testing.T, setup setupFunc) {
	t.Run("RoundTripsEveryField", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		full := fullState(key(gh, "octocat", "core"), 321, base)
		unknowns := quota.State{
			Key:        key(gh, "octocat", "graphql"),
			Limit:      quota.Unknown,
			Remaining:  quota.Unknown,
			ResetAt:    base.Add(15*time.Minute + 999*time.Microsecond),
			ResetKnown: false,
			RawReset:   0,
			ObservedAt: base.Add(time.Second + 1),
			ObservedBy: "host-b.example.com",
			Source:     quota.SourceRejected,
			Cause:      quota.CauseExhausted,
		}
		rateLimit := fullState(key(gh, "octocat", "search"), 0, base.Add(-time.Hour))
		rateLimit.Limit, rateLimit.Source, rateLimit.Cause = 30, quota.SourceRateLimit, quota.CauseNone
		utc := fullState(key(gh, "tok:0123456789ab", "core"), 4999, time.UnixMilli(1_800_000_000_123).UTC())
		utc.ObservedBy = "" // an empty observer round-trips too

		mustRecord(t, ctx, s, full, unknowns, rateLimit, utc)
		want := []quota.State{stored(full), stored(unknowns), stored(rateLimit), stored(utc)}
		slices.SortFunc(want, byKey)
		checkStates(t, "States", mustStates(t, ctx, s, full.Key, unknowns.Key, rateLimit.Key, utc.Key), want)
		checkStates(t, "AllStates", mustAll(t, ctx, s), want)
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		if err := s.RecordStates(ctx, nil); err != nil {
			t.Fatalf("RecordStates(nil) = %v", err)
		}
		if err := s.RecordStates(ctx, []quota.State{}); err != nil {
			t.Fatalf("RecordStates(empty) = %v", err)
		}
		checkStates(t, "AllStates", mustAll(t, ctx, s), nil)
	})

	t.Run("NewerReplacesEveryField", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		k := key(gh, "octocat", "core")
		old := fullState(k, 100, base)
		newer := quota.State{
			Key: k, Limit: 15000, Remaining: 14999, ResetAt: base.Add(2 * time.Hour),
			RawReset: 0, ResetKnown: false, ObservedAt: base.Add(time.Minute),
			ObservedBy: "host-z", Source: quota.SourceRateLimit, Cause: quota.CauseNone,
		}
		mustRecord(t, ctx, s, old)
		mustRecord(t, ctx, s, newer)
		checkStates(t, "States", mustStates(t, ctx, s, k), []quota.State{stored(newer)})
	})

	t.Run("LatestObservedWins", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		k := key(gh, "octocat", "core")
		newer := fullState(k, 100, base.Add(10*time.Second))
		newer.ObservedBy = "host-new"
		older := fullState(k, 4000, base)
		older.ObservedBy, older.Cause = "host-old", quota.CauseNone

		mustRecord(t, ctx, s, newer)
		mustRecord(t, ctx, s, older) // committed late, observed early
		checkStates(t, "after a late older write", mustStates(t, ctx, s, k), []quota.State{stored(newer)})

		// One millisecond older is still older.
		older.ObservedAt = newer.ObservedAt.Add(-time.Millisecond)
		mustRecord(t, ctx, s, older)
		checkStates(t, "after a write 1 ms older", mustStates(t, ctx, s, k), []quota.State{stored(newer)})

		newest := fullState(k, 50, base.Add(20*time.Second))
		newest.ObservedBy = "host-newest"
		mustRecord(t, ctx, s, newest)
		checkStates(t, "after a newer write", mustStates(t, ctx, s, k), []quota.State{stored(newest)})
	})

	t.Run("LatestObservedWinsWithinOneCall", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		k := key(gh, "octocat", "core")
		newer := fullState(k, 100, base.Add(time.Minute))
		older := fullState(k, 4000, base)
		mustRecord(t, ctx, s, newer, older)
		checkStates(t, "States", mustStates(t, ctx, s, k), []quota.State{stored(newer)})
	})

	t.Run("KeysAreSeparate", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Keys differing in one part each: an update of one changes no other.
		keys := []quota.Key{
			key(gh, "octocat", "core"),
			key("ghe.example.com", "octocat", "core"),
			key(gh, "hubot", "core"),
			key(gh, "octocat", "graphql"),
		}
		var want []quota.State
		for i, k := range keys {
			st := fullState(k, int64(1000+i), base)
			want = append(want, st)
			mustRecord(t, ctx, s, st)
		}
		update := fullState(keys[0], 0, base.Add(time.Minute))
		update.Cause = quota.CauseExhausted
		mustRecord(t, ctx, s, update)
		want[0] = update
		for i := range want {
			want[i] = stored(want[i])
		}
		slices.SortFunc(want, byKey)
		checkStates(t, "AllStates", mustAll(t, ctx, s), want)
	})
}

func testStates(t *testing.T, setup setupFunc) {
	t.Run("MissingKeysLeftOut", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		core := fullState(key(gh, "octocat", "core"), 10, base)
		graphql := fullState(key(gh, "octocat", "graphql"), 20, base)
		mustRecord(t, ctx, s, core, graphql)

		got := mustStates(t, ctx, s,
			key(gh, "octocat", "search"), core.Key, key(gh, "hubot", "core"), graphql.Key, key("x", "y", "z"))
		checkStates(t, "States", got, []quota.State{stored(core), stored(graphql)})
	})

	t.Run("AllMissing", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustRecord(t, ctx, s, fullState(key(gh, "octocat", "core"), 10, base))
		checkStates(t, "States", mustStates(t, ctx, s, key(gh, "octocat", "graphql")), nil)
	})

	t.Run("NoKeys", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustRecord(t, ctx, s, fullState(key(gh, "octocat", "core"), 10, base))
		checkStates(t, "States()", mustStates(t, ctx, s), nil)
	})

	t.Run("ExpiredStatesReturned", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// The store does not judge time: a state long past its reset is
		// still returned, and decisions ignore it themselves.
		old := fullState(key(gh, "octocat", "core"), 0, base.Add(-48*time.Hour))
		old.ResetAt = base.Add(-47 * time.Hour)
		mustRecord(t, ctx, s, old)
		checkStates(t, "States", mustStates(t, ctx, s, old.Key), []quota.State{stored(old)})
	})

	t.Run("DuplicateKeys", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		core := fullState(key(gh, "octocat", "core"), 10, base)
		mustRecord(t, ctx, s, core)
		checkStates(t, "States", mustStates(t, ctx, s, core.Key, core.Key), []quota.State{stored(core)})
	})
}

func testAllStates(t *testing.T, setup setupFunc) {
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		checkStates(t, "AllStates", mustAll(t, ctx, s), nil)
	})

	t.Run("OrderedByKey", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Plain lowercase names, so that every collation agrees on the order.
		want := []quota.State{
			fullState(key("a.example", "alice", "core"), 1, base),
			fullState(key("a.example", "alice", "graphql"), 2, base),
			fullState(key("a.example", "bob", "core"), 3, base),
			fullState(key("a.example", "bob", "search"), 4, base),
			fullState(key("b.example", "alice", "core"), 5, base),
			fullState(key("b.example", "carol", "core"), 6, base),
		}
		// Write in a scrambled order, one call each and one call for the rest.
		mustRecord(t, ctx, s, want[5])
		mustRecord(t, ctx, s, want[2])
		mustRecord(t, ctx, s, want[0], want[4], want[3], want[1])
		for i := range want {
			want[i] = stored(want[i])
		}
		checkStates(t, "AllStates", mustAll(t, ctx, s), want)
	})
}

func testLogin(t *testing.T, setup setupFunc) {
	const fp, other = "0123456789ab", "ba9876543210"

	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		login, ok, err := s.Login(ctx, gh, fp)
		if err != nil || ok || login != "" {
			t.Fatalf("Login of an unknown fingerprint = %q, %v, %v; want \"\", false, nil", login, ok, err)
		}
	})

	t.Run("LearnAndLookUp", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		if err := s.LearnLogin(ctx, gh, fp, "octocat", base); err != nil {
			t.Fatalf("LearnLogin: %v", err)
		}
		checkLogin(t, ctx, s, gh, fp, "octocat", true)
		checkLogin(t, ctx, s, "ghe.example.com", fp, "", false) // per host
		checkLogin(t, ctx, s, gh, other, "", false)             // per fingerprint

		// Learning again replaces the login (a token handed to another user).
		if err := s.LearnLogin(ctx, gh, fp, "hubot", base.Add(time.Hour)); err != nil {
			t.Fatalf("LearnLogin again: %v", err)
		}
		checkLogin(t, ctx, s, gh, fp, "hubot", true)
	})

	t.Run("MergesTokenRows", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		tokCore := fullState(key(gh, "tok:"+fp, "core"), 100, base)
		tokGraphql := fullState(key(gh, "tok:"+fp, "graphql"), 200, base.Add(time.Second))
		tokGraphql.Cause = quota.CauseExhausted
		otherTok := fullState(key(gh, "tok:"+other, "core"), 300, base)
		otherHost := fullState(key("ghe.example.com", "tok:"+fp, "core"), 400, base)
		mustRecord(t, ctx, s, tokCore, tokGraphql, otherTok, otherHost)

		if err := s.LearnLogin(ctx, gh, fp, "octocat", base.Add(time.Minute)); err != nil {
			t.Fatalf("LearnLogin: %v", err)
		}
		asLogin := func(st quota.State) quota.State {
			st.Principal = "octocat"
			return stored(st)
		}
		// The token's rows on this host are now the login's, every other
		// field unchanged; other tokens and other hosts are untouched.
		want := []quota.State{asLogin(tokCore), asLogin(tokGraphql), stored(otherTok), stored(otherHost)}
		slices.SortFunc(want, byKey)
		checkStates(t, "AllStates", mustAll(t, ctx, s), want)
		checkStates(t, "States of the token principal", mustStates(t, ctx, s, tokCore.Key, tokGraphql.Key), nil)
	})

	t.Run("MergeKeepsNewer", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// core: the token's row is newer and wins; graphql: the login's row
		// is newer and stays; search: only the login has a row.
		tokCore := fullState(key(gh, "tok:"+fp, "core"), 10, base.Add(time.Minute))
		tokCore.ObservedBy = "tok-host"
		loginCore := fullState(key(gh, "octocat", "core"), 4000, base)
		tokGraphql := fullState(key(gh, "tok:"+fp, "graphql"), 20, base)
		loginGraphql := fullState(key(gh, "octocat", "graphql"), 3000, base.Add(time.Minute))
		loginGraphql.ObservedBy = "login-host"
		loginSearch := fullState(key(gh, "octocat", "search"), 25, base)
		mustRecord(t, ctx, s, tokCore, loginCore, tokGraphql, loginGraphql, loginSearch)

		if err := s.LearnLogin(ctx, gh, fp, "octocat", base.Add(time.Hour)); err != nil {
			t.Fatalf("LearnLogin: %v", err)
		}
		tokCore.Principal = "octocat"
		checkStates(t, "AllStates", mustAll(t, ctx, s),
			[]quota.State{stored(tokCore), stored(loginGraphql), stored(loginSearch)})
	})

	t.Run("TwoTokensOneUser", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Two tokens of one user: learning both logins makes one quota,
		// holding whichever observation was the latest.
		a := fullState(key(gh, "tok:"+fp, "core"), 100, base)
		b := fullState(key(gh, "tok:"+other, "core"), 90, base.Add(time.Second))
		mustRecord(t, ctx, s, a, b)
		for _, f := range []string{fp, other} {
			if err := s.LearnLogin(ctx, gh, f, "octocat", base.Add(time.Minute)); err != nil {
				t.Fatalf("LearnLogin(%s): %v", f, err)
			}
		}
		b.Principal = "octocat"
		checkStates(t, "AllStates", mustAll(t, ctx, s), []quota.State{stored(b)})
		checkLogin(t, ctx, s, gh, fp, "octocat", true)
		checkLogin(t, ctx, s, gh, other, "octocat", true)
	})

	t.Run("NoTokenRows", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		loginCore := fullState(key(gh, "octocat", "core"), 4000, base)
		mustRecord(t, ctx, s, loginCore)
		if err := s.LearnLogin(ctx, gh, fp, "octocat", base); err != nil {
			t.Fatalf("LearnLogin: %v", err)
		}
		checkStates(t, "AllStates", mustAll(t, ctx, s), []quota.State{stored(loginCore)})
	})
}

func checkLogin(t *testing.T, ctx context.Context, s store.Store, host, fp, want string, wantOK bool) {
	t.Helper()
	login, ok, err := s.Login(ctx, host, fp)
	if err != nil || ok != wantOK || login != want {
		t.Errorf("Login(%s, %s) = %q, %v, %v; want %q, %v, nil", host, fp, login, ok, err, want, wantOK)
	}
}

func mustActivity(t *testing.T, ctx context.Context, s store.Store, limit int) []store.Activity {
	t.Helper()
	got, err := s.Activity(ctx, limit)
	if err != nil {
		t.Fatalf("Activity(%d): %v", limit, err)
	}
	return got
}

// checkLines fails t unless the activity log's lines are want, oldest first.
func checkLines(t *testing.T, got []store.Activity, want ...string) {
	t.Helper()
	var lines []string
	for _, a := range got {
		lines = append(lines, a.Line)
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("activity lines = %q, want %q", lines, want)
	}
}

func testRecordSkip(t *testing.T, setup setupFunc) {
	skip := func(i int, line string) store.Activity {
		return store.Activity{At: base.Add(time.Duration(i) * time.Minute), Kind: "skip", Line: line}
	}

	t.Run("OncePerReason", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		const scope = "pass:pickup"
		steps := []struct {
			scope, reason, line string
			wantWrote           bool
		}{
			{scope, "core@1800000000", "skipped: core until 15:41", true},
			{scope, "core@1800000000", "skipped: core until 15:41 (again)", false},
			{scope, "core@1800000000", "skipped: core until 15:41 (and again)", false},
			{scope, "core@1800003600", "skipped: core until 16:41", true}, // new reset
			{scope, "graphql@1800003600", "skipped: graphql until 16:41", true},
			{scope, "core@1800003600", "skipped: core until 16:41, back", true}, // changed back
			{"pass:triage", "core@1800003600", "skipped: triage, core", true},   // per scope
			{"pass:triage", "core@1800003600", "skipped: triage, core again", false},
			{scope, "core@1800003600", "skipped: core, still", false}, // scopes independent
		}
		var want []string
		for i, st := range steps {
			wrote, err := s.RecordSkip(ctx, st.scope, st.reason, skip(i, st.line))
			if err != nil {
				t.Fatalf("step %d: RecordSkip: %v", i, err)
			}
			if wrote != st.wantWrote {
				t.Fatalf("step %d: RecordSkip(%s, %s) wrote = %v, want %v", i, st.scope, st.reason, wrote, st.wantWrote)
			}
			if wrote {
				want = append(want, st.line)
			}
		}
		checkLines(t, mustActivity(t, ctx, s, 0), want...)
	})

	t.Run("WritesTheActivity", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		a := skip(0, "skipped: GitHub Quota wait until 16:00 (core: 0 left)")
		if wrote, err := s.RecordSkip(ctx, "pass:x", "core@1", a); err != nil || !wrote {
			t.Fatalf("RecordSkip = %v, %v; want true, nil", wrote, err)
		}
		got := mustActivity(t, ctx, s, 0)
		checkLines(t, got, a.Line)
		if got[0].Kind != "skip" || got[0].ID == 0 {
			t.Errorf("activity = %+v, want kind skip and an id", got[0])
		}
		if d := diffTime("At", got[0].At, a.At.Truncate(time.Millisecond).UTC()); d != "" {
			t.Error(d)
		}
	})

	t.Run("ClearSkip", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		const scope = "pass:pickup"
		if err := s.ClearSkip(ctx, scope); err != nil { // nothing to clear
			t.Fatalf("ClearSkip of an unknown scope = %v", err)
		}
		for i, want := range []bool{true, false} {
			wrote, err := s.RecordSkip(ctx, scope, "core@1", skip(i, fmt.Sprintf("skip %d", i)))
			if err != nil || wrote != want {
				t.Fatalf("RecordSkip #%d = %v, %v; want %v, nil", i, wrote, err, want)
			}
		}
		if _, err := s.RecordSkip(ctx, "pass:other", "core@1", skip(2, "other")); err != nil {
			t.Fatalf("RecordSkip other: %v", err)
		}
		if err := s.ClearSkip(ctx, scope); err != nil {
			t.Fatalf("ClearSkip: %v", err)
		}
		// The same reason writes again once its scope is cleared; the other
		// scope still remembers its own.
		if wrote, err := s.RecordSkip(ctx, scope, "core@1", skip(3, "skip again")); err != nil || !wrote {
			t.Fatalf("RecordSkip after ClearSkip = %v, %v; want true, nil", wrote, err)
		}
		if wrote, err := s.RecordSkip(ctx, "pass:other", "core@1", skip(4, "other again")); err != nil || wrote {
			t.Fatalf("RecordSkip of an uncleared scope = %v, %v; want false, nil", wrote, err)
		}
		if err := s.ClearSkip(ctx, scope); err != nil {
			t.Fatalf("ClearSkip: %v", err)
		}
		if err := s.ClearSkip(ctx, scope); err != nil { // twice is no error
			t.Fatalf("second ClearSkip: %v", err)
		}
		checkLines(t, mustActivity(t, ctx, s, 0), "skip 0", "other", "skip again")
	})
}

func testActivity(t *testing.T, setup setupFunc) {
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		if got := mustActivity(t, ctx, s, 0); len(got) != 0 {
			t.Fatalf("Activity of an empty store = %+v", got)
		}
		if got := mustActivity(t, ctx, s, 3); len(got) != 0 {
			t.Fatalf("Activity(3) of an empty store = %+v", got)
		}
	})

	t.Run("OrderAndLimit", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		var want []store.Activity
		for i := range 5 {
			a := store.Activity{
				At:   base.Add(time.Duration(i)*time.Second + time.Duration(i)*time.Microsecond),
				Kind: []string{"skip", "wait", "waited"}[i%3],
				Line: fmt.Sprintf("line %d", i),
			}
			if err := s.AppendActivity(ctx, a); err != nil {
				t.Fatalf("AppendActivity: %v", err)
			}
			a.At = a.At.Truncate(time.Millisecond).UTC()
			want = append(want, a)
		}

		all := mustActivity(t, ctx, s, 0)
		if len(all) != len(want) {
			t.Fatalf("Activity(0) = %d lines, want %d", len(all), len(want))
		}
		for i, a := range all {
			w := want[i]
			if a.Kind != w.Kind || a.Line != w.Line {
				t.Errorf("Activity[%d] = %q %q, want %q %q", i, a.Kind, a.Line, w.Kind, w.Line)
			}
			if d := diffTime("At", a.At, w.At); d != "" {
				t.Errorf("Activity[%d]: %s", i, d)
			}
			if i > 0 && a.ID <= all[i-1].ID {
				t.Errorf("Activity ids not increasing: %d after %d", a.ID, all[i-1].ID)
			}
		}

		tests := []struct {
			limit int
			want  []string
		}{
			{0, []string{"line 0", "line 1", "line 2", "line 3", "line 4"}},
			{-1, []string{"line 0", "line 1", "line 2", "line 3", "line 4"}},
			{1, []string{"line 4"}},
			{2, []string{"line 3", "line 4"}},
			{5, []string{"line 0", "line 1", "line 2", "line 3", "line 4"}},
			{50, []string{"line 0", "line 1", "line 2", "line 3", "line 4"}},
		}
		for _, tt := range tests {
			got := mustActivity(t, ctx, s, tt.limit)
			var lines []string
			for _, a := range got {
				lines = append(lines, a.Line)
			}
			if !slices.Equal(lines, tt.want) {
				t.Errorf("Activity(%d) = %q, want %q", tt.limit, lines, tt.want)
			}
		}
	})
}

func testWaiters(t *testing.T, setup setupFunc) {
	t.Run("RegisterListRemove", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		if got, err := s.Waiters(ctx); err != nil || len(got) != 0 {
			t.Fatalf("Waiters of an empty store = %+v, %v", got, err)
		}
		w1 := store.Waiter{
			Hostname: "host-a", PID: 4242, Command: "gh pr create --fill",
			Key:       key(gh, "octocat", "core"),
			Stage:     "Quota wait until 16:05",
			WaitUntil: base.Add(61*time.Minute + 500*time.Microsecond),
			StartedAt: base.Add(time.Microsecond),
		}
		w2 := store.Waiter{
			Hostname: "host-b", PID: 1, Command: "claude -p 'fix it'",
			Key:       key("api.anthropic.com", "org-1", "output_tokens"),
			Stage:     "Quota wait until 15:06",
			WaitUntil: base.Add(2 * time.Minute),
			StartedAt: base,
		}
		id1, err := s.RegisterWaiter(ctx, w1)
		if err != nil {
			t.Fatalf("RegisterWaiter: %v", err)
		}
		id2, err := s.RegisterWaiter(ctx, w2)
		if err != nil {
			t.Fatalf("RegisterWaiter: %v", err)
		}
		if id1 == 0 || id2 == 0 || id1 == id2 {
			t.Fatalf("waiter ids = %d, %d; want two distinct non-zero ids", id1, id2)
		}
		w1.ID, w2.ID = id1, id2
		checkWaiters(t, ctx, s, w1, w2)

		if err := s.RemoveWaiter(ctx, id1); err != nil {
			t.Fatalf("RemoveWaiter: %v", err)
		}
		checkWaiters(t, ctx, s, w2)
		if err := s.RemoveWaiter(ctx, id1); err != nil {
			t.Fatalf("RemoveWaiter of a removed waiter = %v, want nil", err)
		}
		if err := s.RemoveWaiter(ctx, id1+id2+1000); err != nil {
			t.Fatalf("RemoveWaiter of an unknown id = %v, want nil", err)
		}
		checkWaiters(t, ctx, s, w2)
		if err := s.RemoveWaiter(ctx, id2); err != nil {
			t.Fatalf("RemoveWaiter: %v", err)
		}
		checkWaiters(t, ctx, s)
	})
}

// checkWaiters fails t unless the store lists exactly want, oldest first.
func checkWaiters(t *testing.T, ctx context.Context, s store.Store, want ...store.Waiter) {
	t.Helper()
	got, err := s.Waiters(ctx)
	if err != nil {
		t.Fatalf("Waiters: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Waiters = %d waiters %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Hostname != w.Hostname || g.PID != w.PID || g.Command != w.Command ||
			g.Key != w.Key || g.Stage != w.Stage {
			t.Errorf("Waiters[%d] = %+v, want %+v", i, g, w)
		}
		for _, d := range []string{
			diffTime("WaitUntil", g.WaitUntil, w.WaitUntil.Truncate(time.Millisecond).UTC()),
			diffTime("StartedAt", g.StartedAt, w.StartedAt.Truncate(time.Millisecond).UTC()),
		} {
			if d != "" {
				t.Errorf("Waiters[%d]: %s", i, d)
			}
		}
	}
}
