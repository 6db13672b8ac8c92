package agentcli

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// Verbatim texts of docs/provider-signals.md §5 (Codex), and the tails
// codex-rs/core/src/error.rs writes.
const (
	cxPlus     = "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing), visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 3:28 PM."
	cxTeam     = "You've hit your usage limit. To get more access now, send a request to your admin or try again at Aug 8th, 2026 12:30 PM."
	cxFree     = "You've hit your usage limit. Upgrade to Plus to continue using Codex (https://openai.com/chatgpt/pricing)."
	cxLater    = "You've hit your usage limit. Try again later."
	cxPast     = "You've hit your usage limit. Try again at 7:15 AM."
	cxDays     = "You've hit your usage limit. Please try again in 3 days 6 hours 57 minutes."
	cxQuota    = "Quota exceeded. Check your plan and billing details."
	cxDemand   = "We're currently experiencing high demand, which may cause temporary errors."
	cxRetry429 = "exceeded retry limit, last status: 429 Too Many Requests, request id: req_0a1b2c"
	cxNoPlan   = "To use Codex with your ChatGPT plan, upgrade to Plus: https://openai.com/chatgpt/pricing."
)

const cxThread = "0199a213-81c0-7800-8aa1-bbab2a035a53"

// cxFailed renders `codex exec --json` failing with msg.
func cxFailed(msg string) string {
	return lines(
		jsonLine(map[string]any{"type": "thread.started", "thread_id": cxThread}),
		jsonLine(map[string]any{"type": "turn.started"}),
		jsonLine(map[string]any{"type": "error", "message": msg}),
		jsonLine(map[string]any{"type": "turn.failed", "error": map[string]any{"message": msg}}),
	)
}

func TestClassifyCodex(t *testing.T) {
	t.Parallel()
	ny := zone(t, "America/New_York")
	resetsAt := now.Add(150 * time.Minute)
	tests := []cliCase{
		{
			name:   "exit 0 is ok",
			exit:   0,
			stdout: lines(jsonLine(map[string]any{"type": "error", "message": "Reconnecting... 1/5"}), jsonLine(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 10}})),
			want:   want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0"},
		},
		// Backend bodies and codexErrorInfo.
		{
			name:   "usage_limit_reached with resets_at",
			exit:   1,
			stderr: `ERROR: unexpected status 429 Too Many Requests: {"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":` + epoch(resetsAt) + `}}` + "\n",
			want:   want{class: provider.ClassQuota, reset: resetsAt, retryAfter: -1, reason: "usage_limit_reached (plan plus); resets_at"},
		},
		{
			name:   "usage_limit_reached with resets_in_seconds (older clients)",
			exit:   1,
			stderr: `{"error":{"type":"usage_limit_reached","plan_type":"pro","resets_in_seconds":5400}}` + "\n",
			want:   want{class: provider.ClassQuota, reset: now.Add(90 * time.Minute), retryAfter: -1, reason: "resets_in_seconds 1h30m0s"},
		},
		{
			name:   "usage_limit_reached with resets_at in milliseconds and a text reset",
			exit:   1,
			stdout: cxFailed(cxPlus),
			stderr: `{"error":{"type":"usage_limit_reached","resets_at":` + epoch(resetsAt) + `000}}` + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "America/New_York", 2026, 8, 5, 15, 28), retryAfter: -1, reason: "try again at 3:28 PM"},
		},
		{
			name:   "usage_not_included",
			exit:   1,
			stderr: `{"error":{"type":"usage_not_included"}}` + "\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "usage_not_included"},
		},
		{
			name:   "codexErrorInfo usageLimitExceeded with the text's reset",
			exit:   1,
			stdout: jsonLine(map[string]any{"method": "error", "params": map[string]any{"error": map[string]any{"message": cxTeam, "codexErrorInfo": "usageLimitExceeded"}}}) + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "America/New_York", 2026, 8, 8, 12, 30), retryAfter: -1, reason: "codexErrorInfo usageLimitExceeded"},
		},
		{
			name:   "codexErrorInfo rateLimitExceeded: quota, the text's reset",
			exit:   1,
			stdout: jsonLine(map[string]any{"method": "error", "params": map[string]any{"error": map[string]any{"message": cxTeam, "codexErrorInfo": "rateLimitExceeded"}}}) + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "America/New_York", 2026, 8, 8, 12, 30), retryAfter: -1, reason: "codexErrorInfo rateLimitExceeded"},
		},
		{
			name:   "codexErrorInfo rate_limit_exceeded without a text: quota, reset unknown",
			exit:   1,
			stderr: `{"msg":{"type":"error","message":"rate limited","codex_error_info":"rate_limit_exceeded"}}` + "\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "codexErrorInfo rate_limit_exceeded, reset unknown"},
		},
		{
			name:   "codexErrorInfo serverOverloaded",
			exit:   1,
			stdout: `{"error":{"message":"overloaded","codexErrorInfo":"serverOverloaded"}}` + "\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "codexErrorInfo serverOverloaded"},
		},
		{
			name:   "codexErrorInfo responseTooManyFailedAttempts 429",
			exit:   1,
			stdout: `{"error":{"message":"x","codexErrorInfo":{"responseTooManyFailedAttempts":{"httpStatusCode":429}}}}` + "\n",
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "responseTooManyFailedAttempts (HTTP 429)"},
		},
		{
			name:   "codexErrorInfo unauthorized",
			exit:   1,
			stdout: `{"error":{"message":"x","codex_error_info":"unauthorized"}}` + "\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "codexErrorInfo unauthorized"},
		},
		// Texts, in JSON events and on stderr.
		{
			name:   "Plus: try again at 3:28 PM, later today in loc",
			exit:   1,
			stdout: cxFailed(cxPlus),
			want:   want{class: provider.ClassQuota, reset: at(t, "America/New_York", 2026, 8, 5, 15, 28), retryAfter: -1, reason: "try again at 3:28 PM"},
		},
		{
			name:   "a time of day already past: tomorrow",
			exit:   1,
			stdout: cxFailed(cxPast),
			want:   want{class: provider.ClassQuota, reset: at(t, "America/New_York", 2026, 8, 6, 7, 15), retryAfter: -1, reason: "try again at 7:15 AM"},
		},
		{
			name:   "Team: a date, Aug 8th, 2026 12:30 PM",
			exit:   1,
			stderr: "ERROR: " + cxTeam + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "America/New_York", 2026, 8, 8, 12, 30), retryAfter: -1, reason: "Aug 8th, 2026 12:30 PM"},
		},
		{
			name:   "Free: no reset",
			exit:   1,
			stdout: cxFailed(cxFree),
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "Try again later: reset unknown",
			exit:   1,
			stdout: cxFailed(cxLater),
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "try again in 3 days 6 hours 57 minutes",
			exit:   1,
			stdout: cxFailed(cxDays),
			want:   want{class: provider.ClassQuota, reset: now.Add(78*time.Hour + 57*time.Minute), retryAfter: -1, reason: "try again in 78h57m0s"},
		},
		{
			name:   "bare try again in 3 days 6 hours 57 minutes is a long throttle",
			exit:   1,
			stderr: "Error: rate limited, try again in 3 days 6 hours 57 minutes\n",
			want:   want{class: provider.ClassQuota, reset: now.Add(78*time.Hour + 57*time.Minute), retryAfter: 78*time.Hour + 57*time.Minute, reason: "over 5m0s: quota"},
		},
		{
			name:   "API-key quota",
			exit:   1,
			stdout: cxFailed(cxQuota),
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "plan without Codex",
			exit:   1,
			stderr: cxNoPlan + "\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "plan does not include Codex"},
		},
		{
			name:   "high demand is transient",
			exit:   1,
			stdout: cxFailed(cxDemand),
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "high demand"},
		},
		{
			name:   "exceeded retry limit, last status 429: secondary, wait unknown",
			exit:   1,
			stdout: cxFailed(cxRetry429),
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "exceeded retry limit, last status: 429"},
		},
		{
			name:   "exceeded retry limit, last status 502: transient",
			exit:   1,
			stdout: cxFailed("exceeded retry limit, last status: 502 Bad Gateway"),
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "last status: 502"},
		},
		{
			name:   "unexpected status 401",
			exit:   1,
			stdout: cxFailed(`unexpected status 401 Unauthorized: {"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`),
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "unexpected status 401 invalid_api_key"},
		},
		{
			name:   "in-turn rate_limit_exceeded with a wait",
			exit:   1,
			stdout: cxFailed("Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 1.5s."),
			want:   want{class: provider.ClassSecondary, retryAfter: 1500 * time.Millisecond, reason: "try again in 1.5s"},
		},
		{
			name:   "refresh token failed is auth",
			exit:   1,
			stderr: "Your access token could not be refreshed because your refresh token has expired. Please log out and sign in again.\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "refresh token"},
		},
		{
			name:   "stream disconnected is transient",
			exit:   1,
			stdout: cxFailed("stream disconnected before completion: error sending request"),
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "stream disconnected"},
		},
		{
			name:   "reconnecting notices alone are not a limit",
			exit:   1,
			stdout: lines(jsonLine(map[string]any{"type": "error", "message": "Reconnecting... 2/5 (429 Too Many Requests)"}), jsonLine(map[string]any{"type": "turn.failed", "error": map[string]any{"message": "sandbox denied exec error, exit code: 1"}})),
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "sandbox denied"},
		},
		{
			name: "a retrying notice before the failure does not decide",
			exit: 1,
			stdout: lines(jsonLine(map[string]any{"type": "error", "message": "stream disconnected before completion: connection reset; retrying 1/5 in 200ms…"}),
				jsonLine(map[string]any{"type": "turn.failed", "error": map[string]any{"message": "Codex ran out of room in the model's context window. Start a new conversation or clear earlier history before retrying."}})),
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "context window"},
		},
		{
			name: "exit 1 and nothing else",
			exit: 1,
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
	}
	runCases(t, tests, ClassifyCodex, ProviderCodex, ny)
}
