package github

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

// maxScan is how much of a non-JSON body, or of a command's output, is
// scanned for messages. (The largest body decoded as JSON is
// llm.MaxJSONBody; a Reason quotes at most llm.MaxReasonMessage runes of a
// message.)
const maxScan = 64 << 10

// Secondary-limit documentation URL suffixes, current and older.
var secondaryDocSuffixes = []string{
	"#about-secondary-rate-limits",
	"#secondary-rate-limits",
	"#abuse-rate-limits",
}

// reRateExceeded matches GitHub's primary-limit texts: "API rate limit
// exceeded for …", "API rate limit already exceeded for …".
var reRateExceeded = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)rate limit (?:already )?exceeded`) })

// gqlError is one object of a GraphQL errors[] array.
type gqlError struct {
	typ, code, message string
}

// evidence is everything one response or one gh invocation said, with the
// wrappers removed.
type evidence struct {
	status int         // HTTP status; 0 when unknown
	header http.Header // response headers; nil when unknown
	rate   rateHeaders
	// messages are REST messages and unwrapped gh texts.
	messages []string
	docURLs  []string
	// gqlErrors are the objects of a body's errors[] array.
	gqlErrors []gqlError
	// graphql: the request was a GraphQL one (errors[] in the body, a
	// "GraphQL:" text, or a /graphql URL).
	graphql bool
	// path is the request URL's path, "" when unknown.
	path string
}

// addBody adds what a response body says: a JSON object's message,
// documentation_url and errors[]. With rawText, a body that is not a JSON
// object counts as one message (its first maxScan bytes).
func (e *evidence) addBody(body []byte, rawText bool) {
	trimmed := llm.TrimBody(body)
	if len(trimmed) == 0 {
		return
	}
	var obj map[string]json.RawMessage
	if trimmed[0] != '{' || len(trimmed) > llm.MaxJSONBody || json.Unmarshal(trimmed, &obj) != nil {
		if rawText {
			e.messages = append(e.messages, string(head(trimmed, maxScan)))
		}
		return
	}
	if m := llm.String(obj["message"]); m != "" {
		e.messages = append(e.messages, m)
	}
	if u := llm.String(obj["documentation_url"]); u != "" {
		e.docURLs = append(e.docURLs, u)
	}
	raw, ok := obj["errors"]
	if !ok {
		return
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return
	}
	for _, item := range list {
		var fields map[string]json.RawMessage
		if json.Unmarshal(item, &fields) != nil {
			if s := llm.String(item); s != "" {
				e.messages = append(e.messages, s)
			}
			continue
		}
		// REST validation errors also come as errors[] objects, but with
		// "resource" and "field"; GraphQL ones have "message" and usually
		// "type" or "path".
		if _, rest := fields["resource"]; rest {
			continue
		}
		e.graphql = true
		e.gqlErrors = append(e.gqlErrors, gqlError{
			typ:     llm.String(fields["type"]),
			code:    llm.String(fields["code"]),
			message: llm.String(fields["message"]),
		})
	}
}

// secondary reports whether the evidence names a secondary limit, and how.
// With gqlOnly, only GraphQL error messages count (a 2xx body's top-level
// "message" is content, e.g. a commit message, not an error).
func (e *evidence) secondary(gqlOnly bool) (string, bool) {
	for _, g := range e.gqlErrors {
		if why, ok := secondaryText(g.message); ok {
			return "GraphQL error " + why, true
		}
	}
	if gqlOnly {
		return "", false
	}
	for _, m := range e.messages {
		if why, ok := secondaryText(m); ok {
			return why, true
		}
	}
	for _, u := range e.docURLs {
		u = strings.TrimSpace(u)
		for _, sfx := range secondaryDocSuffixes {
			if strings.HasSuffix(u, sfx) {
				return "secondary rate limit documentation_url " + sfx, true
			}
		}
	}
	return "", false
}

// secondaryText reports whether s names a secondary limit.
func secondaryText(s string) (string, bool) {
	l := strings.ToLower(s)
	switch {
	case strings.Contains(l, "secondary rate limit"):
		return "secondary rate limit message", true
	case strings.Contains(l, "abuse detection"):
		return "abuse detection message", true
	}
	return "", false
}

// graphqlRate reports whether a GraphQL errors[] entry is a primary
// rate-limit error: type RATE_LIMITED or RATE_LIMIT, code
// graphql_rate_limit, or a "rate limit (already) exceeded" message.
func (e *evidence) graphqlRate() (string, bool) {
	for _, g := range e.gqlErrors {
		switch t := strings.ToUpper(strings.TrimSpace(g.typ)); t {
		case "RATE_LIMITED", "RATE_LIMIT":
			return "GraphQL error type " + t, true
		}
		if strings.EqualFold(strings.TrimSpace(g.code), "graphql_rate_limit") {
			return "GraphQL error code graphql_rate_limit", true
		}
	}
	for _, g := range e.gqlErrors {
		if reRateExceeded().MatchString(g.message) {
			return "GraphQL error message says rate limit exceeded", true
		}
	}
	return "", false
}

// primaryMessage reports whether a message says the primary limit is
// exceeded ("API rate limit exceeded", "API rate limit already exceeded").
func (e *evidence) primaryMessage() (string, bool) {
	for _, m := range e.messages {
		if reRateExceeded().MatchString(m) && !strings.Contains(strings.ToLower(m), "secondary") {
			return `"rate limit exceeded" message`, true
		}
	}
	return "", false
}

// firstMessage returns the first non-empty message, for a Reason.
func (e *evidence) firstMessage() string {
	for _, g := range e.gqlErrors {
		if g.message != "" {
			return g.message
		}
	}
	for _, m := range e.messages {
		if strings.TrimSpace(m) != "" {
			return m
		}
	}
	return ""
}

// hasMessage reports whether any message contains sub, case-insensitively.
func (e *evidence) hasMessage(sub string) bool {
	sub = strings.ToLower(sub)
	for _, m := range e.messages {
		if strings.Contains(strings.ToLower(m), sub) {
			return true
		}
	}
	for _, g := range e.gqlErrors {
		if strings.Contains(strings.ToLower(g.message), sub) {
			return true
		}
	}
	return false
}

// outcome starts an Outcome of class c with the counts and resource of the
// headers and their observations.
func (e *evidence) outcome(c provider.Class, reason string, now time.Time) provider.Outcome {
	out := provider.Unknown(Provider, c, reason)
	out.Resource = e.rate.resource
	out.Remaining = e.rate.remaining
	out.Limit = e.rate.limit
	if s, ok := e.rate.observation(now); ok {
		out.Observations = []quota.State{s}
	}
	return out
}

// quotaResource is the resource a primary exhaustion without a usable
// x-ratelimit-resource header concerns.
func (e *evidence) quotaResource() string {
	switch {
	case e.rate.resource != "":
		return e.rate.resource
	case e.graphql:
		return "graphql"
	}
	return resourceForPath(e.path)
}

// resourceForPath guesses a REST resource from a request path: code_search
// for /search/code, search for other /search/ paths, else core.
func resourceForPath(p string) string {
	p = strings.ToLower(p)
	switch {
	case strings.HasSuffix(p, "/search/code") || strings.Contains(p, "/search/code/"):
		return "code_search"
	case strings.Contains(p, "/search/"):
		return "search"
	}
	return "core"
}

// exhausted makes out a primary exhaustion of resource. The reset is the
// header's, and only when the header says nothing remains; else unknown.
func (e *evidence) exhausted(out provider.Outcome, resource, reason string, now time.Time) provider.Outcome {
	out.Class = provider.ClassQuota
	out.Resource = resource
	out.Reason = reason
	if e.rate.exhausted() {
		out.ResetAt = e.rate.resetAt(now)
	}
	if out.ResetAt.IsZero() {
		out.Reason += ", reset unknown"
	}
	return out
}

// throttle makes out a secondary limit. The wait is the retry-after when
// stated; else, when nothing remains, until the reset; else unknown (-1). A
// stated wait over quota.ThrottleQuotaCutoff makes it a quota instead.
func (e *evidence) throttle(out provider.Outcome, reason string, now time.Time) provider.Outcome {
	out.Class = provider.ClassSecondary
	if d, ok := e.retryAfter(now); ok {
		out.RetryAfter = d
		reason += fmt.Sprintf("; retry-after %s", d.Round(time.Second))
	} else if e.rate.exhausted() && e.rate.reset != 0 {
		out.ResetAt = e.rate.resetAt(now)
		out.RetryAfter = max(out.ResetAt.Sub(now), 0)
		reason += "; x-ratelimit-remaining: 0, waits until the reset"
	} else {
		reason += "; no retry-after"
	}
	if out.RetryAfter > quota.ThrottleQuotaCutoff {
		out.Class = provider.ClassQuota
		if out.ResetAt.IsZero() {
			out.ResetAt = now.Add(out.RetryAfter)
		}
		reason += fmt.Sprintf(" (over %s: quota)", quota.ThrottleQuotaCutoff)
	}
	out.Reason = reason
	return out
}

// retryAfter returns the Retry-After the response stated.
func (e *evidence) retryAfter(now time.Time) (time.Duration, bool) {
	if e.header == nil {
		return 0, false
	}
	v, ok := headerValue(e.header, "Retry-After")
	if !ok {
		return 0, false
	}
	return resetparse.RetryAfter(v, e.rate.date, now)
}

// limited classifies a 403 or 429 (or a gh failure whose status is unknown
// but whose text names a limit): secondary first, then primary, then a
// bare 429 as a throttle; anything else is permanent.
func (e *evidence) limited(out provider.Outcome, label string, now time.Time) provider.Outcome {
	if why, ok := e.secondary(false); ok {
		return e.throttle(out, label+why, now)
	}
	if (e.status == http.StatusForbidden || e.status == http.StatusTooManyRequests) && e.rate.exhausted() {
		res := e.quotaResource()
		return e.exhausted(out, res, fmt.Sprintf("%d with x-ratelimit-remaining: 0 (resource %s)", e.status, res), now)
	}
	if why, ok := e.graphqlRate(); ok {
		return e.exhausted(out, "graphql", label+why, now)
	}
	if why, ok := e.primaryMessage(); ok {
		res := e.quotaResource()
		return e.exhausted(out, res, fmt.Sprintf("%s%s (resource %s)", label, why, res), now)
	}
	if e.status == http.StatusTooManyRequests {
		return e.throttle(out, "429 without a rate-limit message", now)
	}
	return out
}

// permanentReason names the evidence of a rejection a wait cannot fix.
func (e *evidence) permanentReason(status int) string {
	switch {
	case e.header != nil && e.header.Get("X-Github-Sso") != "":
		return fmt.Sprintf("%d with X-GitHub-SSO (SAML enforcement)", status)
	case e.hasMessage("Resource not accessible by integration"):
		return fmt.Sprintf("%d Resource not accessible by integration (permissions)", status)
	}
	if m := e.firstMessage(); m != "" {
		return fmt.Sprintf("%d: %s", status, provider.CleanText(m, llm.MaxReasonMessage))
	}
	return fmt.Sprintf("HTTP %d", status)
}

// ClassifyHTTP classifies one GitHub REST or GraphQL response, received at
// now, whose body (already read; may be nil) is body. It never panics.
//
//   - 2xx is ok, unless a GraphQL errors[] entry names a secondary limit
//     (secondary) or is a rate-limit error: type RATE_LIMITED or
//     RATE_LIMIT, code graphql_rate_limit, or a "rate limit (already)
//     exceeded" message (quota, resource graphql). 304 is ok too.
//   - 401 is auth.
//   - 403 and 429: a secondary limit (message names "secondary rate limit"
//     or "abuse detection", or documentation_url ends in one of the
//     secondary anchors) first; its RetryAfter is the retry-after (seconds
//     from now, or an HTTP-date relative to the response's Date), else the
//     wait until the reset when remaining is 0, else -1. A stated wait over
//     quota.ThrottleQuotaCutoff makes it a quota with ResetAt = now + wait.
//     Then primary exhaustion: x-ratelimit-remaining: 0, a GraphQL
//     rate-limit error, or an "API rate limit (already) exceeded" message;
//     ResetAt is the header's reset (zero when not given). A 429 with none
//     of these is secondary; any other 403 (permissions, SAML, scopes,
//     archived) is permanent.
//   - 5xx except 501 is transient; 501, other 4xx, and 1xx/3xx other than
//     304 are permanent.
//
// Resource, Remaining and Limit come from the x-ratelimit-* headers when
// present (Unknown otherwise); ResetAt is set only when it is the wait the
// class implies, and is on this machine's clock. A response that spent the
// last unit (remaining 0 on a 2xx or 404) keeps its own class. Observations
// are those of [Observations] for the headers.
func ClassifyHTTP(resp *http.Response, body []byte, now time.Time) provider.Outcome {
	return provider.CleanReason(classifyHTTP(resp, body, now))
}

func classifyHTTP(resp *http.Response, body []byte, now time.Time) provider.Outcome {
	if resp == nil {
		return provider.Unknown(Provider, provider.ClassPermanent, "no HTTP response")
	}
	e := &evidence{status: resp.StatusCode, header: resp.Header, rate: parseRateHeaders(resp.Header)}
	e.addBody(body, true)
	code := resp.StatusCode
	out := e.outcome(provider.ClassPermanent, "", now)
	switch {
	case code >= 200 && code < 300 || code == http.StatusNotModified:
		if why, ok := e.secondary(true); ok {
			return e.throttle(out, fmt.Sprintf("%d with %s", code, why), now)
		}
		if why, ok := e.graphqlRate(); ok {
			return e.exhausted(out, "graphql", fmt.Sprintf("%d with %s", code, why), now)
		}
		out.Class = provider.ClassOK
		out.Reason = fmt.Sprintf("HTTP %d", code)
		if e.rate.exhausted() {
			out.Reason += " (spent the last unit: x-ratelimit-remaining: 0)"
		}
	case code == http.StatusUnauthorized:
		out.Class = provider.ClassAuth
		out.Reason = e.permanentReason(code)
	case code == http.StatusForbidden || code == http.StatusTooManyRequests:
		out = e.limited(out, fmt.Sprintf("%d with ", code), now)
		if out.Class == provider.ClassPermanent {
			out.Reason = e.permanentReason(code)
		}
	case code >= 500 && code != http.StatusNotImplemented:
		out.Class = provider.ClassTransient
		out.Reason = fmt.Sprintf("HTTP %d (server error)", code)
	default:
		out.Reason = e.permanentReason(code)
	}
	return out
}

// head returns at most the first n bytes of s.
func head[T ~string | ~[]byte](s T, n int) T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// tail returns at most the last n bytes of s.
func tail[T ~string | ~[]byte](s T, n int) T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
