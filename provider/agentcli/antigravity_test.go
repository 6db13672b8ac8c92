package agentcli

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// Antigravity CLI's texts (docs/agents.md).
const (
	agIndividual = "⚠ Individual quota reached. Please upgrade your subscription to increase your limits.\nResets in 143h57m55s."
	agAdmin      = "RESOURCE_EXHAUSTED: Individual quota reached. Contact your administrator to enable overages. Resets in 2h40m11s."
	agExhausted  = `Cloud Code Assist API error (429): {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`
	agLoggedOut  = "E0520 11:22:25.822941 4242 log.go:398] Failed to poll ListExperiments: error getting token source: You are not logged into Antigravity."
	agUnauth     = "⚠ Eligibility Check\n  ⎿  Eligibility check failed: UNAUTHENTICATED (code 401): Request had invalid authentication credentials."
)

func TestClassifyAntigravity(t *testing.T) {
	t.Parallel()
	runCases(t, []cliCase{
		{
			name: "exit 0 is ok", exit: 0, stdout: agIndividual + "\n",
			want: want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0"},
		},
		{
			name:   "Individual quota reached, Resets in 143h57m55s",
			exit:   1,
			stderr: agIndividual + "\n",
			want:   want{class: provider.ClassQuota, reset: now.Add(143*time.Hour + 57*time.Minute + 55*time.Second), retryAfter: -1, reason: `text "individual quota reached"; resets in`},
		},
		{
			name:   "RESOURCE_EXHAUSTED: Individual quota reached … Resets in 2h40m11s",
			exit:   1,
			stdout: agAdmin + "\n",
			want:   want{class: provider.ClassQuota, reset: now.Add(2*time.Hour + 40*time.Minute + 11*time.Second), retryAfter: -1, reason: "individual quota reached"},
		},
		{
			name:   "RESOURCE_EXHAUSTED body: quota, reset unknown",
			exit:   1,
			stderr: agExhausted + "\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "stream-json result with a quota error",
			exit:   1,
			stdout: lines(`{"type":"init","conversation_id":"35c35ece-96ea-48d0-9348-044a911b116e"}`, `{"type":"result","conversation_id":"35c35ece-96ea-48d0-9348-044a911b116e","status":"error","error":{"message":"Individual quota reached. Resets in 1h0m0s."}}`),
			want:   want{class: provider.ClassQuota, reset: now.Add(time.Hour), retryAfter: -1, reason: "individual quota reached"},
		},
		{
			name:   "a wait past 90 days is not read",
			exit:   1,
			stderr: "Individual quota reached. Resets in 9999h0m0s.\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "logged out: You are not logged into Antigravity",
			exit:   1,
			stderr: agLoggedOut + "\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "you are not logged into antigravity"},
		},
		{
			name:   "UNAUTHENTICATED credentials",
			exit:   1,
			stdout: agUnauth + "\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "invalid authentication credentials"},
		},
		{
			name:   "overloaded: transient",
			exit:   1,
			stderr: "UNAVAILABLE (code 503): The model is overloaded. Please try again later.\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "overload"},
		},
		{
			name:   "network failure",
			exit:   1,
			stderr: "dial tcp 142.250.1.1:443: connect: connection refused\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "connection refused"},
		},
		{
			name: "anything else", exit: 1, stderr: "Agent execution terminated due to error.\n",
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
	}, ClassifyAntigravity, ProviderAntigravity, time.UTC)
}

// TestLoggedOutIsAuth: every CLI's "please log in" or expired-token output
// classifies as auth, by name and by ClassifyAuto.
func TestLoggedOutIsAuth(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, p        string
		fn             Func
		exit           int
		stdout, stderr string
	}{
		{"claude not logged in", ProviderClaudeCode, ClassifyClaudeCode, 1, "Invalid API key · Please run /login\n", ""},
		{"claude oauth expired", ProviderClaudeCode, ClassifyClaudeCode, 1, lines(ccInit(), ccResult(true, "success", "OAuth token has expired. Please obtain a new token or refresh your existing token.", 401)), ""},
		{"codex refresh token", ProviderCodex, ClassifyCodex, 1, "", "ERROR: Your access token could not be refreshed because your refresh token has expired. Please log out and sign in again.\n"},
		{"codex not logged in", ProviderCodex, ClassifyCodex, 1, "", "Not logged in. Please run `codex login`.\n"},
		{"copilot", ProviderCopilot, ClassifyCopilot, 1, "", "Error: No authentication information found.\n"},
		{"kimi", ProviderKimi, ClassifyKimi, 1, kmAuth + "\n", ""},
		{"gemini", ProviderGeminiCLI, ClassifyGeminiCLI, 41, "", "Failed to login. Message: Request had invalid authentication credentials.\n"},
		{"antigravity", ProviderAntigravity, ClassifyAntigravity, 1, "", agLoggedOut + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.fn(tt.exit, []byte(tt.stdout), []byte(tt.stderr), now, time.UTC); got.Class != provider.ClassAuth || got.Provider != tt.p {
				t.Errorf("by name: %+v", got)
			}
			if got := ClassifyAuto(tt.exit, []byte(tt.stdout), []byte(tt.stderr), now, time.UTC); got.Class != provider.ClassAuth {
				t.Errorf("auto: %+v", got)
			}
		})
	}
}

// TestClassifyAutoNewSignals: ClassifyAuto names the CLI of each new
// signal.
func TestClassifyAutoNewSignals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, stdout, stderr, p string
		class                   provider.Class
	}{
		{"copilot session.error", lines(cpEventStart, cpEvent("quota", "You have no quota", 402)), "", ProviderCopilot, provider.ClassQuota},
		{"kimi balance", kmBalance + "\n", "", ProviderKimi, provider.ClassQuota},
		{"antigravity quota", "", agIndividual + "\n", ProviderAntigravity, provider.ClassQuota},
		{"antigravity stream-json is not Gemini CLI's", lines(`{"type":"init","conversation_id":"c1"}`, `{"type":"result","conversation_id":"c1","status":"error","error":{"message":"Individual quota reached."}}`), "", ProviderAntigravity, provider.ClassQuota},
		{"gemini RESOURCE_EXHAUSTED stays Gemini CLI's", "", gmAPIQuota + "\n" + gmWaitTail + "\n", ProviderGeminiCLI, provider.ClassSecondary},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ClassifyAuto(1, []byte(tt.stdout), []byte(tt.stderr), now, time.UTC)
			if got.Provider != tt.p || got.Class != tt.class {
				t.Errorf("ClassifyAuto = %s %s (%s), want %s %s", got.Provider, got.Class, got.Reason, tt.p, tt.class)
			}
		})
	}
}
