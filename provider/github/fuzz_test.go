package github

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
	"github.com/layoverhq/layover/quota"
)

var reDigits = regexp.MustCompile(`[0-9]+`)

// inputDates returns the times of every "Date:" line in input.
func inputDates(input string) []time.Time {
	var ds []time.Time
	for _, line := range strings.Split(string(stripANSI([]byte(input))), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "date") {
			continue
		}
		if d, err := http.ParseTime(strings.TrimSpace(v)); err == nil {
			ds = append(ds, d)
		}
	}
	return ds
}

// fromInput reports whether reset can be traced to input: a run of digits
// n with reset = time.Unix(n) or now + (time.Unix(n) − Date) for a Date
// line of input.
func fromInput(reset time.Time, input string, now time.Time) bool {
	dates := inputDates(input)
	for _, run := range reDigits.FindAllString(input, -1) {
		run = strings.TrimLeft(run, "0")
		if run == "" || len(run) > 18 {
			continue
		}
		n, err := strconv.ParseInt(run, 10, 64)
		if err != nil {
			continue
		}
		if time.Unix(n, 0).Equal(reset) {
			return true
		}
		for _, d := range dates {
			if now.Add(time.Unix(n, 0).Sub(d)).Equal(reset) {
				return true
			}
		}
	}
	return false
}

// checkOutcome verifies what every classification must hold, for input.
func checkOutcome(out provider.Outcome, input string, now time.Time) error {
	switch out.Class {
	case provider.ClassOK, provider.ClassQuota, provider.ClassSecondary, provider.ClassAuth, provider.ClassTransient, provider.ClassPermanent:
	default:
		return fmt.Errorf("class %q", out.Class)
	}
	if out.Provider != Provider {
		return fmt.Errorf("provider %q", out.Provider)
	}
	if err := resetcheck.CheckReason(out.Reason); err != nil {
		return err
	}
	if out.RetryAfter < -1 || out.Remaining < -1 || out.Limit < -1 {
		return fmt.Errorf("negative numbers: %+v", out)
	}
	if out.Class == provider.ClassSecondary && out.RetryAfter > quota.ThrottleQuotaCutoff {
		return fmt.Errorf("secondary with a %v wait", out.RetryAfter)
	}
	if !out.ResetAt.IsZero() {
		viaRetryAfter := out.RetryAfter > 0 && out.ResetAt.Equal(now.Add(out.RetryAfter)) &&
			strings.Contains(strings.ToLower(input), "retry-after")
		if !viaRetryAfter && !fromInput(out.ResetAt, input, now) {
			return fmt.Errorf("reset %v is not in the input", out.ResetAt)
		}
	}
	for _, o := range out.Observations {
		if err := checkState(o, input, now); err != nil {
			return err
		}
	}
	return nil
}

func checkState(s quota.State, input string, now time.Time) error {
	if s.Remaining < 0 || s.Limit < -1 || s.Resource == "" || !s.ResetKnown || !s.ObservedAt.Equal(now) {
		return fmt.Errorf("bad state %+v", s)
	}
	if s.RawReset <= 0 || s.RawReset >= 1e10 {
		return fmt.Errorf("raw reset %d", s.RawReset)
	}
	if !fromInput(s.ResetAt, input, now) {
		return fmt.Errorf("state reset %v (raw %d) is not in the input", s.ResetAt, s.RawReset)
	}
	if (s.Remaining == 0) != (s.Cause == quota.CauseExhausted) {
		return fmt.Errorf("cause %q with remaining %d", s.Cause, s.Remaining)
	}
	return nil
}

func FuzzClassifyHTTP(f *testing.F) {
	date := "Date: " + httpDate(now) + "\n"
	skewed := "Date: " + httpDate(now.Add(-time.Hour)) + "\n"
	rl := func(rem int, reset time.Time, res string) string {
		return fmt.Sprintf("X-RateLimit-Limit: 5000\nX-RateLimit-Remaining: %d\nX-RateLimit-Reset: %s\nX-RateLimit-Resource: %s\n", rem, epoch(reset), res)
	}
	seeds := []struct {
		code int
		hdr  string
		body string
	}{
		{200, date + rl(4999, now.Add(time.Hour), "core"), `{"login":"x"}`},
		{403, date + rl(0, now.Add(time.Hour), "core"), restBody(msgPrimaryUser, docPrimary)},
		{429, skewed + rl(0, now.Add(-30*time.Minute), "search"), restBody(msgPrimaryIP, "")},
		{200, date + rl(0, now.Add(time.Hour), "graphql"), `{"errors":[{"type":"RATE_LIMITED","message":"` + msgPrimaryUser + `"}]}`},
		{200, "", `{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"` + msgGraphQLAlready + `"}]}`},
		{403, "Retry-After: 60\n" + date, restBody(msgSecondary, "")},
		{403, "Retry-After: " + httpDate(now.Add(time.Minute)) + "\n" + skewed, restBody(msgSecondaryCreation, "")},
		{403, date + rl(0, now.Add(2*time.Minute), "core"), restBody(msgAbuse, "https://developer.github.com/v3/#abuse-rate-limits")},
		{429, "Retry-After: 3600\n", ""},
		{403, "X-GitHub-SSO: required; url=https://github.com/orgs/a/sso\n", restBody(msgSAML, "")},
		{403, "", restBody(msgIntegration, "")},
		{404, date + rl(0, now.Add(time.Hour), "core"), restBody("Not Found", "")},
		{401, "", `{"message":"Bad credentials"}`},
		{502, "", "<html>"},
		{403, "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1785931200000\n", ""},
		{200, "X-RateLimit-Remaining: -1\nX-RateLimit-Reset: 00001785931200\n", `{"errors":"x"}`},
	}
	for _, s := range seeds {
		f.Add(s.code, s.hdr, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, code int, hdr string, body []byte) {
		fuzzbound.Run(t, func() {
			if code < 0 {
				code = -code
			}
			code = 100 + code%500
			resp := &http.Response{StatusCode: code, Header: resetcheck.ParseHeaderText(hdr)}
			out := ClassifyHTTP(resp, body, now)
			if err := checkOutcome(out, hdr, now); err != nil {
				t.Fatalf("ClassifyHTTP(%d, %q, %q): %v", code, hdr, body, err)
			}
			// The same response as curl -i prints it.
			raw := fmt.Sprintf("HTTP/1.1 %d\r\n%s\r\n\r\n", code, strings.ReplaceAll(hdr, "\n", "\r\n"))
			if r, b, err := provider.ParseRawHTTP(append([]byte(raw), body...)); err == nil {
				out := ClassifyHTTP(r, b, now)
				if err := checkOutcome(out, raw, now); err != nil {
					t.Fatalf("ClassifyHTTP(raw %q): %v", raw, err)
				}
			}
		})
	})
}

func FuzzClassifyCLI(f *testing.F) {
	inc := ghInclude("403 Forbidden", []string{"Date", httpDate(now.Add(-time.Hour)), "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", epoch(now), "X-Ratelimit-Resource", "core"}, restBody(msgPrimaryUser, ""))
	seeds := []struct {
		exit           int
		stdout, stderr string
	}{
		{0, "", "GraphQL: " + msgGraphQLAlready},
		{1, "", "HTTP 403: " + msgPrimaryUser + " (https://api.github.com/repos/a/b/pulls)"},
		{1, "", "HTTP 403: " + msgPrimaryIP + " (https://api.github.com/search/code?q=x)"},
		{1, "", "GraphQL: " + msgGraphQLAlready + " (viewer), Something (repository)"},
		{1, restBody(msgSecondary, ""), "gh: " + msgSecondary + " (HTTP 403)"},
		{1, inc, "gh: " + msgPrimaryUser + " (HTTP 403)"},
		{1, ghInclude("429 Too Many Requests", []string{"Retry-After", "900"}, restBody(msgSecondary, "")), "gh: x (HTTP 429)"},
		{1, `{"errors":[{"type":"RATE_LIMITED","message":"x"}]}`, "gh: x"},
		{1, "", "HTTP 401: Bad credentials (https://api.github.com/graphql)\nTry authenticating with:  gh auth login"},
		{4, "", "To get started with GitHub CLI, please run:  gh auth login"},
		{2, "", ""},
		{1, "", "dial tcp: connection refused"},
		{1, "", "gh: HTTP 503"},
		{1, "HTTP/2.0 200 OK\r\n\x1b[1;34mX-Ratelimit-Reset\x1b[m: 1\r\n", "HTTP/"},
	}
	for _, s := range seeds {
		f.Add(s.exit, []byte(s.stdout), []byte(s.stderr))
	}
	f.Fuzz(func(t *testing.T, exit int, stdout, stderr []byte) {
		fuzzbound.Run(t, func() {
			out := ClassifyCLI(exit, stdout, stderr, now)
			if err := checkOutcome(out, string(stdout), now); err != nil {
				t.Fatalf("ClassifyCLI(%d, %q, %q): %v", exit, stdout, stderr, err)
			}
			if exit == 0 && out.Class != provider.ClassOK {
				t.Fatalf("exit 0 classified %q", out.Class)
			}
		})
	})
}

func FuzzParseRateLimit(f *testing.F) {
	f.Add([]byte(rateLimitBody(now)), int64(0))
	f.Add([]byte(rateLimitBody(now.Add(-time.Hour))), now.Add(-time.Hour).Unix())
	f.Add([]byte(`{"rate":{"limit":60,"used":60,"remaining":0,"reset":1785931200}}`), int64(1))
	f.Add([]byte(`{"resources":{"core":{"limit":1,"remaining":0,"reset":1785931200000}}}`), int64(0))
	f.Add([]byte(`{"resources":{"core":{"limit":"1","remaining":-0,"reset":1e9}}}`), int64(0))
	f.Add([]byte(`{"resources":null,"rate":null}`), int64(0))
	f.Add([]byte(`{`), int64(0))
	f.Fuzz(func(t *testing.T, body []byte, dateUnix int64) {
		fuzzbound.Run(t, func() {
			var date time.Time
			if dateUnix > 0 && dateUnix < 1e10 {
				date = time.Unix(dateUnix, 0)
			}
			states, err := ParseRateLimit(body, date, now)
			if err != nil {
				if states != nil {
					t.Fatalf("states with an error: %+v", states)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error is not one line: %q", err)
				}
				return
			}
			input := string(body)
			if !date.IsZero() {
				input += "\nDate: " + httpDate(date)
			}
			for _, s := range states {
				if s.Source != quota.SourceRateLimit || s.Limit < 0 {
					t.Fatalf("bad state %+v", s)
				}
				if !bytes.Contains(body, []byte(strconv.FormatInt(s.RawReset, 10))) {
					t.Fatalf("raw reset %d not in the body", s.RawReset)
				}
				if err := checkState(s, input, now); err != nil {
					t.Fatal(err)
				}
			}
		})
	})
}

func FuzzGHConfigUser(f *testing.F) {
	f.Add([]byte(hostsYML), "github.com")
	f.Add([]byte(hostsYML), "ghes.example.com")
	f.Add([]byte("github.com:\r\n\tuser: a\r\n"), "github.com")
	f.Add([]byte("'github.com':\n  user: \"x\" # c\n"), "github.com")
	f.Add([]byte("\"github.com\n  user: x\n"), "github.com")
	f.Add([]byte(":\n :\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, host string) {
		fuzzbound.Run(t, func() {
			user, ok := hostsUser(data, host)
			if !ok {
				if user != "" {
					t.Fatalf("user %q without ok", user)
				}
				return
			}
			if !ValidLogin(user) || !bytes.Contains(data, []byte(user)) {
				t.Fatalf("user %q is not a login from the input", user)
			}
		})
	})
}

// apiBaseWhys are the reasons an APIBase error may give: it names what is
// wrong and never repeats the value.
var apiBaseWhys = []string{"it does not parse as a URL", "scheme must be http or https", "it has no host",
	"it must not contain credentials", "it must not have a query or fragment", "bad port"}

func FuzzAPIBase(f *testing.F) {
	for _, v := range []string{"", "https://api.github.com", "https://ghes.example.com/api/v3/", "http://127.0.0.1:8080",
		"https://user:pw@x", "https://x?y", "https://x#", "ftp://x", "https://x:0", "https://X.Example.COM:443//", "https://[::1]:99999", " https://x "} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		fuzzbound.Run(t, func() {
			getenv := func(k string) string {
				if k == "GITHUB_API_URL" {
					return v
				}
				return ""
			}
			base, host, err := APIBase(getenv)
			if err != nil {
				msg := err.Error()
				why, ok := strings.CutPrefix(msg, "GITHUB_API_URL is not a usable API URL (")
				why, ok2 := strings.CutSuffix(why, "); want one like "+DefaultBaseURL)
				if !ok || !ok2 || !slices.Contains(apiBaseWhys, why) {
					t.Fatalf("APIBase(%q): error %q is not one of its fixed messages", v, msg)
				}
				if base != "" || host != "" {
					t.Fatalf("APIBase(%q): %q, %q with an error", v, base, host)
				}
				return
			}
			u, perr := url.Parse(base)
			if perr != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(base, "/") {
				t.Fatalf("APIBase(%q) = %q: not a clean API root", v, base)
			}
			if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
				t.Fatalf("APIBase(%q) = %q: scheme %q", v, base, u.Scheme)
			}
			// The host keys quotas: the URL's own host, lowercase, with its
			// port as a number unless that is the scheme's own, and no space
			// or control character in it.
			want := strings.ToLower(u.Hostname())
			if p := u.Port(); p != "" {
				n, _ := strconv.Atoi(p)
				if !(strings.EqualFold(u.Scheme, "https") && n == 443) && !(strings.EqualFold(u.Scheme, "http") && n == 80) {
					want = net.JoinHostPort(want, strconv.Itoa(n))
				}
			}
			if host == "" || host != want || strings.IndexFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
				t.Fatalf("APIBase(%q) host %q for URL host %q", v, host, u.Host)
			}
			// The root reads back as itself.
			base2, host2, err := APIBase(func(string) string { return base })
			if err != nil || base2 != base || host2 != host {
				t.Fatalf("APIBase(%q) = %q, %q; that again gives %q, %q, %v", v, base, host, base2, host2, err)
			}
		})
	})
}
