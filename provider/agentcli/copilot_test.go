package agentcli

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// Verbatim texts of docs/provider-signals.md §5 (Copilot CLI).
const (
	cpNoQuotaBody = `{"error":{"message":"You have no quota","code":"quota_exceeded"}}`
	cpNoQuota     = "✗ 402 You have no quota (Request ID: C2B4:3D0A1B:8E2F1A:9B3C4D:67F0A1B2)"
	cpUpgrade     = "Quota exceeded. Upgrade to increase your limit: https://github.com/features/copilot/plans"
	cpResetDate   = "quota reset date utc: 2026-09-01T00:00:00.000Z"
	cpFallback    = "You have exceeded your premium request allowance. We have automatically switched you to GPT-4.1 which is included with your plan."
	cpTokenBody   = `{"message":"Sorry, you have exceeded your Copilot token usage. Please review our Terms of Service.","code":"rate_limited"}`
	cpRate2h      = "Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make within a specific time period. Please try again in 2 hours."
	cpRate58h     = "Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make within a specific time period. Please try again in 58 hours."
	cpRate2m      = "Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make within a specific time period. Please try again in 2 minutes."
	cpGlobal      = "You've hit your global rate limit. Please upgrade your plan or wait 6 seconds for your limit to reset."
)

func TestClassifyCopilot(t *testing.T) {
	t.Parallel()
	tests := []cliCase{
		{
			name:   "exit 0 after the premium fallback notice is ok",
			exit:   0,
			stdout: cpFallback + "\nDone.\n",
			want:   want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0"},
		},
		{
			name:   "402 body quota_exceeded: quota, reset unknown",
			exit:   1,
			stderr: "Error: 402 " + cpNoQuotaBody + "\n",
			want:   want{class: provider.ClassQuota, resource: "premium-requests", retryAfter: -1, reason: "quota_exceeded: You have no quota, reset unknown"},
		},
		{
			name:   "✗ 402 You have no quota",
			exit:   1,
			stderr: cpNoQuota + "\n",
			want:   want{class: provider.ClassQuota, resource: "premium-requests", retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "Quota exceeded. Upgrade… with the usage dump's reset date",
			exit:   1,
			stdout: cpUpgrade + "\n" + cpResetDate + "\n",
			want:   want{class: provider.ClassQuota, resource: "premium-requests", reset: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), retryAfter: -1, reason: "quota reset date utc", obs: 1},
		},
		{
			name:   "the fallback notice on a failed run is not a limit",
			exit:   1,
			stdout: cpFallback + "\nError: tool failed\n",
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
		{
			name:   "rate_limited token usage body, no wait stated",
			exit:   1,
			stderr: "✗ 429 " + cpTokenBody + "\n",
			want:   want{class: provider.ClassSecondary, resource: "tokens", retryAfter: -1, reason: "rate_limited: Sorry, you have exceeded your Copilot token usage"},
		},
		{
			name:   "rate limit, try again in 2 hours: quota",
			exit:   1,
			stderr: cpRate2h + "\n",
			want:   want{class: provider.ClassQuota, resource: "requests", reset: now.Add(2 * time.Hour), retryAfter: 2 * time.Hour, reason: "(over 5m0s: quota)", obs: 1},
		},
		{
			name:   "rate limit, try again in 58 hours: quota",
			exit:   1,
			stderr: cpRate58h + "\n",
			want:   want{class: provider.ClassQuota, resource: "requests", reset: now.Add(58 * time.Hour), retryAfter: 58 * time.Hour, reason: "58h0m0s", obs: 1},
		},
		{
			name:   "rate limit, try again in 2 minutes: secondary",
			exit:   1,
			stderr: cpRate2m + "\n",
			want:   want{class: provider.ClassSecondary, resource: "requests", retryAfter: 2 * time.Minute, reason: "the text says wait 2m0s"},
		},
		{
			name:   "global rate limit, wait 6 seconds",
			exit:   1,
			stderr: cpGlobal + "\n",
			want:   want{class: provider.ClassSecondary, resource: "requests", retryAfter: 6 * time.Second, reason: "global rate limit"},
		},
		{
			name:   "auth",
			exit:   1,
			stderr: "Error: No authentication information found.\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "no authentication information found"},
		},
		{
			name:   "a generic rate limit text",
			exit:   1,
			stderr: "Error: rate limit exceeded\n",
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "no retry-after"},
		},
		{
			name:   "network",
			exit:   1,
			stderr: "Error: fetch failed\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "fetch failed"},
		},
		{
			name: "exit 1 and nothing else",
			exit: 1,
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
	}
	runCases(t, tests, ClassifyCopilot, ProviderCopilot, time.UTC)
}
