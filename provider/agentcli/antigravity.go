package agentcli

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/llm"
)

// reAgyResets is the wait Antigravity states after a quota: "Resets in
// 167h54m10s." (a Go duration of hours, minutes and seconds).
var reAgyResets = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bresets in[ \t]+((?:[0-9]{1,5}h)?(?:[0-9]{1,3}m)?(?:[0-9]{1,3}(?:\.[0-9]{1,9})?s)?)`)
})

// agyQuotaTexts are Antigravity's own quota texts (lower case).
var agyQuotaTexts = []string{
	"individual quota reached",
	"quota reached",
}

// agyGoogleQuotaTexts are the Google API's exhaustion texts Antigravity
// relays (lower case), which Gemini CLI prints too.
var agyGoogleQuotaTexts = []string{
	"resource_exhausted",
	"resource has been exhausted",
	"quota exceeded",
	"exceeded your current quota",
}

// agyAuthTexts are Antigravity's texts for missing or refused
// credentials (lower case).
var agyAuthTexts = []string{
	"you are not logged into antigravity",
	"no auth token found",
	"invalid authentication credentials",
	"unauthenticated",
	"please log in",
	"not logged in",
}

// agyTransientTexts are Antigravity's texts for an overload a later
// attempt may not meet (lower case).
var agyTransientTexts = []string{
	"unavailable (code 503)",
	"the model is overloaded",
}

// maxAgyWait bounds the "Resets in" wait read: about 90 days.
const maxAgyWait = 90 * 24 * time.Hour

// ClassifyAntigravity classifies a finished Antigravity CLI run (`agy -p
// …`, any --output-format) from its exit code and output, at now. loc is
// unused: Antigravity states its reset as a wait. It never panics and reads
// the last 64 KiB of each stream.
//
// Exit 0 is ok whatever was printed. Otherwise, in order:
//
//   - "Individual quota reached. … Resets in 167h54m10s." (with
//     "RESOURCE_EXHAUSTED: " before it, or "Contact your administrator to
//     enable overages" / "Please upgrade your subscription" after it):
//     quota, ResetAt now + the wait "Resets in" states, else unknown;
//   - RESOURCE_EXHAUSTED or a quota text ("Resource has been exhausted
//     (e.g. check quota).", "Quota exceeded"): quota, the reset as above;
//   - its auth texts ("You are not logged into Antigravity.", "No auth
//     token found", UNAUTHENTICATED "Request had invalid authentication
//     credentials"): auth;
//   - an overload ("UNAVAILABLE (code 503)", "The model is overloaded")
//     and network failures: transient.
//
// Anything else is permanent. Its output formats are documented only in
// part (docs/agents.md): texts are read anywhere in either stream, the
// events of its json and stream-json output (which carry
// conversation_id) included.
func ClassifyAntigravity(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	return provider.CleanReason(antigravity(newInput(exitCode, stdout, stderr), now, loc).out)
}

func antigravity(in *input, now time.Time, _ *time.Location) verdict {
	p := ProviderAntigravity
	seen := seenNone
	for _, l := range in.lines() {
		if l.obj != nil && (l.obj["conversation_id"] != nil || l.obj["conversationId"] != nil) {
			seen = seenFormat
			break
		}
	}
	v := func(out provider.Outcome, ev evidence, s recognition) verdict {
		return verdict{out: out, ev: ev, seen: max(seen, s)}
	}
	if in.exit == 0 {
		return v(provider.Unknown(p, provider.ClassOK, "exit 0"), evNone, seenNone)
	}
	all := string(in.stdout) + "\n" + string(in.stderr)
	lower, network := in.all()
	for _, t := range agyQuotaTexts {
		if strings.Contains(lower, t) {
			reset, why := agyReset(all, lower, now)
			return v(quotaOut(p, "", fmt.Sprintf("text %q%s", t, why), reset, now), evText, seenText)
		}
	}
	for _, t := range agyGoogleQuotaTexts {
		if strings.Contains(lower, t) {
			reset, why := agyReset(all, lower, now)
			return v(quotaOut(p, "", fmt.Sprintf("text %q%s", t, why), reset, now), evGeneric, seenNone)
		}
	}
	for i, t := range agyAuthTexts {
		if strings.Contains(lower, t) {
			ev, s := evGeneric, seenNone
			if i == 0 {
				ev, s = evText, seenText // names Antigravity
			}
			return v(provider.Unknown(p, provider.ClassAuth, fmt.Sprintf("text %q", t)), ev, s)
		}
	}
	for _, t := range agyTransientTexts {
		if strings.Contains(lower, t) {
			return v(provider.Unknown(p, provider.ClassTransient, fmt.Sprintf("text %q (overload)", t)), evGeneric, seenNone)
		}
	}
	if network != "" {
		return v(provider.Unknown(p, provider.ClassTransient, fmt.Sprintf("text %q (network or server)", network)), evGeneric, seenNone)
	}
	return v(provider.Unknown(p, provider.ClassPermanent, fmt.Sprintf("exit %d", in.exit)), evNone, seenNone)
}

// agyReset is now + the wait "Resets in …" states, with a Reason suffix;
// zero when none is stated.
func agyReset(all, lower string, now time.Time) (time.Time, string) {
	m := findNear(reAgyResets(), all, lower, []string{"resets in"}, 0, 40)
	if m == nil || m[3] <= m[2] {
		return time.Time{}, ""
	}
	d, err := time.ParseDuration(all[m[2]:m[3]])
	if err != nil || d <= 0 || d > maxAgyWait {
		return time.Time{}, ""
	}
	return now.Add(d), "; resets in " + llm.FormatWait(d)
}
