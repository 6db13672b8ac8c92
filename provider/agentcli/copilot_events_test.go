package agentcli

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// Copilot CLI's JSON events (docs/agents.md).
const (
	cpEventStart = `{"type":"session.start","data":{"sessionId":"916524aa-24ae-406d-899a-698d2c19dd57","copilotVersion":"1.0.34"},"id":"e1","timestamp":"2026-08-05T12:00:00.000Z"}`
)

// cpEvent is a Copilot CLI session.error event.
func cpEvent(errorType, message string, status int) string {
	data := map[string]any{"errorType": errorType, "message": message}
	if status != 0 {
		data["statusCode"] = status
	}
	return jsonLine(map[string]any{"type": "session.error", "data": data, "id": "e2", "timestamp": "2026-08-05T12:00:01.000Z"})
}

func TestClassifyCopilotSessionError(t *testing.T) {
	t.Parallel()
	runCases(t, []cliCase{
		{
			name:   "session.error quota: the premium-request quota",
			exit:   1,
			stdout: lines(cpEventStart, cpEvent("quota", "You have no quota", 402)),
			want:   want{class: provider.ClassQuota, resource: "premium-requests", retryAfter: -1, reason: "session.error quota (HTTP 402): You have no quota, reset unknown"},
		},
		{
			name:   "session.error quota with the usage dump's reset date",
			exit:   1,
			stdout: lines(cpEventStart, cpEvent("quota", "Quota exceeded", 0)),
			stderr: cpResetDate + "\n",
			want:   want{class: provider.ClassQuota, resource: "premium-requests", reset: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), retryAfter: -1, reason: "quota reset date utc", obs: 1},
		},
		{
			name:   "session.error rate_limit: secondary with the stated wait",
			exit:   1,
			stdout: lines(cpEventStart, cpEvent("rate_limit", cpGlobal, 429)),
			want:   want{class: provider.ClassSecondary, resource: "requests", retryAfter: 6 * time.Second, reason: "session.error rate_limit"},
		},
		{
			name:   "session.error rate_limit without a wait",
			exit:   1,
			stdout: lines(cpEventStart, cpEvent("rate_limit", "rate limited", 0)),
			want:   want{class: provider.ClassSecondary, resource: "requests", retryAfter: -1, reason: "session.error rate_limit: rate limited"},
		},
		{
			name:   "session.error authentication: auth",
			exit:   1,
			stdout: lines(cpEventStart, cpEvent("authentication", "Not authenticated", 401)),
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "session.error authentication"},
		},
		{
			name:   "session.error of another type: the texts decide",
			exit:   1,
			stdout: lines(cpEventStart, cpEvent("tool", "tool execution failed", 0)),
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
		{
			name:   "a session.error on a run that succeeded is no limit",
			exit:   0,
			stdout: lines(cpEventStart, cpEvent("quota", "You have no quota", 402)),
			want:   want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0"},
		},
		{
			name:   "logged out: No authentication information found",
			exit:   1,
			stderr: "Error: No authentication information found.\nRun 'copilot' and enter /login, or set GH_TOKEN or GITHUB_TOKEN.\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "no authentication information found"},
		},
	}, ClassifyCopilot, ProviderCopilot, time.UTC)
}
