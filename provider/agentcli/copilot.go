package agentcli

import (
	"bytes"
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
)

var (
	// reCopilotResetDate is the usage dump's "quota reset date utc:
	// 2026-04-01T00:00:00.000Z".
	reCopilotResetDate = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)quota reset date(?: utc)?:[ \t]*"?([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(?:Z|[+-][0-9]{2}:[0-9]{2}))`)
	})
	// reRateLimitText is a generic rate-limit text.
	reRateLimitText = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\brate[ _-]?limit(?:ed|s)?\b(?: (?:already )?(?:exceeded|reached|hit))?|\btoo many requests\b`)
	})
)

// copilotAuthTexts are texts for missing or refused credentials (lower
// case).
var copilotAuthTexts = []string{
	"no authentication information found",
	"not authenticated",
	"authentication failed",
	"401 unauthorized",
	"bad credentials",
	"please run /login",
}

// ClassifyCopilot classifies a finished GitHub Copilot CLI run (`copilot
// -p …`) from its exit code and output, at now. loc is unused: Copilot
// prints no local times. It never panics and reads the last 64 KiB of each
// stream.
//
// Exit 0 is ok whatever was printed (including the premium-allowance
// notice "You have exceeded your premium request allowance. We have
// automatically switched you to …", which is a fallback, not a failure).
// Otherwise, in order:
//
//   - a session.error event of its JSON output (`--output-format json`,
//     {"type":"session.error","data":{"errorType","message","statusCode"}},
//     the last one first): errorType "quota" (or statusCode 402) is the
//     premium-request quota as below; "rate_limit" (or 429) a throttle as
//     below, secondary unless its wait is long; an authentication
//     errorType (or 401) auth;
//   - an error body {"error":{"message":"You have no quota","code":
//     "quota_exceeded"}}, "You have no quota" (as in "✗ 402 You have no
//     quota (Request ID: …)") or "Quota exceeded. Upgrade to increase your
//     limit": quota, resource "premium-requests". Copilot sends no reset;
//     the quota resets monthly, and ResetAt is the usage dump's "quota
//     reset date utc: …" when printed, else unknown;
//   - {"code":"rate_limited"} ("Sorry, you have exceeded your Copilot
//     token usage", resource "tokens"), "Sorry, you've hit a rate limit that
//     restricts the number of Copilot model requests … Please try again in
//     2 hours." and "You've hit your global rate limit. Please upgrade your
//     plan or wait 6 seconds for your limit to reset." (resource
//     "requests"): a throttle with the wait the text states, quota when it
//     is over quota.ThrottleQuotaCutoff ("in 2 hours", "58 hours"),
//     secondary otherwise, RetryAfter -1 when none is stated;
//   - auth texts: auth; network failures: transient; a generic rate-limit
//     text or 429: secondary.
//
// Anything else is permanent.
func ClassifyCopilot(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	return provider.CleanReason(copilot(newInput(exitCode, stdout, stderr), now, loc).out)
}

func copilot(in *input, now time.Time, _ *time.Location) verdict {
	v := copilotClassify(in, now)
	if v.seen == seenNone && in.exit != 0 && (copilotMark(in.stderr) || copilotMark(in.stdout)) {
		v.seen = seenText
	}
	if _, format := copilotEvents(in); format {
		v.seen = seenFormat
	}
	return v
}

// copilotErr is a session.error event of Copilot CLI's JSON output
// (`--output-format json`): {"type":"session.error","data":{"errorType":
// "quota","message":…,"statusCode":402}}.
type copilotErr struct {
	typ, message string
	status       int
}

// copilotEventPrefixes are the namespaces of Copilot CLI's event types
// ("session.start", "assistant.message", …).
var copilotEventPrefixes = []string{"session.", "assistant.", "tool.", "user."}

// copilotEvents returns the session.error events of stdout's JSON lines,
// and whether any line was one of Copilot CLI's events (a namespaced
// type with a data object).
func copilotEvents(in *input) (errs []copilotErr, format bool) {
	for _, l := range in.lines() {
		if l.obj == nil {
			continue
		}
		typ := str(l.obj["type"])
		data := obj(l.obj["data"])
		if data == nil || !hasPrefix(typ, copilotEventPrefixes) {
			continue
		}
		format = true
		if typ == "session.error" {
			errs = append(errs, copilotErr{
				typ:     strings.ToLower(strings.TrimSpace(str(data["errorType"]))),
				message: str(data["message"]),
				status:  status(data["statusCode"]),
			})
		}
	}
	return errs, format
}

// hasPrefix reports whether s starts with one of prefixes.
func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// copilotEventVerdict classifies a session.error event: errorType quota
// (or status 402) is the premium-request quota, rate_limit (or 429) a
// throttle, an authentication error (or 401) auth.
func copilotEventVerdict(e copilotErr, all string, now time.Time) (verdict, bool) {
	label := "session.error"
	if e.typ != "" {
		label += " " + e.typ
	}
	if e.status != 0 {
		label += fmt.Sprintf(" (HTTP %d)", e.status)
	}
	label = withMsg(label, e.message)
	switch {
	case e.typ == "quota" || e.status == http.StatusPaymentRequired:
		return verdict{out: copilotQuota(label, all, now), ev: evStructured, seen: seenFormat}, true
	case e.typ == "rate_limit" || e.status == http.StatusTooManyRequests:
		res := ResourceRequests
		if strings.Contains(strings.ToLower(e.message), "token usage") {
			res = ResourceTokens
		}
		return verdict{out: copilotThrottle(label, res, e.message+"\n"+all, now), ev: evStructured, seen: seenFormat}, true
	case strings.Contains(e.typ, "auth") || e.status == http.StatusUnauthorized:
		return verdict{out: provider.Unknown(ProviderCopilot, provider.ClassAuth, label), ev: evStructured, seen: seenFormat}, true
	}
	return verdict{}, false
}

// copilotMark reports whether a line starts with the "✗ " Copilot CLI
// prints before an error.
func copilotMark(b []byte) bool {
	return bytes.HasPrefix(b, []byte("✗ ")) || bytes.Contains(b, []byte("\n✗ "))
}

func copilotClassify(in *input, now time.Time) verdict {
	p, exitCode := ProviderCopilot, in.exit
	if exitCode == 0 {
		return verdict{out: provider.Unknown(p, provider.ClassOK, "exit 0")}
	}
	texts := []string{string(in.stdout), string(in.stderr)}
	all := strings.Join(texts, "\n")
	lower, network := in.all()

	// Structured: the session.error events of its JSON output, the last
	// first, then the error bodies Copilot relays.
	errs, _ := copilotEvents(in)
	for i := len(errs) - 1; i >= 0; i-- {
		if v, ok := copilotEventVerdict(errs[i], all, now); ok {
			return v
		}
	}
	if strings.Contains(all, "quota_exceeded") || strings.Contains(all, "rate_limited") {
		for _, t := range texts {
			for _, o := range embeddedObjects(t) {
				if v, ok := copilotBody(o, all, now); ok {
					return v
				}
			}
		}
	}
	switch {
	case strings.Contains(lower, "you have no quota"):
		return verdict{out: copilotQuota(`text "You have no quota"`, all, now), ev: evText, seen: seenText}
	case strings.Contains(lower, "quota exceeded. upgrade to increase your limit"):
		return verdict{out: copilotQuota(`text "Quota exceeded. Upgrade to increase your limit"`, all, now), ev: evText, seen: seenText}
	case strings.Contains(lower, "exceeded your copilot token usage"):
		return verdict{out: copilotThrottle(`text "exceeded your Copilot token usage"`, ResourceTokens, all, now), ev: evText, seen: seenText}
	case strings.Contains(lower, "you've hit a rate limit that restricts the number of copilot model requests") ||
		strings.Contains(lower, "you’ve hit a rate limit that restricts the number of copilot model requests"):
		return verdict{out: copilotThrottle(`text "you've hit a rate limit that restricts the number of Copilot model requests"`, ResourceRequests, all, now), ev: evText, seen: seenText}
	case strings.Contains(lower, "hit your global rate limit"):
		return verdict{out: copilotThrottle(`text "You've hit your global rate limit"`, ResourceRequests, all, now), ev: evText, seen: seenText}
	}
	for _, t := range copilotAuthTexts {
		if strings.Contains(lower, t) {
			return verdict{out: provider.Unknown(p, provider.ClassAuth, fmt.Sprintf("text %q", t)), ev: evGeneric}
		}
	}
	if t := network; t != "" {
		return verdict{out: provider.Unknown(p, provider.ClassTransient, fmt.Sprintf("text %q (network or server)", t)), ev: evGeneric}
	}
	if m := findNear(reRateLimitText(), all, lower, []string{"rate", "too many requests"}, 8, 48); m != nil {
		return verdict{out: copilotThrottle(fmt.Sprintf("text %q", excerpt(all[m[0]:m[1]])), "", all, now), ev: evGeneric}
	}
	if m := status429(all, lower); m != "" {
		return verdict{out: llm.NoWait(provider.Unknown(p, provider.ClassSecondary, fmt.Sprintf("text %q", excerpt(m)))), ev: evGeneric}
	}
	return verdict{out: provider.Unknown(p, provider.ClassPermanent, fmt.Sprintf("exit %d", exitCode))}
}

// copilotBody classifies an error body: {"error":{"message","code"}} or
// {"message","code"}.
func copilotBody(o map[string]json.RawMessage, all string, now time.Time) (verdict, bool) {
	e := obj(o["error"])
	if e == nil {
		e = o
	}
	switch code := str(e["code"]); code {
	case "quota_exceeded":
		return verdict{out: copilotQuota(withMsg("quota_exceeded", str(e["message"])), all, now), ev: evStructured, seen: seenText}, true
	case "rate_limited":
		msg := str(e["message"])
		res := ResourceRequests
		if strings.Contains(strings.ToLower(msg), "token usage") {
			res = ResourceTokens
		}
		return verdict{out: copilotThrottle(withMsg("rate_limited", msg), res, msg+"\n"+all, now), ev: evStructured, seen: seenText}, true
	}
	return verdict{}, false
}

// withMsg appends an excerpt of a message to label.
func withMsg(label, msg string) string {
	if m := strings.TrimSpace(msg); m != "" {
		return label + ": " + excerpt(m)
	}
	return label
}

// copilotQuota is the premium-request quota, with the reset the usage
// dump states.
func copilotQuota(reason, all string, now time.Time) provider.Outcome {
	var reset time.Time
	if m := submatch(reCopilotResetDate(), all, strings.ToLower(all), "quota reset date"); m != nil {
		if t, ok := resetparse.RFC3339(m[1]); ok {
			reset = t
			reason += "; quota reset date utc"
		}
	}
	return quotaOut(ProviderCopilot, ResourcePremiumRequests, reason, reset, now)
}

// copilotThrottle is a rate limit with the wait text states.
func copilotThrottle(reason, resource, text string, now time.Time) provider.Outcome {
	out := provider.Unknown(ProviderCopilot, provider.ClassSecondary, reason)
	out.Resource = resource
	if d, ok := resetparse.MessageDelay(text); ok {
		return llm.AddRejected(llm.Wait(out, d, "the text says wait", now), 0, time.Time{}, now)
	}
	return llm.NoWait(out)
}
