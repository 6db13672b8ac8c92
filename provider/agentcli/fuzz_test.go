package agentcli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
)

// fuzzZones are the zones a fuzzer reads zoneless times in; index 0 is
// nil (now's location, UTC).
var fuzzZones = []string{"", "UTC", "America/New_York", "Asia/Tokyo", "Asia/Kathmandu", "America/St_Johns"}

func fuzzLoc(t *testing.T, i uint8) (arg, effective *time.Location) {
	name := fuzzZones[int(i)%len(fuzzZones)]
	if name == "" {
		return nil, now.Location()
	}
	z := zone(t, name)
	return z, z
}

// fuzzSeeds are outputs of every CLI, from the table tests.
func fuzzSeeds() []struct {
	exit           int
	stdout, stderr string
} {
	reset := now.Add(4 * time.Hour).Unix()
	s := []struct {
		exit           int
		stdout, stderr string
	}{
		{1, lines(ccInit(), ccRate("rejected", reset, "five_hour", nil), ccAssistant(ccRome, "rate_limit"), ccResult(true, "success", ccRome, 429)), ""},
		{1, lines(ccRate("allowed", reset, "five_hour", map[string]any{"overageStatus": "rejected", "utilization": 0.4}), ccResult(true, "success", ccAccount, 429)), ""},
		{1, lines(ccInit(), ccRetry(1, 429, "rate_limit"), ccResult(true, "error_max_turns", "", 0)), ""},
		{1, "[" + ccInit() + "," + ccResult(true, "success", ccSeoul, 429) + "]", ""},
		{0, lines(ccInit(), ccRate("allowed_warning", reset, "seven_day", map[string]any{"utilization": 0.9})), ""},
		{1, ccPipe + "\n", ""},
		{1, ccWarsaw + "\n", cc5Hour + "\n"},
		{1, ccRecife + "\n" + ccTokyo + "\n" + ccLogin, ""},
		{1, ccWeekly + "\n", "You've hit your limit · resets Jan 18, 11:30am (Asia/Calcutta)"},
		{1, cxFailed(cxPlus), ""},
		{1, cxFailed(cxTeam), ""},
		{1, cxFailed(cxDays), cxQuota},
		{1, "", `{"error":{"type":"usage_limit_reached","plan_type":"plus","resets_at":` + epoch(now.Add(time.Hour)) + `}}`},
		{1, "", `{"error":{"type":"usage_limit_reached","resets_in_seconds":5400}}`},
		{1, `{"error":{"message":"x","codexErrorInfo":{"responseTooManyFailedAttempts":{"httpStatusCode":429}}}}`, cxRetry429},
		{1, cxFailed(cxDemand), "unexpected status 429 Too Many Requests: {\"error\":{\"type\":\"rate_limit_exceeded\",\"message\":\"Please try again in 2s\"}}"},
		{1, cpUpgrade + "\n" + cpResetDate, cpNoQuotaBody},
		{1, "", cpRate2h + "\n" + cpGlobal + "\n" + cpTokenBody},
		{75, kmRPM, ""},
		{75, wrap80(kmTPD), kmBusy},
		{1, kmAuth + "\n" + kmExpired, kmOverload},
		{1, gmResult("TerminalQuotaError", gmUsage+" "+gmResets), ""},
		{173, "", gmJSONError("ApiError", googleBody(429, googleBody(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED", map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "26s"}), "Too Many Requests"), 429)},
		{1, "", gmAPIQuota + "\n" + gmWaitTail + "\nAccess resets at 11:30 PM GMT+9."},
		{1, gmResult("RetryableQuotaError", "Quota limit hit. Retrying after 26s."), "Attempt 1 failed with status 429. Retrying with backoff..."},
		{1, "", "gh: API rate limit exceeded for user ID 1234567. (HTTP 403)"},
		{41, "", ""},
		{1, jsonLine(map[string]any{"method": "error", "params": map[string]any{"error": map[string]any{"message": cxTeam, "codexErrorInfo": "rateLimitExceeded"}}}) + "\n", ""},
		{1, lines(cpEventStart, cpEvent("quota", "You have no quota", 402)), cpResetDate},
		{1, lines(cpEventStart, cpEvent("rate_limit", cpGlobal, 429)), ""},
		{75, kmBalance + "\n", ""},
		{1, kmBalanceCN + "\n", "LLM not set"},
		{1, "", agIndividual + "\n"},
		{1, agAdmin + "\n", agLoggedOut},
		{1, lines(`{"type":"init","conversation_id":"c1"}`, `{"type":"result","conversation_id":"c1","status":"error","error":{"message":"Individual quota reached. Resets in 1h0m0s."}}`), agExhausted},
	}
	return s
}

// knownProvider reports whether p is the Outcome.Provider of a classifier
// ClassifyAuto asks (or its own, when none recognized the output).
func knownProvider(p string) bool {
	if p == ProviderGitHub || p == ProviderAuto {
		return true
	}
	for _, c := range classifiers {
		if c.name == p {
			return true
		}
	}
	return false
}

// fuzzClassifier runs one classifier under the "no invented reset"
// oracle.
func fuzzClassifier(f *testing.F, name string, fn Func) {
	for _, s := range fuzzSeeds() {
		f.Add(s.exit, []byte(s.stdout), []byte(s.stderr), uint8(2))
	}
	f.Fuzz(func(t *testing.T, exit int, stdout, stderr []byte, z uint8) {
		fuzzbound.Run(t, func() {
			loc, effective := fuzzLoc(t, z)
			out := fn(exit, stdout, stderr, now, loc)
			input := string(stdout) + "\n" + string(stderr)
			p := out.Provider
			if name != ProviderAuto {
				if p != name {
					t.Fatalf("provider %q, want %q", p, name)
				}
			} else if !knownProvider(p) {
				t.Fatalf("auto gave provider %q", p)
			}
			if exit == 0 && out.Class != provider.ClassOK {
				t.Fatalf("exit 0 gave %+v", out)
			}
			if (out.Class == provider.ClassQuota || out.Class == provider.ClassSecondary) && strings.TrimSpace(input) == "" {
				t.Fatalf("a limit from the exit code alone: %+v", out)
			}
			if err := oracle(out, p, input, effective); err != nil {
				t.Fatalf("%s(%d, %q, %q): %v\n%+v", name, exit, stdout, stderr, err, out)
			}
		})
	})
}

func FuzzClassifyClaudeCode(f *testing.F) { fuzzClassifier(f, ProviderClaudeCode, ClassifyClaudeCode) }
func FuzzClassifyCodex(f *testing.F)      { fuzzClassifier(f, ProviderCodex, ClassifyCodex) }
func FuzzClassifyCopilot(f *testing.F)    { fuzzClassifier(f, ProviderCopilot, ClassifyCopilot) }
func FuzzClassifyKimi(f *testing.F)       { fuzzClassifier(f, ProviderKimi, ClassifyKimi) }
func FuzzClassifyGeminiCLI(f *testing.F)  { fuzzClassifier(f, ProviderGeminiCLI, ClassifyGeminiCLI) }
func FuzzClassifyAntigravity(f *testing.F) {
	fuzzClassifier(f, ProviderAntigravity, ClassifyAntigravity)
}
func FuzzClassifyAuto(f *testing.F) { fuzzClassifier(f, ProviderAuto, ClassifyAuto) }

var reYear = regexp.MustCompile(`\b[0-9]{4}\b`)

// FuzzClock checks the local-time reader alone: a reset it reads shows an
// hour and minute the text writes, in a zone the text names or in loc.
func FuzzClock(f *testing.F) {
	for _, s := range []string{
		"4:50am (Europe/Rome)", "Apr 23 at 4pm (America/Recife)", "Sep 15 at 7pm", "1am", "10am (Asia/Seoul) · /upgrade",
		"Jan 18, 11:30am (Asia/Calcutta)", "3:28 PM.", "Aug 8th, 2026 12:30 PM.", "3:45 PM PDT.", "11:30 PM GMT+9.",
		"Feb 29 at 1am (UTC)", "2:30am (America/New_York)", "12am", "12:00 pm ET", "13pm", "Mar 8 at 2:30am",
	} {
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, s string, z uint8) {
		fuzzbound.Run(t, func() {
			_, loc := fuzzLoc(t, z)
			reset, found, ok := clockAt(s, now, loc)
			if !ok {
				if !reset.IsZero() {
					t.Fatalf("clockAt(%q) = %v with ok false", s, reset)
				}
				return
			}
			if !found {
				t.Fatalf("clockAt(%q) ok but not found", s)
			}
			if !resetcheck.ClockExplained(reset, s, now, loc) {
				t.Fatalf("clockAt(%q) = %v: no such time of day in the text", s, reset)
			}
			if reset.Before(now.Add(-PastGrace)) && !reYear.MatchString(s) {
				t.Fatalf("clockAt(%q) = %v: in the past without a year", s, reset)
			}
		})
	})
}

// FuzzPyLiteral checks the repr parser: no panic, and what it reads is
// valid JSON no longer than its input allows.
func FuzzPyLiteral(f *testing.F) {
	for _, s := range []string{kmRPM[strings.Index(kmRPM, "{"):], kmBusy[strings.Index(kmBusy, "{"):], `{'a': (1, 2.5e3, -0, None, True)}`, `{'a': '\x41\u00e9\U0001F600'}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			b, n, err := pyLiteral(s)
			if err != nil {
				return
			}
			if n <= 0 || n > len(s) {
				t.Fatalf("pyLiteral(%q) read %d bytes", s, n)
			}
			if obj := jsonObject(b); obj == nil && len(b) > 0 && b[0] == '{' {
				t.Fatalf("pyLiteral(%q) = %s: not JSON", s, b)
			}
		})
	})
}
