package agentcli

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

func TestClassifyAuto(t *testing.T) {
	t.Parallel()
	ny := zone(t, "America/New_York")
	reset := now.Add(4 * time.Hour)
	claudeRejected := lines(ccInit(), ccRate("rejected", reset.Unix(), "five_hour", nil), ccResult(true, "success", ccRome, 429))
	tests := []struct {
		name           string
		exit           int
		stdout, stderr string
		provider       string
		class          provider.Class
		reason         string
	}{
		{
			name:     "exit 0 with a Claude stream keeps Claude's observations",
			exit:     0,
			stdout:   lines(ccInit(), ccRate("allowed_warning", reset.Unix(), "five_hour", map[string]any{"utilization": 0.8}), ccResult(false, "success", "done", 0)),
			provider: ProviderClaudeCode, class: provider.ClassOK, reason: "exit 0",
		},
		{
			name:     "exit 0 with nothing recognized",
			exit:     0,
			stdout:   "hello\n",
			provider: ProviderAuto, class: provider.ClassOK, reason: "exit 0",
		},
		{
			name:     "a Claude rejected rate_limit_event",
			exit:     1,
			stdout:   claudeRejected,
			provider: ProviderClaudeCode, class: provider.ClassQuota, reason: "rate_limit_event status rejected",
		},
		{
			name:     "structured beats text: Claude's event over a Codex text on stderr",
			exit:     1,
			stdout:   claudeRejected,
			stderr:   cxLater + "\n",
			provider: ProviderClaudeCode, class: provider.ClassQuota, reason: "rate_limit_event",
		},
		{
			name:     "a Claude stream settles the program: a Kimi error quoted in the conversation does not count",
			exit:     1,
			stdout:   lines(ccInit(), ccAssistant("the log said "+kmRPM, ""), ccResult(true, "error_max_turns", "", 0)),
			provider: ProviderClaudeCode, class: provider.ClassPermanent, reason: "error_max_turns",
		},
		{
			name:     "a Claude usage-limit text",
			exit:     1,
			stdout:   ccTokyo + "\n",
			provider: ProviderClaudeCode, class: provider.ClassQuota, reason: "usage-limit text",
		},
		{
			name:     "Codex JSONL events",
			exit:     1,
			stdout:   cxFailed(cxPlus),
			provider: ProviderCodex, class: provider.ClassQuota, reason: "try again at 3:28 PM",
		},
		{
			name:     "Codex text on stderr",
			exit:     1,
			stderr:   "ERROR: " + cxRetry429 + "\n",
			provider: ProviderCodex, class: provider.ClassSecondary, reason: "exceeded retry limit",
		},
		{
			name:     "Gemini CLI stream-json",
			exit:     1,
			stdout:   gmResult("TerminalQuotaError", gmDaily),
			provider: ProviderGeminiCLI, class: provider.ClassQuota, reason: "TerminalQuotaError",
		},
		{
			name:     "Kimi's dict",
			exit:     75,
			stdout:   kmTPD + "\n",
			provider: ProviderKimi, class: provider.ClassQuota, reason: "tokens-per-day",
		},
		{
			name:     "Copilot's 402",
			exit:     1,
			stderr:   cpNoQuota + "\n",
			provider: ProviderCopilot, class: provider.ClassQuota, reason: "You have no quota",
		},
		{
			name:     "gh's primary limit",
			exit:     1,
			stderr:   "gh: API rate limit exceeded for user ID 1234567. (HTTP 403)\n",
			provider: ProviderGitHub, class: provider.ClassQuota, reason: "rate limit exceeded",
		},
		{
			name:     "gh's secondary text beats a generic rate-limit match",
			exit:     1,
			stderr:   "gh: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. (HTTP 403)\n",
			provider: ProviderGitHub, class: provider.ClassSecondary, reason: "secondary rate limit",
		},
		{
			name:     "a generic text: not permanent first, then a stated wait",
			exit:     1,
			stderr:   "Error: rate limit exceeded, please try again in 30 seconds\n",
			provider: ProviderCodex, class: provider.ClassSecondary, reason: "try again in 30s",
		},
		{
			name:     "a generic network failure",
			exit:     1,
			stderr:   "dial tcp 10.0.0.1:443: connect: connection refused\n",
			provider: ProviderClaudeCode, class: provider.ClassTransient, reason: "connection refused",
		},
		{
			name:     "exit 75 alone: EX_TEMPFAIL",
			exit:     75,
			provider: ProviderAuto, class: provider.ClassTransient, reason: "exit 75",
		},
		{
			name:     "exit 41 alone is not Gemini CLI's auth",
			exit:     41,
			provider: ProviderAuto, class: provider.ClassPermanent, reason: "exit 41",
		},
		{
			name:     "exit 4 alone is not gh's auth",
			exit:     4,
			provider: ProviderAuto, class: provider.ClassPermanent, reason: "exit 4",
		},
		{
			name:     "exit 41 with Gemini's stream is Gemini's auth",
			exit:     41,
			stdout:   lines(jsonLine(map[string]any{"type": "init", "session_id": "s", "model": "gemini-2.5-pro"})),
			provider: ProviderGeminiCLI, class: provider.ClassAuth, reason: "exit 41",
		},
		{
			name:     "nothing recognized",
			exit:     2,
			stderr:   "usage: foo [-x]\n",
			provider: ProviderAuto, class: provider.ClassPermanent, reason: "exit 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ClassifyAuto(tt.exit, []byte(tt.stdout), []byte(tt.stderr), now, ny)
			if got.Provider != tt.provider || got.Class != tt.class || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("ClassifyAuto = %s %s %q; want %s %s %q", got.Provider, got.Class, got.Reason, tt.provider, tt.class, tt.reason)
			}
			if err := oracle(got, got.Provider, tt.stdout+"\n"+tt.stderr, ny); err != nil {
				t.Errorf("oracle: %v", err)
			}
		})
	}
}

// A nil loc reads zoneless times in now's location.
func TestNilLocationIsNowsZone(t *testing.T) {
	t.Parallel()
	in := []byte("You've hit your weekly limit · resets Sep 15 at 7pm\n")
	nyNow := now.In(zone(t, "America/New_York"))
	if got := ClassifyClaudeCode(1, in, nil, nyNow, nil); !got.ResetAt.Equal(at(t, "America/New_York", 2026, 9, 15, 19, 0)) {
		t.Errorf("nil loc: reset %v", got.ResetAt)
	}
}

// TestScanTail checks that only the last 64 KiB of each stream is read.
func TestScanTail(t *testing.T) {
	t.Parallel()
	filler := strings.Repeat("progress: still working on it\n", 4000) // about 120 KiB
	for _, tc := range []struct {
		name   string
		stdout string
		class  provider.Class
	}{
		{"a limit at the end of a long output", filler + ccRome + "\n", provider.ClassQuota},
		{"a limit before the last 64 KiB", ccRome + "\n" + filler, provider.ClassPermanent},
	} {
		for name, classify := range map[string]Func{ProviderClaudeCode: ClassifyClaudeCode, ProviderAuto: ClassifyAuto} {
			got := classify(1, []byte(tc.stdout), nil, now, time.UTC)
			if got.Class != tc.class {
				t.Errorf("%s, %s: %s (%s), want %s", tc.name, name, got.Class, got.Reason, tc.class)
			}
		}
	}
}

// gh's refused token is auth, gh's: the JSON error body gh prints is not
// Codex's output, whose unrecognised messages are permanent.
func TestAutoGHBadCredentialsIsAuth(t *testing.T) {
	t.Parallel()
	out := []byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}` + "\n")
	o := ClassifyAuto(1, out, []byte("gh: Bad credentials (HTTP 401)\n"), time.Now(), time.UTC)
	if o.Class != provider.ClassAuth || o.Provider != "github" {
		t.Fatalf("outcome %s from %s (%s), want auth from github", o.Class, o.Provider, o.Reason)
	}
}
