package agentcli

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/openai"
)

// reKimiError is how Kimi prints a provider error: the openai SDK's
// "Error code: 429 - {…}", after "LLM provider error: " in the shell.
var reKimiError = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:LLM provider error:[ \t]*)?Error code: (\d{3})(?:[ \t]*-[ \t]*)?`)
})

// kimiTexts are Kimi's texts without a status, in the order tried (lower
// case).
var kimiTexts = []struct {
	text  string
	class provider.Class
}{
	{"membership expired", provider.ClassQuota},
	{"authorization failed", provider.ClassAuth},
	// Logged out: kimi-cli prints "LLM not set" (with "send /login" or
	// "Run `kimi login`" in newer releases) when no account is configured.
	{"llm not set", provider.ClassAuth},
	{"engine is currently overloaded", provider.ClassTransient},
	{"max steps reached", provider.ClassPermanent},
	{"interrupted by user", provider.ClassPermanent},
}

// kimiBalanceTexts are Moonshot's texts for an empty balance or a
// suspended account (lower case): quota, resource "billing".
var kimiBalanceTexts = []string{
	"insufficient balance",
	"suspended due to insufficient balance",
	"account balance",
	"balance is insufficient",
	"余额不足",
	"账户余额",
	"欠费",
}

// kimiBalance returns the balance text lower holds, "" when none.
func kimiBalance(lower string) string {
	for _, t := range kimiBalanceTexts {
		if strings.Contains(lower, t) {
			return t
		}
	}
	return ""
}

// ClassifyKimi classifies a finished Kimi Code CLI run (`kimi --print …`)
// from its exit code and output, at now. loc is unused: Kimi prints no
// local times. It never panics and reads the last 64 KiB of each stream.
//
// Exit 0 is ok whatever was printed. Otherwise Kimi's provider error,
// "Error code: <status> - <Python dict repr>" (after "LLM provider error: "
// in the shell; lines wrapped by the terminal are joined), is parsed (single
// or double quotes, True/False/None) and classified as the openai package
// classifies that response from the OpenAI-compatible Moonshot API:
//
//   - 429 rate_limit_reached_error: a throttle; "please try again after 1
//     seconds" (the RPM limit) is secondary with that wait; the TPD limit
//     ("request reached organization TPD rate limit, current: …, limit:
//     …") is quota, resource "tokens-per-day", reset unknown; "We're
//     receiving too many requests" is secondary, RetryAfter -1;
//   - 429 engine_overloaded_error: transient (overload, not a quota); on
//     the coding plan a rate_limit_error with that text is still a limit;
//   - 401: auth; 402 ("Membership expired, please renew your plan"): quota,
//     resource "billing", reset unknown (an account action); 403 with a
//     quota text: quota; 5xx: transient; others permanent.
//
// A balance text, in the error or without one ("insufficient balance",
// "Your account … is suspended due to insufficient balance", "account
// balance", "余额不足"), is quota, resource "billing", reset unknown,
// whatever the status. A dict that does not parse is classified from its
// text with the status. Without a provider error: "Membership expired" is
// quota, "Authorization failed" and "LLM not set" (no account logged in)
// auth, "The engine is currently overloaded" transient, network
// failures ("Connection error.", "Request timed out.") transient. Exit 75
// (EX_TEMPFAIL, which Kimi uses for 429, 5xx, connection and timeout
// failures) is weak evidence: with no text saying more it is transient.
// Anything else is permanent.
func ClassifyKimi(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	return provider.CleanReason(kimi(newInput(exitCode, stdout, stderr), now, loc).out)
}

func kimi(in *input, now time.Time, _ *time.Location) verdict {
	p, exitCode := ProviderKimi, in.exit
	if exitCode == 0 {
		return verdict{out: provider.Unknown(p, provider.ClassOK, "exit 0")}
	}
	for _, b := range [][]byte{in.stdout, in.stderr} {
		t := string(b)
		if !strings.Contains(t, "Error code: ") {
			continue
		}
		ix := reKimiError().FindAllStringSubmatchIndex(t, -1)
		if len(ix) == 0 {
			continue
		}
		m := ix[len(ix)-1] // the last error printed is the one that ended the run
		code, _ := strconv.Atoi(t[m[2]:m[3]])
		rest := t[m[1]:]
		label := fmt.Sprintf("Error code: %d", code)
		// The terminal may have wrapped the dict: join its lines.
		body, _, err := pyLiteral(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(rest))
		ev := evStructured
		if err != nil {
			// Not a dict: the rest of the line is the message.
			if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
				rest = rest[:nl]
			}
			body = []byte(strings.TrimSpace(rest))
			ev = evText
			if strings.Contains(rest, "engine_overloaded_error") {
				return verdict{out: provider.Unknown(p, provider.ClassTransient, label+" engine_overloaded_error (overload, not a quota)"), ev: ev, seen: seenText}
			}
		} else {
			label += " with error dict"
		}
		if t := kimiBalance(asciiLower(rest)); t != "" {
			return verdict{out: quotaOut(p, ResourceBilling, fmt.Sprintf("%s: balance text %q (billing)", label, t), time.Time{}, now), ev: ev, seen: seenText}
		}
		o := openai.ClassifyHTTP(&http.Response{StatusCode: code, Header: http.Header{}}, body, now)
		o.Observations = nil
		if o.Class == provider.ClassQuota && !o.ResetAt.IsZero() {
			o = llm.AddRejected(o, 0, time.Time{}, now)
		}
		return verdict{out: relabel(o, p, label+":"), ev: ev, seen: seenText}
	}
	lower, network := in.all()
	if t := kimiBalance(lower); t != "" {
		return verdict{out: quotaOut(p, ResourceBilling, fmt.Sprintf("balance text %q (billing)", t), time.Time{}, now), ev: evText, seen: seenText}
	}
	for _, kt := range kimiTexts {
		if !strings.Contains(lower, kt.text) {
			continue
		}
		reason := fmt.Sprintf("text %q", kt.text)
		if kt.class == provider.ClassQuota {
			return verdict{out: quotaOut(p, ResourceBilling, reason, time.Time{}, now), ev: evText, seen: seenText}
		}
		return verdict{out: provider.Unknown(p, kt.class, reason), ev: evText, seen: seenText}
	}
	if t := network; t != "" {
		return verdict{out: provider.Unknown(p, provider.ClassTransient, fmt.Sprintf("text %q (network or server)", t)), ev: evGeneric}
	}
	if exitCode == exitTempFail {
		return verdict{out: provider.Unknown(p, provider.ClassTransient, "exit 75 (Kimi's retryable failure: 429, 5xx, connection, timeout) and no text saying which")}
	}
	return verdict{out: provider.Unknown(p, provider.ClassPermanent, fmt.Sprintf("exit %d", exitCode))}
}
