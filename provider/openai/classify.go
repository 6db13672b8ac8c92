package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// spendCodes are the error codes of a spend limit (ResourceSpend) or an
// exhausted balance (ResourceBilling). credit_balance_exhausted is
// unconfirmed (docs/provider-signals.md §3); billing_hard_limit_reached is the
// older images API's spend limit.
var spendCodes = map[string]string{
	"organization_spend_limit_exceeded": ResourceSpend,
	"project_spend_limit_exceeded":      ResourceSpend,
	"billing_hard_limit_reached":        ResourceSpend,
	"credit_balance_exhausted":          ResourceBilling,
}

// rateTypes are error types and codes of a rate limit: OpenAI's
// rate_limit_exceeded (with type "requests" or "tokens"), and the
// OpenAI-compatible Kimi (Moonshot) API's rate_limit_reached_error.
var rateTypes = map[string]bool{
	"rate_limit_exceeded":      true,
	"rate_limit_reached_error": true,
	"rate_limit_error":         true,
}

var (
	// reDimension finds the limit a message names: "on tokens per min
	// (TPM)", "on requests per day (RPD)".
	reDimension = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\bon (requests|tokens|images) per (min|minute|day)\b`)
	})
	// reAbbrev finds Kimi's abbreviations: "max RPM: 20", "TPD rate limit".
	reAbbrev = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b([RT]P[MD])\b`) })
	// reLimitUsed reads "Limit 30000, Used 29937".
	reLimitUsed = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\blimit:? (\d{1,15}), used:? (\d{1,15})\b`) })
	// reCurrentLimit reads Kimi's "current: 1526210, limit: 1500000".
	reCurrentLimit = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bcurrent: (\d{1,15}), limit: (\d{1,15})\b`) })
	// reMaxLimit reads Kimi's "max RPM: 20".
	reMaxLimit = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bmax [RT]P[MD]: (\d{1,15})\b`) })
)

// apiError is the error of a body or of a stream's error event.
type apiError struct {
	typ, code, message string
}

// parseError reads an error from a decoded object: {"error":{"message",
// "type","code"}} (Chat Completions, and every non-2xx), the Responses
// API's stream event {"type":"error","code","message"}, or its
// {"type":"response.failed","response":{"error":{"code","message"}}}.
func parseError(obj map[string]json.RawMessage) (apiError, bool) {
	pick := func(o map[string]json.RawMessage) (apiError, bool) {
		e := apiError{
			typ:     strings.TrimSpace(llm.String(o["type"])),
			code:    strings.TrimSpace(llm.Scalar(o["code"])),
			message: llm.String(o["message"]),
		}
		return e, e.typ != "" || e.code != "" || e.message != ""
	}
	if inner := llm.Object(obj["error"]); inner != nil {
		return pick(inner)
	}
	switch llm.String(obj["type"]) {
	case "error":
		e, ok := pick(obj)
		e.typ = ""
		return e, ok && (e.code != "" || e.message != "")
	case "response.failed":
		if r := llm.Object(obj["response"]); r != nil {
			if inner := llm.Object(r["error"]); inner != nil {
				return pick(inner)
			}
		}
		return apiError{message: "response.failed"}, true
	}
	return apiError{}, false
}

// bodyError reads the error of a 2xx body: only the {"error":{…}} form
// counts there.
func bodyError(obj map[string]json.RawMessage) (apiError, bool) {
	if llm.Object(obj["error"]) == nil {
		return apiError{}, false
	}
	return parseError(obj)
}

// textError is the error of a body or stream event that is bare text.
func textError(text string) apiError { return apiError{message: text} }

// statusOf is the status an error found in a 2xx response implies.
func statusOf(e apiError) int {
	switch {
	case e.typ == "insufficient_quota" || e.code == "insufficient_quota" || rateTypes[e.typ] || rateTypes[e.code]:
		return http.StatusTooManyRequests
	case e.code == "invalid_api_key" || e.typ == "authentication_error":
		return http.StatusUnauthorized
	case spendCodes[e.code] != "":
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// ClassifyHTTP classifies one OpenAI API response (or one of an
// OpenAI-compatible API such as Kimi's), received at now, whose body
// (already read; may be nil) is body. It never panics.
//
// An error inside a 2xx (a Chat Completions stream's data {"error":{…}},
// a Responses stream's error or response.failed event, or a 2xx whose body
// is an error object) is classified as if it had come with the status its
// code implies (rate limits and quota 429, invalid_api_key 401, anything
// else 500). Then, in order:
//
//   - engine_overloaded_error: transient (overload, even on a 429).
//   - 401, invalid_api_key: auth.
//   - organization_spend_limit_exceeded, project_spend_limit_exceeded,
//     billing_hard_limit_reached: quota, resource "spend";
//     credit_balance_exhausted: quota, resource "billing". The reset is
//     unknown (until raised, or a monthly reset not documented as an
//     instant).
//   - insufficient_quota (type or code; older bodies have code null), or
//     "You exceeded your current quota": quota, resource "billing", reset
//     unknown. So is any 402.
//   - A 403 whose message says a quota is exceeded: quota, resource
//     "billing".
//   - "Request too large", or 413: permanent (never succeeds as sent).
//   - 429, or a rate_limit_exceeded / rate_limit_reached_error: a
//     throttle. Its resource is the dimension the error names (type
//     "requests"/"tokens", the message's "on tokens per min (TPM)", Kimi's
//     RPM/TPM), with "-per-day" for a daily limit (TPD, RPD, "per day"),
//     else the exhausted header family, else "". The wait is retry-after-ms
//     or Retry-After, else the message's "Please try again in 644ms" /
//     "please try again after 1 seconds", else the exhausted family's
//     reset; a wait over quota.ThrottleQuotaCutoff makes it quota with
//     ResetAt now + wait. A daily limit is always quota (reset unknown
//     without a wait). No wait at all: secondary with RetryAfter -1.
//   - 408, 409, other 5xx except 501: transient; any other status:
//     permanent.
//
// Remaining and Limit are the resource's header counts, else those of the
// message ("Limit 30000, Used 29937" gives Limit 30000, Remaining 63).
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
	e, where, found := llm.FindError(c.h, body, success, parseError, bodyError, textError)
	if success && !found {
		out.Class = provider.ClassOK
		out.Reason = fmt.Sprintf("HTTP %d", code)
		return out
	}
	status := code
	label := fmt.Sprintf("%d", code)
	if where != "" {
		status = statusOf(e)
		label = fmt.Sprintf("%d with %s", code, where)
	}
	switch {
	case e.code != "" && e.code != e.typ:
		label += " " + e.code
	case e.typ != "":
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
	is := func(v string) bool { return e.typ == v || e.code == v }
	switch {
	case is("engine_overloaded_error"):
		out.Class = provider.ClassTransient
		out.Reason = label + " (overload, not a quota)"
	case status == http.StatusUnauthorized || is("invalid_api_key"):
		out.Class = provider.ClassAuth
		out.Reason = llm.WithMessage(label, e.message)
	case spendCodes[e.code] != "" || spendCodes[e.typ] != "":
		res := spendCodes[e.code]
		if res == "" {
			res = spendCodes[e.typ]
		}
		out.Class, out.Resource = provider.ClassQuota, res
		out.Reason = label + " (" + res + "), reset unknown"
	case is("insufficient_quota") || strings.Contains(lower, "exceeded your current quota"):
		out.Class, out.Resource = provider.ClassQuota, ResourceBilling
		out.Reason = label + " (insufficient quota: plan and billing), reset unknown"
	case status == http.StatusPaymentRequired:
		out.Class, out.Resource = provider.ClassQuota, ResourceBilling
		out.Reason = llm.WithMessage(label+" (billing)", e.message) + ", reset unknown"
	case status == http.StatusForbidden && strings.Contains(lower, "quota") && strings.Contains(lower, "exceeded"):
		out.Class, out.Resource = provider.ClassQuota, ResourceBilling
		out.Reason = llm.WithMessage(label+" (quota)", e.message) + ", reset unknown"
	case strings.Contains(lower, "request too large") || status == http.StatusRequestEntityTooLarge:
		out.Class = provider.ClassPermanent
		out.Reason = label + " (request too large: never succeeds as sent)"
	case status == http.StatusTooManyRequests || rateTypes[e.code] || rateTypes[e.typ]:
		return c.throttle(out, label, e)
	default:
		out.Class = llm.ErrorClass(status)
		out.Reason = llm.WithMessage(label, e.message)
	}
	return out
}

// dimension returns the limit an error names: "requests", "tokens" or
// "images" ("" when it names none), and whether it is a daily limit.
func dimension(e apiError) (string, bool) {
	dim, daily := "", false
	if m := reDimension().FindStringSubmatch(e.message); m != nil {
		dim = strings.ToLower(m[1])
		daily = strings.EqualFold(m[2], "day")
	} else if m := reAbbrev().FindStringSubmatch(e.message); m != nil {
		dim = map[byte]string{'R': "requests", 'T': "tokens"}[m[1][0]]
		daily = m[1][2] == 'D'
	}
	if e.typ == "requests" || e.typ == "tokens" {
		dim = e.typ
	}
	return dim, daily
}

// messageCounts reads a limit and what remains from a message: "Limit
// 30000, Used 29937", "current: 1526210, limit: 1500000", "max RPM: 20".
func messageCounts(msg string) (limit, remaining int64) {
	limit, remaining = quota.Unknown, quota.Unknown
	if m := reLimitUsed().FindStringSubmatch(msg); m != nil {
		l, _ := strconv.ParseInt(m[1], 10, 64)
		u, _ := strconv.ParseInt(m[2], 10, 64)
		return l, max(l-u, 0)
	}
	if m := reCurrentLimit().FindStringSubmatch(msg); m != nil {
		cur, _ := strconv.ParseInt(m[1], 10, 64)
		l, _ := strconv.ParseInt(m[2], 10, 64)
		return l, max(l-cur, 0)
	}
	if m := reMaxLimit().FindStringSubmatch(msg); m != nil {
		l, _ := strconv.ParseInt(m[1], 10, 64)
		return l, quota.Unknown
	}
	return limit, remaining
}

// throttle classifies a rate limit.
func (c *classifier) throttle(out provider.Outcome, label string, e apiError) provider.Outcome {
	dim, daily := dimension(e)
	exhausted, hasExhausted := llm.LatestExhausted(c.obs)
	if dim != "" {
		if s, ok := llm.FindState(c.obs, dim); ok && s.Depleted() && !daily {
			exhausted, hasExhausted = s, true
		}
	}
	switch {
	case dim != "" && daily:
		out.Resource = dim + "-per-day"
	case dim != "":
		out.Resource = dim
	case hasExhausted:
		out.Resource = exhausted.Resource
	}
	if daily {
		// The headers describe the per-minute buckets only.
		hasExhausted = false
	}
	if s, ok := llm.FindState(c.obs, out.Resource); ok {
		out.Remaining, out.Limit = s.Remaining, s.Limit
	} else {
		out.Limit, out.Remaining = messageCounts(e.message)
	}
	out.Reason = label
	if out.Resource != "" {
		out.Reason += " (" + out.Resource + ")"
	}
	if d, which, ok := llm.RetryAfter(c.h, c.date, c.now); ok {
		out = llm.Wait(out, d, which, c.now)
	} else if d, ok := resetparse.MessageDelay(e.message); ok {
		out = llm.Wait(out, d, "the message says wait", c.now)
	} else if hasExhausted {
		out = llm.UntilReset(out, exhausted.ResetAt, exhausted.Resource+" remaining 0", c.now)
	} else if daily {
		out.Class = provider.ClassQuota
		out.Reason += " (daily limit), reset unknown"
		return out
	} else {
		return llm.NoWait(out)
	}
	if daily && out.Class == provider.ClassSecondary {
		out.Class = provider.ClassQuota
		out.ResetAt = c.now.Add(out.RetryAfter)
		out.Reason += " (daily limit: quota)"
	}
	return llm.AddRejected(out, 0, c.date, c.now)
}
