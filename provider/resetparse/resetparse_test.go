package resetparse_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
	"github.com/layoverhq/layover/provider/resetparse"
)

// now is the test clock: 2026-08-05 12:00:00 UTC.
var now = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

type durCase struct {
	in   string
	want time.Duration
	ok   bool
}

func checkDur(t *testing.T, name string, f func(string) (time.Duration, bool), cases []durCase) {
	t.Helper()
	for _, c := range cases {
		got, ok := f(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("%s(%q) = %v, %v; want %v, %v", name, c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestEpochSeconds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1774447200", 1774447200, true}, // Claude resetsAt (§5)
		{"1749924000", 1749924000, true}, // "usage limit reached|1749924000"
		{" 1785931200 ", 1785931200, true},
		{"1000000000", 1e9, true},
		{"9999999999", 9999999999, true},
		{"1774447200000", 0, false}, // epoch milliseconds, rejected by magnitude
		{"10000000000", 0, false},
		{"999999999", 0, false}, // a relative count, not a timestamp
		{"7999", 0, false},
		{"0", 0, false},
		{"-1774447200", 0, false},
		{"+1774447200", 0, false},
		{"1774447200.5", 0, false},
		{"1.7744472e9", 0, false},
		{"", 0, false},
		{"abc", 0, false},
	} {
		got, ok := resetparse.EpochSeconds(c.in)
		if ok != c.ok || (ok && got.Unix() != c.want) || (!ok && !got.IsZero()) {
			t.Errorf("EpochSeconds(%q) = %v, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestRFC3339(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-08-05T12:00:30Z", now.Add(30 * time.Second), true}, // anthropic-ratelimit-*-reset
		{"2026-08-05T12:00:30.5Z", now.Add(30500 * time.Millisecond), true},
		{"2026-08-05T14:00:30+02:00", now.Add(30 * time.Second), true},
		{"2026-04-01T00:00:00.000Z", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), true}, // Copilot usage dump
		{"2026-08-05 12:00:30Z", time.Time{}, false},
		{"2026-08-05T12:00:30", time.Time{}, false},
		{"1970-01-01T00:00:00Z", time.Time{}, false},
		{"2300-01-01T00:00:00Z", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, ok := resetparse.RFC3339(c.in)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("RFC3339(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestHTTPDateAndTimestamp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"Wed, 05 Aug 2026 12:00:00 GMT", now, true},
		{"Wednesday, 05-Aug-26 12:00:00 GMT", now, true},
		{"Wed Aug  5 12:00:00 2026", now, true},
		{"Wed, 05 Aug 2026 12:00:00", time.Time{}, false},
		{"1785931200", time.Time{}, false},
	} {
		got, ok := resetparse.HTTPDate(c.in)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("HTTPDate(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for _, in := range []string{"1785931200", "2026-08-05T12:00:00Z", "Wed, 05 Aug 2026 12:00:00 GMT"} {
		if got, ok := resetparse.Timestamp(in); !ok || !got.Equal(now) {
			t.Errorf("Timestamp(%q) = %v, %v; want %v", in, got, ok, now)
		}
	}
	if got, ok := resetparse.Timestamp("1785931200000"); ok {
		t.Errorf("Timestamp(ms) = %v, true", got)
	}
}

func TestSeconds(t *testing.T) {
	t.Parallel()
	checkDur(t, "Seconds", resetparse.Seconds, []durCase{
		{"7999", 7999 * time.Second, true}, // a drained 5-hour window (§2)
		{"60", time.Minute, true},
		{"0", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"0.000000001", time.Nanosecond, true},
		{"0.0000000019", time.Nanosecond, true}, // digits past ns dropped
		{".5", 500 * time.Millisecond, true},
		{" 30 ", 30 * time.Second, true},
		{"31622400", resetparse.MaxDelay, true},
		{"31622401", 0, false},
		{"99999999999999999999", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1e3", 0, false},
		{"1.", 0, false},
		{"1s", 0, false},
		{"", 0, false},
		{"NaN", 0, false},
	})
}

func TestMilliseconds(t *testing.T) {
	t.Parallel()
	checkDur(t, "Milliseconds", resetparse.Milliseconds, []durCase{
		{"644", 644 * time.Millisecond, true},
		{"1500.5", 1500500 * time.Microsecond, true},
		{"0", 0, true},
		{"-5", 0, false},
		{"5ms", 0, false},
	})
}

func TestGoDuration(t *testing.T) {
	t.Parallel()
	checkDur(t, "GoDuration", resetparse.GoDuration, []durCase{
		{"6m0s", 6 * time.Minute, true}, // OpenAI x-ratelimit-reset-* (§3)
		{"12ms", 12 * time.Millisecond, true},
		{"1s", time.Second, true},
		{"1h2m3.5s", time.Hour + 2*time.Minute + 3500*time.Millisecond, true},
		{"10h17m5.723541104s", 10*time.Hour + 17*time.Minute + 5723541104*time.Nanosecond, true},
		{"17.5µs", 17500 * time.Nanosecond, true},
		{"3us", 3 * time.Microsecond, true},
		{"20ns", 20, true},
		{"0", 0, true},
		{"0s", 0, true},
		{"-1", 0, false}, // Azure OpenAI sends -1
		{"-1s", 0, false},
		{"+1s", 0, false},
		{"1", 0, false},
		{"1d", 0, false},
		{"5minutes", 0, false},
		{"1m 30s", 0, false},
		{"9000h", 0, false},
		{"", 0, false},
	})
}

func TestProtoDuration(t *testing.T) {
	t.Parallel()
	checkDur(t, "ProtoDuration", resetparse.ProtoDuration, []durCase{
		{"26s", 26 * time.Second, true}, // Gemini RetryInfo (§4)
		{"34.074824224s", 34074824224 * time.Nanosecond, true},
		{"0s", 0, true},
		{"0.5s", 500 * time.Millisecond, true},
		{"1.0000000001s", 0, false}, // more than nine fraction digits
		{"-3s", 0, false},
		{"26", 0, false},
		{"1m", 0, false},
		{"1m0s", 0, false},
		{"s", 0, false},
	})
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	date := now.Add(-time.Hour) // the server's clock is an hour behind ours
	for _, c := range []struct {
		in   string
		date time.Time
		want time.Duration
		ok   bool
	}{
		{"120", date, 2 * time.Minute, true},
		{"1.5", time.Time{}, 1500 * time.Millisecond, true},
		{"7999", time.Time{}, 7999 * time.Second, true},
		// An HTTP-date is measured from the response's Date (tricky case 11).
		{date.Add(90 * time.Second).Format(time.RFC1123), date, 90 * time.Second, true},
		{now.Add(90 * time.Second).Format(time.RFC1123), time.Time{}, 90 * time.Second, true},
		{now.Add(-time.Minute).Format(time.RFC1123), time.Time{}, 0, true},
		{"Wed, 21 Oct 2015 07:28:00 GMT", time.Time{}, 0, true},
		{"soon", time.Time{}, 0, false},
		{"-5", time.Time{}, 0, false},
		{"", time.Time{}, 0, false},
	} {
		in := strings.Replace(c.in, "UTC", "GMT", 1)
		got, ok := resetparse.RetryAfter(in, c.date, now)
		if ok != c.ok || got != c.want {
			t.Errorf("RetryAfter(%q, %v) = %v, %v; want %v, %v", in, c.date, got, ok, c.want, c.ok)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	t.Parallel()
	checkDur(t, "HumanDuration", resetparse.HumanDuration, []durCase{
		{"2 hours", 2 * time.Hour, true},
		{"58 hours", 58 * time.Hour, true},
		{"1 seconds", time.Second, true},
		{"6 seconds", 6 * time.Second, true},
		{"3 days 6 hours 57 minutes", 78*time.Hour + 57*time.Minute, true},
		{"1 minute and 30 seconds", 90 * time.Second, true},
		{"1 hour, 5 mins", 65 * time.Minute, true},
		{"1.5 hours", 90 * time.Minute, true},
		{"500 ms", 500 * time.Millisecond, true},
		{"2 HOURS", 2 * time.Hour, true},
		{"2hours", 2 * time.Hour, true},
		{"a few minutes", 0, false},
		{"2 hourly", 0, false},
		{"2", 0, false},
		{"400 days", 0, false},
		{"2 hours later", 0, false},
	})
}

func TestMessageDelay(t *testing.T) {
	t.Parallel()
	checkDur(t, "MessageDelay", resetparse.MessageDelay, []durCase{
		// Gemini (§4), including the compound form Gemini CLI's regex misses.
		{"You exceeded your current quota, please check your plan and billing details. * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro Please retry in 10h17m5.723541104s.",
			10*time.Hour + 17*time.Minute + 5723541104*time.Nanosecond, true},
		{"Please retry in 644ms", 644 * time.Millisecond, true},
		{"Please retry in 34.074824224s.", 34074824224 * time.Nanosecond, true},
		// OpenAI (§3).
		{"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
			644 * time.Millisecond, true},
		{"Please try again in 9.816s.", 9816 * time.Millisecond, true},
		{"Please try again in 6m0s.", 6 * time.Minute, true},
		// Kimi (§5).
		{"Your account org-x request reached organization max RPM: 20, please try again after 1 seconds", time.Second, true},
		// Copilot (§5).
		{"Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make within a specific time period. Please try again in 2 hours.", 2 * time.Hour, true},
		{"Please try again in 58 hours.", 58 * time.Hour, true},
		{"You've hit your global rate limit. Please upgrade your plan or wait 6 seconds for your limit to reset.", 6 * time.Second, true},
		// Codex (§5, origin unconfirmed).
		{"try again in 3 days 6 hours 57 minutes", 78*time.Hour + 57*time.Minute, true},
		// Phrases without a number are skipped.
		{"Please wait a few minutes before you try again. Please try again in 20s", 20 * time.Second, true},
		{"This request would exceed your account's rate limit. Please try again later.", 0, false},
		{"try again at 3:28 PM.", 0, false},
		{"The engine is currently overloaded, please try again later", 0, false},
		{"Please wait a moment and try again.", 0, false},
		{"retry in 5minutes", 5 * time.Minute, true},
		{"retry in 400 days", 0, false},
		{"", 0, false},
	})
}

func TestSkewCorrect(t *testing.T) {
	t.Parallel()
	reset := now.Add(-30 * time.Minute) // provider clock one hour behind
	date := now.Add(-time.Hour)
	if got := resetparse.SkewCorrect(reset, date, now); !got.Equal(now.Add(30 * time.Minute)) {
		t.Errorf("SkewCorrect = %v", got)
	}
	if got := resetparse.SkewCorrect(reset, time.Time{}, now); !got.Equal(reset) {
		t.Errorf("SkewCorrect without date = %v", got)
	}
	if got := resetparse.SkewCorrect(reset, reset.Add(-400*24*time.Hour), now); !got.Equal(reset) {
		t.Errorf("SkewCorrect with a wild date = %v", got)
	}
}

// checkAbs verifies an absolute parser's result for in.
func checkAbs(t *testing.T, name, in string, got time.Time, ok bool) {
	t.Helper()
	if !ok {
		if !got.IsZero() {
			t.Fatalf("%s(%q) = %v with ok false", name, in, got)
		}
		return
	}
	if u := got.Unix(); u < resetparse.MinEpoch || u >= resetparse.MaxEpoch {
		t.Fatalf("%s(%q) = %v: out of range", name, in, got)
	}
	if !resetcheck.ResetExplained(got, in, now) {
		t.Fatalf("%s(%q) = %v: not in the input", name, in, got)
	}
}

// checkRel verifies a relative parser's result for in.
func checkRel(t *testing.T, name, in string, got time.Duration, ok bool) {
	t.Helper()
	if !ok {
		if got != 0 {
			t.Fatalf("%s(%q) = %v with ok false", name, in, got)
		}
		return
	}
	if got < 0 || got > resetparse.MaxDelay {
		t.Fatalf("%s(%q) = %v: out of range", name, in, got)
	}
	if !resetcheck.WaitExplained(got, in, now) {
		t.Fatalf("%s(%q) = %v: not in the input", name, in, got)
	}
}

func FuzzParseEpochSeconds(f *testing.F) {
	for _, s := range []string{"1774447200", "1774447200000", "999999999", "-1", "1e9", " 1785931200", "00001785931200"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.EpochSeconds(s)
			checkAbs(t, "EpochSeconds", s, got, ok)
			if ok && !strings.Contains(s, strconv.FormatInt(got.Unix(), 10)) {
				t.Fatalf("EpochSeconds(%q) = %d: digits not in the input", s, got.Unix())
			}
		})
	})
}

func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{"2026-08-05T12:00:30Z", "2026-08-05T12:00:30.123456789+02:00", "2026-13-05T12:00:30Z", "2026-08-05T24:00:00Z", "0001-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.RFC3339(s)
			checkAbs(t, "RFC3339", s, got, ok)
		})
	})
}

func FuzzParseHTTPDate(f *testing.F) {
	for _, s := range []string{"Wed, 05 Aug 2026 12:00:00 GMT", "Wednesday, 05-Aug-26 12:00:00 GMT", "Wed Aug  5 12:00:00 2026", "Thu, 01 Jan 1970 00:00:00 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.HTTPDate(s)
			checkAbs(t, "HTTPDate", s, got, ok)
			got, ok = resetparse.Timestamp(s)
			checkAbs(t, "Timestamp", s, got, ok)
		})
	})
}

func FuzzParseSeconds(f *testing.F) {
	for _, s := range []string{"7999", "1.5", ".5", "0.0000000019", "31622401", "-1", "1e3", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.Seconds(s)
			checkRel(t, "Seconds", s, got, ok)
			got, ok = resetparse.Milliseconds(s)
			checkRel(t, "Milliseconds", s, got, ok)
		})
	})
}

func FuzzParseGoDuration(f *testing.F) {
	for _, s := range []string{"6m0s", "12ms", "1h2m3.5s", "10h17m5.723541104s", "17.5µs", "0", "-1", "1.s", ".5h", "9999999999999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.GoDuration(s)
			checkRel(t, "GoDuration", s, got, ok)
			// Whatever it accepts, Go's own parser reads the same.
			if ok && s != "" {
				if want, err := time.ParseDuration(strings.TrimSpace(s)); err != nil || want != got {
					t.Fatalf("GoDuration(%q) = %v; time.ParseDuration says %v, %v", s, got, want, err)
				}
			}
		})
	})
}

func FuzzParseProtoDuration(f *testing.F) {
	for _, s := range []string{"26s", "34.074824224s", "0s", "1.0000000001s", "-3s", "s", ".5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.ProtoDuration(s)
			checkRel(t, "ProtoDuration", s, got, ok)
		})
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	f.Add("120", int64(0))
	f.Add("1.5", now.Unix())
	f.Add("Wed, 05 Aug 2026 12:01:30 GMT", now.Add(-time.Hour).Unix())
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT", int64(0))
	f.Add("soon", int64(0))
	f.Fuzz(func(t *testing.T, v string, dateUnix int64) {
		fuzzbound.Run(t, func() {
			var date time.Time
			input := v
			if dateUnix >= resetparse.MinEpoch && dateUnix < resetparse.MaxEpoch {
				date = time.Unix(dateUnix, 0)
				input += "\nDate: " + date.UTC().Format(http.TimeFormat)
			}
			got, ok := resetparse.RetryAfter(v, date, now)
			checkRel(t, "RetryAfter", input, got, ok)
		})
	})
}

func FuzzParseHumanDuration(f *testing.F) {
	for _, s := range []string{"2 hours", "58 hours", "1 seconds", "3 days 6 hours 57 minutes", "1 minute and 30 seconds", "1.5 hours", "2 hourly", "400 days"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.HumanDuration(s)
			checkRel(t, "HumanDuration", s, got, ok)
		})
	})
}

func FuzzParseMessageDelay(f *testing.F) {
	for _, s := range []string{
		"Please retry in 10h17m5.723541104s.",
		"Please retry in 644ms",
		"Please try again in 644ms.",
		"Please try again in 9.816s.",
		"please try again after 1 seconds",
		"Please try again in 2 hours.",
		"Please try again in 58 hours.",
		"Please upgrade your plan or wait 6 seconds for your limit to reset.",
		"try again in 3 days 6 hours 57 minutes",
		"Please try again later.",
		"retry in 5minutes",
		"wait 1.5 hours and 30 min",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			got, ok := resetparse.MessageDelay(s)
			checkRel(t, "MessageDelay", s, got, ok)
		})
	})
}
