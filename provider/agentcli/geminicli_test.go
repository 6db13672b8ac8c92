package agentcli

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// Verbatim texts of docs/provider-signals.md §5 (Gemini CLI) and of gemini-cli's
// errorParsing.ts and googleQuotaErrors.ts.
const (
	gmUsage    = "Usage limit reached for gemini-2.5-pro."
	gmResets   = "Access resets at 3:45 PM PDT."
	gmAPIQuota = "[API Error: You exceeded your current quota, please check your plan and billing details. (Status: RESOURCE_EXHAUSTED)]"
	gmWaitTail = "Please wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method"
	gmDaily    = "You have exhausted your daily quota on this model."
)

// gmResult renders Gemini CLI's stream-json failure.
func gmResult(typ, msg string) string {
	return lines(
		jsonLine(map[string]any{"type": "init", "timestamp": "2026-08-05T12:00:00.000Z", "session_id": "5b1f0c7e-1d2a-4c3b-9e8f-0a1b2c3d4e5f", "model": "gemini-2.5-pro"}),
		jsonLine(map[string]any{"type": "result", "timestamp": "2026-08-05T12:00:01.000Z", "status": "error",
			"error": map[string]any{"type": typ, "message": msg},
			"stats": map[string]any{"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "duration_ms": 812, "tool_calls": 0}}),
	)
}

// gmJSONError renders the json mode's error, pretty-printed as
// JSON.stringify(…, null, 2) does.
func gmJSONError(typ, msg string, code int) string {
	return "{\n  \"error\": {\n    \"type\": " + jsonLine(typ) + ",\n    \"message\": " + jsonLine(msg) + ",\n    \"code\": " + jsonLine(code) + "\n  }\n}\n"
}

// googleBody is a Google API error body.
func googleBody(code int, msg, status string, details ...any) string {
	e := map[string]any{"code": code, "message": msg, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	return jsonLine(map[string]any{"error": e})
}

func TestClassifyGeminiCLI(t *testing.T) {
	t.Parallel()
	ny := zone(t, "America/New_York")
	pdt := time.FixedZone("PDT", -7*3600)
	perDay := map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
		"quotaMetric":     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
		"quotaId":         "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
		"quotaDimensions": map[string]any{"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "100"}}}
	retry26 := map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "26s"}
	tests := []cliCase{
		{
			name:   "exit 0 is ok",
			exit:   0,
			stdout: gmResult("TerminalQuotaError", gmDaily),
			want:   want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0"},
		},
		// Structured errors.
		{
			name:   "stream-json TerminalQuotaError, daily: reset unknown",
			exit:   1,
			stdout: gmResult("TerminalQuotaError", gmDaily),
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "error TerminalQuotaError: You have exhausted your daily quota on this model., reset unknown"},
		},
		{
			name:   "TerminalQuotaError with the UI's usage text and reset",
			exit:   1,
			stdout: gmResult("TerminalQuotaError", gmUsage+" "+gmResets),
			want:   want{class: provider.ClassQuota, resource: "gemini-2.5-pro", reset: time.Date(2026, 8, 5, 15, 45, 0, 0, pdt), retryAfter: -1, reason: "access resets at 3:45 PM PDT", obs: 1},
		},
		{
			name:   "TerminalQuotaError with a long delay",
			exit:   1,
			stdout: gmResult("TerminalQuotaError", "Quota limit requires a long delay of 3600s."),
			want:   want{class: provider.ClassQuota, reset: now.Add(time.Hour), retryAfter: time.Hour, reason: "wait 1h0m0s"},
		},
		{
			name:   "RetryableQuotaError with its delay",
			exit:   1,
			stdout: gmResult("RetryableQuotaError", "Quota limit hit. Retrying after 26s."),
			want:   want{class: provider.ClassSecondary, retryAfter: 26 * time.Second, reason: "the message says wait 26s"},
		},
		{
			name:   "json mode error on stderr, exit 173, nested JSON with RetryInfo",
			exit:   173,
			stderr: gmJSONError("ApiError", googleBody(429, googleBody(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED", retry26), "Too Many Requests"), 429),
			want:   want{class: provider.ClassSecondary, retryAfter: 26 * time.Second, reason: "RetryInfo retryDelay 26s"},
		},
		{
			name:   "nested JSON with a per-day quota id: quota",
			exit:   1,
			stdout: gmResult("Error", googleBody(429, googleBody(429, "You exceeded your current quota", "RESOURCE_EXHAUSTED", perDay), "Too Many Requests")),
			want:   want{class: provider.ClassQuota, resource: "requests-per-day:gemini-2.5-pro", retryAfter: -1, reason: "daily quota, reset unknown"},
		},
		{
			name:   "FatalAuthenticationError, exit 41",
			exit:   41,
			stderr: gmJSONError("FatalAuthenticationError", "Failed to login. Message: Request had invalid authentication credentials.", 41),
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "error FatalAuthenticationError"},
		},
		{
			name:   "FatalConfigError, exit 52",
			exit:   52,
			stderr: gmJSONError("FatalConfigError", "Invalid settings.json", 52),
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "error FatalConfigError"},
		},
		// Texts.
		{
			name:   "UI text: Usage limit reached + Access resets at 3:45 PM PDT",
			exit:   1,
			stderr: gmUsage + "\n" + gmResets + "\n",
			want:   want{class: provider.ClassQuota, resource: "gemini-2.5-pro", reset: time.Date(2026, 8, 5, 15, 45, 0, 0, pdt), retryAfter: -1, reason: "Usage limit reached for gemini-2.5-pro", obs: 1},
		},
		{
			name:   "Access resets at a time already past: tomorrow",
			exit:   1,
			stderr: gmUsage + "\nAccess resets at 4:15 AM PDT.\n",
			want:   want{class: provider.ClassQuota, resource: "gemini-2.5-pro", reset: time.Date(2026, 8, 6, 4, 15, 0, 0, pdt), retryAfter: -1, reason: "4:15 AM PDT", obs: 1},
		},
		{
			name:   "Access resets at with GMT+9",
			exit:   1,
			stderr: gmUsage + "\nAccess resets at 11:30 PM GMT+9.\n",
			want:   want{class: provider.ClassQuota, resource: "gemini-2.5-pro", reset: time.Date(2026, 8, 5, 23, 30, 0, 0, time.FixedZone("", 9*3600)), retryAfter: -1, reason: "GMT+9", obs: 1},
		},
		{
			name:   "Access resets at without a zone: loc",
			exit:   1,
			stderr: gmUsage + "\nAccess resets at 3:45 PM.\n",
			want:   want{class: provider.ClassQuota, resource: "gemini-2.5-pro", reset: time.Date(2026, 8, 5, 15, 45, 0, 0, ny), retryAfter: -1, reason: "3:45 PM", obs: 1},
		},
		{
			name:   "API Error RESOURCE_EXHAUSTED with the wait-and-retry tail",
			exit:   1,
			stderr: gmAPIQuota + "\n" + gmWaitTail + "\n",
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "[API Error]: 429 RESOURCE_EXHAUSTED"},
		},
		{
			name:   "API Error with limit: 0 and a wait: quota",
			exit:   1,
			stderr: "[API Error: You exceeded your current quota, please check your plan and billing details. * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro Please retry in 10h17m5.723541104s. (Status: RESOURCE_EXHAUSTED)]\n",
			want:   want{class: provider.ClassQuota, resource: "requests:gemini-2.5-pro", reset: now.Add(10*time.Hour + 17*time.Minute + 5723541104), retryAfter: 10*time.Hour + 17*time.Minute + 5723541104, reason: "limit: 0", obs: 1},
		},
		{
			name:   "API Error UNAVAILABLE is transient",
			exit:   1,
			stderr: "[API Error: The model is overloaded. Please try again later. (Status: UNAVAILABLE)]\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "UNAVAILABLE"},
		},
		{
			name:   "a stack trace naming TerminalQuotaError",
			exit:   1,
			stderr: "Error when talking to Gemini API TerminalQuotaError: You have exhausted your daily quota on this model.\n    at classifyGoogleError (file:///x.js:1:2)\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "exhausted your daily quota"},
		},
		{
			name:   "exit 173 with a quota text",
			exit:   173,
			stderr: gmDaily + "\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "exhausted your daily quota"},
		},
		{
			name: "exit 173 alone is transient",
			exit: 173,
			want: want{class: provider.ClassTransient, retryAfter: -1, reason: "exit 173"},
		},
		{
			name:   "retry notices are not limits",
			exit:   1,
			stderr: "Attempt 1 failed with status 429. Retrying with backoff... ApiError: {\"error\":{\"code\":429}}\nError: ENOENT: no such file\n",
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
		{
			name: "exit 41 alone is auth",
			exit: 41,
			want: want{class: provider.ClassAuth, retryAfter: -1, reason: "exit 41"},
		},
		{
			name: "exit 42 alone is permanent",
			exit: 42,
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 42"},
		},
		{
			name: "exit 130 is cancelled",
			exit: 130,
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "cancelled"},
		},
	}
	runCases(t, tests, ClassifyGeminiCLI, ProviderGeminiCLI, ny)
}
