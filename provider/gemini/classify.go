package gemini

import (
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

// Provider is the Outcome.Provider of every classification in this package.
const Provider = "gemini"

// ResourceBilling is a prepaid-credit balance (INSUFFICIENT_G1_CREDITS_BALANCE).
const ResourceBilling = "billing"

var (
	// reLimitZero matches "limit: 0": the tier has no quota for the model.
	reLimitZero = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\blimit: 0\b`) })
	// reMetricText reads "Quota exceeded for metric: <metric>, limit: <n>,
	// model: <model>" from a message.
	reMetricText = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`Quota exceeded for metric: ([A-Za-z0-9_./-]{1,200}), limit: ([0-9]{1,15})(?:, model: ([A-Za-z0-9_.-]{1,64}))?`)
	})
)

// Principal reports the principal a Gemini response names in its headers:
// none. Gemini quotas are per project and model, and no response header
// names the project, so the caller falls back to the key's fingerprint.
func Principal(h http.Header) (string, bool) {
	return "", false
}

// Observations returns the quota states the headers of a Gemini response
// describe: none, because the Gemini API sends no rate-limit headers. A
// rejected call's quota is in its body; [ClassifyHTTP] reads it.
func Observations(h http.Header, now time.Time) []quota.State {
	return nil
}

// ClassifyHTTP classifies one Gemini API (or Vertex AI, or Code Assist)
// response, received at now, whose body (already read; may be nil) is
// body. It never panics.
//
// An error inside a 2xx (an alt=sse event, an element of a JSON array
// stream, or a 2xx whose body is an error) is classified as if it had come
// with its error.code (else the status its error.status implies). Then, in
// order:
//
//   - ErrorInfo reason (or text) VALIDATION_REQUIRED: auth. It asks for an
//     account action (verify the account); it is never a quota wait, and
//     auth is the class that is never waited out (docs/design.md, Safety rules).
//   - 401, UNAUTHENTICATED, or reason API_KEY_INVALID: auth.
//   - reason INSUFFICIENT_G1_CREDITS_BALANCE: quota, resource "billing".
//   - reason MODEL_CAPACITY_EXHAUSTED (or _EXCEEDED), 503, UNAVAILABLE:
//     transient: the service lacks capacity, the caller's quota is fine.
//   - 429 or RESOURCE_EXHAUSTED (or a 499 with quota details): the wait is
//     RetryInfo.retryDelay, else Retry-After, else the message's "Please
//     retry in …" (compound durations too). It is quota when the text says
//     "limit: 0" (the tier has no quota for the model), when the quota is a
//     daily one (a QuotaFailure quotaId or ErrorInfo quota_limit with PerDay
//     or Daily, Code Assist's "… per day …" limit), or on reason
//     QUOTA_EXHAUSTED; ResetAt is then now + the stated wait, else unknown
//     (the daily reset instant is not documented, so none is derived).
//     Otherwise it is a throttle (RATE_LIMIT_EXCEEDED, a per-minute quota,
//     the detail-less "Resource has been exhausted (e.g. check quota)."):
//     secondary with the wait, quota when the wait is over
//     quota.ThrottleQuotaCutoff, RetryAfter -1 without one.
//   - 408, 409, 499, other 5xx except 501: transient; any other status:
//     permanent.
//
// Resource names the quota and, where Gemini scopes it by model, the model:
// "requests-per-minute:gemini-2.5-pro", "input-tokens-per-minute:…",
// "requests-per-day:…", from the deciding QuotaFailure violation (a daily
// one first), else ErrorInfo metadata, else Code Assist's limit text ("limit
// 'Gemini 2.5 Pro Requests per day per user per tier'", which also supplies
// a model ErrorInfo lacks), else the message's "Quota exceeded for metric:
// …, limit: N, model: M".
// Limit is the violation's quotaValue and Remaining 0 when a violation was
// given. Observations hold one rejected state for a quota with a known
// reset.
func ClassifyHTTP(resp *http.Response, body []byte, now time.Time) provider.Outcome {
	return provider.CleanReason(classifyHTTP(resp, body, now))
}

func classifyHTTP(resp *http.Response, body []byte, now time.Time) provider.Outcome {
	if resp == nil {
		return provider.Unknown(Provider, provider.ClassPermanent, "no HTTP response")
	}
	h := resp.Header
	date := llm.Date(h)
	out := provider.Unknown(Provider, provider.ClassPermanent, "")
	code := resp.StatusCode
	success := code >= 200 && code < 300 || code == http.StatusNotModified
	e, found := findError(h, body, success)
	if success && !found {
		out.Class = provider.ClassOK
		out.Reason = fmt.Sprintf("HTTP %d", code)
		return out
	}
	status := code
	label := fmt.Sprintf("%d", code)
	if e.inSuccess != "" {
		switch s, ok := statusOfCode[e.status]; {
		case e.code != 0 && (e.code < 200 || e.code >= 300):
			status = e.code
		case ok:
			status = s
		default:
			status = http.StatusInternalServerError
		}
		label = fmt.Sprintf("%d with %s", code, e.inSuccess)
	}
	if e.status != "" {
		label += " " + e.status
	}
	upper := strings.ToUpper(e.message)
	switch {
	case e.hasReason("VALIDATION_REQUIRED") || strings.Contains(upper, "VALIDATION_REQUIRED"):
		out.Class = provider.ClassAuth
		out.Reason = label + " VALIDATION_REQUIRED (an account action, not a quota)"
	case status == http.StatusUnauthorized || e.status == "UNAUTHENTICATED" || e.hasReason("API_KEY_INVALID"):
		out.Class = provider.ClassAuth
		out.Reason = llm.WithMessage(label, e.message)
	case e.hasReason("INSUFFICIENT_G1_CREDITS_BALANCE"):
		out.Class, out.Resource = provider.ClassQuota, ResourceBilling
		out.Reason = label + " INSUFFICIENT_G1_CREDITS_BALANCE (billing), reset unknown"
	case e.hasReason("MODEL_CAPACITY_EXHAUSTED") || e.hasReason("MODEL_CAPACITY_EXCEEDED"):
		out.Class = provider.ClassTransient
		out.Reason = label + " model capacity exhausted (overload, not a quota)"
	case status == http.StatusServiceUnavailable || e.status == "UNAVAILABLE":
		out.Class = provider.ClassTransient
		out.Reason = llm.WithMessage(label+" (overload)", e.message)
	case status == http.StatusTooManyRequests || e.status == "RESOURCE_EXHAUSTED" ||
		status == 499 && (len(e.violations) > 0 || e.hasReason("RATE_LIMIT_EXCEEDED") || e.hasReason("QUOTA_EXHAUSTED")):
		return exhausted(out, label, e, h, date, now)
	case status == 499:
		out.Class = provider.ClassTransient
		out.Reason = llm.WithMessage(label+" (cancelled)", e.message)
	default:
		out.Class = llm.ErrorClass(status)
		out.Reason = llm.WithMessage(label, e.message)
	}
	return out
}

// exhausted classifies a RESOURCE_EXHAUSTED error.
func exhausted(out provider.Outcome, label string, e apiError, h http.Header, date, now time.Time) provider.Outcome {
	// The deciding violation: a daily one first.
	var v *violation
	for i := range e.violations {
		if daily(e.violations[i].id) {
			v = &e.violations[i]
			break
		}
	}
	if v == nil && len(e.violations) > 0 {
		v = &e.violations[0]
	}
	isDaily := false
	switch {
	case v != nil:
		out.Resource = violationResource(*v)
		out.Limit, out.Remaining = v.value, 0
		isDaily = daily(v.id)
	case e.infoLimit != "" || e.infoMetric != "":
		res := idResource(e.infoLimit)
		if res == "" {
			res = metricResource(e.infoMetric)
		}
		out.Resource = withModel(res, e.infoModel)
		out.Limit = e.infoValue
		isDaily = daily(e.infoLimit)
	}
	if m := reLimitName().FindStringSubmatch(e.message); m != nil {
		// Code Assist's limit text names the model; ErrorInfo may not.
		if r := limitNameResource(e.message); r != "" && !strings.Contains(out.Resource, ":") {
			out.Resource = r
		}
		isDaily = isDaily || daily(m[1])
	}
	if m := reMetricText().FindStringSubmatch(e.message); m != nil && out.Resource == "" {
		// "Quota exceeded for metric: …_requests, limit: 5, model: gemini-2.5-pro"
		out.Resource = withModel(metricResource(m[1]), m[3])
		if n, ok := llm.Count(m[2]); ok && out.Limit == quota.Unknown {
			out.Limit, out.Remaining = n, 0
		}
	}
	limitZero := reLimitZero().MatchString(e.message)
	if limitZero {
		out.Limit, out.Remaining = 0, 0
	}
	reason := label
	if r := e.reasonName(); r != "" {
		reason += " " + r
	}
	if out.Resource != "" {
		reason += " (" + out.Resource + ")"
	}
	var why string
	switch {
	case limitZero:
		why = "limit: 0, the tier has no quota for this model"
	case isDaily:
		why = "daily quota"
	case e.hasReason("QUOTA_EXHAUSTED"):
		why = "QUOTA_EXHAUSTED"
	}
	out.Reason = reason
	d, src, ok := wait(e, h, date, now)
	if why != "" {
		out.Class = provider.ClassQuota
		out.Reason += "; " + why
		if !ok {
			out.Reason += ", reset unknown"
			return out
		}
		out.RetryAfter = d
		out.ResetAt = now.Add(d)
		out.Reason += fmt.Sprintf("; %s %s", src, llm.FormatWait(d))
		return llm.AddRejected(out, 0, date, now)
	}
	if !ok {
		return llm.NoWait(out)
	}
	return llm.AddRejected(llm.Wait(out, d, src, now), 0, date, now)
}

// reasonName is the most telling ErrorInfo reason, for a Reason.
func (e *apiError) reasonName() string {
	for _, r := range []string{"QUOTA_EXHAUSTED", "RATE_LIMIT_EXCEEDED"} {
		if e.hasReason(r) {
			return r
		}
	}
	return ""
}

// wait is the wait the error states: RetryInfo, Retry-After, the message.
func wait(e apiError, h http.Header, date, now time.Time) (time.Duration, string, bool) {
	if e.hasDelay {
		return e.retryDelay, "RetryInfo retryDelay", true
	}
	if d, which, ok := llm.RetryAfter(h, date, now); ok {
		return d, which, true
	}
	if d, ok := resetparse.MessageDelay(e.message); ok {
		return d, "the message says retry in", true
	}
	return 0, "", false
}
