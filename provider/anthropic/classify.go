package anthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// statusOfType is the HTTP status Anthropic documents for each error type;
// an error event inside a 200 stream is classified as if it had come with
// that status.
var statusOfType = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

var (
	// reUsageLimits matches the spend-limit texts: "You have reached your
	// specified API usage limits", its workspace variant, and the monthly
	// cap's "You have reached your API usage limits: …".
	reUsageLimits = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)reached your (?:specified )?(?:workspace )?API usage limits`)
	})
	// reRegain matches the resume time a spend-limit message states: "You
	// will regain access on 2026-09-01 at 00:00 UTC."
	reRegain = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)regain access on (\d{4}-\d{2}-\d{2}) at (\d{1,2}:\d{2}) UTC`)
	})
)

// apiError is the error object of a body or of a stream's error event.
type apiError struct {
	typ     string // error.type
	message string // error.message
	code    string // error.details.error_code
}

// parseError reads {"type":"error","error":{"type","message","details":
// {"error_code"}}} from a decoded object.
func parseError(obj map[string]json.RawMessage) (apiError, bool) {
	raw, ok := obj["error"]
	if !ok {
		return apiError{}, false
	}
	inner := llm.Object(raw)
	if inner == nil {
		// {"type":"error","error":"text"}
		if s := llm.String(raw); s != "" && llm.String(obj["type"]) == "error" {
			return apiError{message: s}, true
		}
		return apiError{}, false
	}
	e := apiError{typ: strings.TrimSpace(llm.String(inner["type"])), message: llm.String(inner["message"])}
	if d := llm.Object(inner["details"]); d != nil {
		e.code = strings.TrimSpace(llm.String(d["error_code"]))
	}
	if e.typ == "" && e.message == "" && e.code == "" {
		return apiError{}, false
	}
	return e, true
}

// textError is the error of a body or stream event that is bare text.
func textError(text string) apiError { return apiError{message: text} }

// ClassifyHTTP classifies one Anthropic Messages API response, received at
// now, whose body (already read; may be nil) is body. It never panics.
//
// An error event inside a 2xx event stream (event: error, data
// {"type":"error","error":{…}}), or a 2xx whose body is an error object, is
// classified as if it had come with the status Anthropic documents for its
// error type (rate_limit_error 429, overloaded_error 529, …; an unknown type
// as 500). Then, in order:
//
//   - overloaded_error or 529: transient (service-wide overload, not a
//     quota).
//   - 401 or authentication_error: auth.
//   - error.details.error_code enforced_spend_limit_reached (the monthly
//     spend cap; no retry-after): quota, resource "spend". ResetAt is the
//     time the message states ("You will regain access on 2026-09-01 at
//     00:00 UTC"), else the documented 00:00 UTC on the first of next month
//     (of the response's Date, or of now without one).
//   - "You have reached your specified (workspace) API usage limits":
//     quota, resource "spend", ResetAt the stated time when it parses, else
//     unknown.
//   - 402, billing_error, or "Your credit balance is too low": quota,
//     resource "billing", reset unknown.
//   - 413 or request_too_large: permanent (it never succeeds as sent).
//   - 429 or rate_limit_error (the error type wins over text: a
//     rate_limit_error saying "overloaded" is still a limit): a throttle.
//     Its resource is the header family or subscription window that is
//     exhausted (the latest reset first), else the one the message names
//     ("input tokens per minute" → input-tokens, "Number of request tokens"
//     → input-tokens, "output tokens" → output-tokens, "requests per minute"
//     → requests), else "". The wait is retry-after-ms or Retry-After
//     (seconds, or an HTTP-date measured from the response's Date), else a
//     wait the message writes ("try again in …"), else the exhausted
//     resource's reset (when it is fully replenished). A wait over
//     quota.ThrottleQuotaCutoff (a drained 5-hour window's Retry-After:
//     7999) makes it quota with ResetAt now + wait (or the reset). No wait
//     at all: secondary with RetryAfter -1.
//   - 408, 409, other 5xx except 501: transient; any other status
//     (400, 403 permission_error, 404, …): permanent.
//
// Observations are those of [Observations]; a quota with a known reset also
// carries a rejected state for its resource when the headers gave none.
func ClassifyHTTP(resp *http.Response, body []byte, now time.Time) provider.Outcome {
	return provider.CleanReason(classifyHTTP(resp, body, now))
}

func classifyHTTP(resp *http.Response, body []byte, now time.Time) provider.Outcome {
	if resp == nil {
		return provider.Unknown(Provider, provider.ClassPermanent, "no HTTP response")
	}
	c := classifier{h: resp.Header, date: llm.Date(resp.Header), now: now}
	c.obs = observations(c.h, c.date, now)
	out := provider.Unknown(Provider, provider.ClassPermanent, "")
	out.Observations = c.obs
	code := resp.StatusCode
	success := code >= 200 && code < 300 || code == http.StatusNotModified
	e, where, found := llm.FindError(c.h, body, success, parseError, parseError, textError)
	if success && !found {
		out.Class = provider.ClassOK
		out.Reason = fmt.Sprintf("HTTP %d", code)
		return out
	}
	status := code
	label := fmt.Sprintf("%d", code)
	if where != "" {
		status = http.StatusInternalServerError
		if s, ok := statusOfType[e.typ]; ok {
			status = s
		}
		label = fmt.Sprintf("%d with %s", code, where)
	}
	if e.typ != "" {
		label += " " + e.typ
	}
	return c.classify(out, status, label, e)
}

// classifier holds what every rule reads.
type classifier struct {
	h    http.Header
	date time.Time
	now  time.Time
	obs  []quota.State
}

func (c *classifier) classify(out provider.Outcome, status int, label string, e apiError) provider.Outcome {
	lower := strings.ToLower(e.message)
	switch {
	case e.typ == "overloaded_error" || status == 529:
		out.Class = provider.ClassTransient
		out.Reason = label + " (service overload, not a quota)"
	case status == http.StatusUnauthorized || e.typ == "authentication_error":
		out.Class = provider.ClassAuth
		out.Reason = llm.WithMessage(label, e.message)
	case e.code == "enforced_spend_limit_reached" || strings.Contains(lower, "enforced_spend_limit_reached"):
		out.Class, out.Resource = provider.ClassQuota, ResourceSpend
		out.Reason = label + " enforced_spend_limit_reached (monthly spend cap)"
		if reset, raw, ok := c.statedRegain(e.message); ok {
			out.ResetAt = reset
			out.Reason += "; resumes at the time the message states"
			return llm.AddRejected(out, raw, c.date, c.now)
		}
		base := c.now
		if !c.date.IsZero() {
			base = c.date
		}
		boundary := SpendCapReset(base)
		out.ResetAt = resetparse.SkewCorrect(boundary, c.date, c.now)
		out.Reason += "; resumes 00:00 UTC on the 1st of next month (documented)"
		return llm.AddRejected(out, boundary.Unix(), c.date, c.now)
	case reUsageLimits().MatchString(e.message):
		out.Class, out.Resource = provider.ClassQuota, ResourceSpend
		out.Reason = label + " API usage limits reached (spend limit)"
		if reset, raw, ok := c.statedRegain(e.message); ok {
			out.ResetAt = reset
			out.Reason += "; resumes at the time the message states"
			return llm.AddRejected(out, raw, c.date, c.now)
		}
		out.Reason += ", reset unknown"
	case status == http.StatusPaymentRequired || e.typ == "billing_error" || strings.Contains(lower, "credit balance is too low"):
		out.Class, out.Resource = provider.ClassQuota, ResourceBilling
		out.Reason = llm.WithMessage(label+" (billing)", e.message) + ", reset unknown"
	case status == http.StatusRequestEntityTooLarge || e.typ == "request_too_large":
		out.Class = provider.ClassPermanent
		out.Reason = label + " (request too large: never succeeds as sent)"
	case status == http.StatusTooManyRequests || e.typ == "rate_limit_error":
		return c.throttle(out, label, e)
	default:
		// An error object in a 2xx whose status mapping is a success
		// cannot happen (unknown types map to 500).
		out.Class = llm.ErrorClass(status)
		out.Reason = llm.WithMessage(label, e.message)
	}
	return out
}

// statedRegain parses "regain access on YYYY-MM-DD at HH:MM UTC" from a
// message: the reset on this machine's clock and in epoch seconds.
func (c *classifier) statedRegain(msg string) (time.Time, int64, bool) {
	m := reRegain().FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}, 0, false
	}
	hm := m[2]
	if len(hm) == 4 {
		hm = "0" + hm
	}
	t, err := time.Parse("2006-01-02 15:04", m[1]+" "+hm)
	if err != nil || t.Unix() < resetparse.MinEpoch || t.Unix() >= resetparse.MaxEpoch {
		return time.Time{}, 0, false
	}
	return resetparse.SkewCorrect(t, c.date, c.now), t.Unix(), true
}

// textResource is the resource a rate-limit message names, "" when none.
func textResource(msg string) string {
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "input tokens") || strings.Contains(l, "request tokens"):
		return "input-tokens"
	case strings.Contains(l, "output tokens"):
		return "output-tokens"
	case strings.Contains(l, "requests per minute") || strings.Contains(l, "number of requests"):
		return "requests"
	case strings.Contains(l, "tokens per minute"):
		return "tokens"
	}
	return ""
}

// throttle classifies a rate_limit_error (or a bare 429).
func (c *classifier) throttle(out provider.Outcome, label string, e apiError) provider.Outcome {
	exhausted, hasExhausted := llm.LatestExhausted(c.obs)
	switch {
	case hasExhausted:
		out.Resource = exhausted.Resource
	default:
		out.Resource = textResource(e.message)
	}
	if s, ok := llm.FindState(c.obs, out.Resource); ok {
		out.Remaining, out.Limit = s.Remaining, s.Limit
	}
	reason := label
	if out.Resource != "" {
		reason += " (" + out.Resource + ")"
	}
	out.Reason = reason
	if d, which, ok := llm.RetryAfter(c.h, c.date, c.now); ok {
		out = llm.Wait(out, d, which, c.now)
	} else if d, ok := resetparse.MessageDelay(e.message); ok {
		out = llm.Wait(out, d, "the message says wait", c.now)
	} else if hasExhausted {
		return llm.UntilReset(out, exhausted.ResetAt, exhausted.Resource+" remaining 0", c.now)
	} else {
		return llm.NoWait(out)
	}
	return llm.AddRejected(out, 0, c.date, c.now)
}
