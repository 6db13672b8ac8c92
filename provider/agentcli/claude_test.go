package agentcli

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
)

// Verbatim texts of docs/provider-signals.md §5 (Claude Code).
const (
	ccPipe    = "Claude AI usage limit reached|1749924000"
	ccWarsaw  = "Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw)."
	cc5Hour   = "5-hour limit reached ∙ resets 1am"
	ccSeoul   = "Weekly limit reached · resets 10am (Asia/Seoul) · /upgrade to Max or turn on /extra-usage"
	ccRome    = "You've hit your limit · resets 4:50am (Europe/Rome)"
	ccRecife  = "You've hit your limit · resets Apr 23 at 4pm (America/Recife)"
	ccTokyo   = "You've hit your session limit · resets 8:30pm (Asia/Tokyo)"
	ccLogin   = "/login to switch to an API usage-billed account."
	ccWeekly  = "You've hit your weekly limit · resets Sep 15 at 7pm"
	ccUsage   = "Resets Jan 12, 10:59am (America/New_York)"
	ccAccount = `API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CXp749yZnKiwC2nVdB91g"}`
)

const ccSession = "1ae0af5b-89fa-4075-8156-d5d3702f6505"

func ccInit() string {
	return jsonLine(map[string]any{"type": "system", "subtype": "init", "session_id": ccSession, "model": "claude-sonnet-4-5", "cwd": "/work", "tools": []string{"Bash"}})
}

func ccRate(status string, resetsAt int64, typ string, extra map[string]any) string {
	info := map[string]any{"status": status, "rateLimitType": typ, "isUsingOverage": false}
	if resetsAt != 0 {
		info["resetsAt"] = resetsAt
	}
	for k, v := range extra {
		info[k] = v
	}
	return jsonLine(map[string]any{"type": "rate_limit_event", "rate_limit_info": info, "uuid": "76258cfb-0dc8-4d4b-8682-77082b59c03f", "session_id": ccSession})
}

func ccAssistant(text, errName string) string {
	m := map[string]any{
		"type": "assistant",
		"message": map[string]any{
			"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "text", "text": text}},
		},
		"parent_tool_use_id": nil, "session_id": ccSession, "uuid": "c0ffee00-0000-4000-8000-000000000001",
	}
	if errName != "" {
		m["error"] = errName
	}
	return jsonLine(m)
}

func ccResult(isError bool, subtype, text string, apiStatus int) string {
	m := map[string]any{
		"type": "result", "subtype": subtype, "is_error": isError, "duration_ms": 1200, "duration_api_ms": 900,
		"num_turns": 1, "result": text, "session_id": ccSession, "total_cost_usd": 0,
		"uuid": "c0ffee00-0000-4000-8000-000000000002",
	}
	if apiStatus != 0 {
		m["api_error_status"] = apiStatus
	} else {
		m["api_error_status"] = nil
	}
	return jsonLine(m)
}

func ccRetry(attempt, errStatus int, errName string) string {
	return jsonLine(map[string]any{"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": 10,
		"retry_delay_ms": 600, "error_status": errStatus, "error": errName, "session_id": ccSession, "uuid": "c0ffee00-0000-4000-8000-000000000003"})
}

func TestClassifyClaudeCode(t *testing.T) {
	t.Parallel()
	ny := zone(t, "America/New_York")
	reset := now.Add(4 * time.Hour) // resetsAt of the rate_limit_events
	rs := reset.Unix()
	// A case without a loc is read in New York.
	tests := []cliCase{
		// Exit 0 is ok whatever was printed.
		{
			name:   "exit 0 with a rejected event and a limit text is ok",
			exit:   0,
			stdout: lines(ccInit(), ccRate("rejected", rs, "five_hour", nil), ccResult(true, "success", ccRome, 429)),
			want:   want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0"},
		},
		{
			name:   "exit 0 observes allowed_warning utilization",
			exit:   0,
			stdout: lines(ccInit(), ccRate("allowed_warning", rs, "seven_day", map[string]any{"utilization": 0.9}), ccResult(false, "success", "done", 0)),
			want:   want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0", obs: 1},
		},
		// rate_limit_event: only status decides.
		{
			name: "rejected rate_limit_event with result is_error 429",
			exit: 1,
			stdout: lines(ccInit(), ccRate("rejected", rs, "five_hour", map[string]any{"utilization": 1.0}),
				ccAssistant(ccRome, "rate_limit"), ccResult(true, "success", ccRome, 429)),
			want: want{class: provider.ClassQuota, resource: "five_hour", reset: reset, retryAfter: -1, reason: "rate_limit_event status rejected (five_hour); resetsAt", obs: 1},
		},
		{
			name:   "rejected event without resetsAt takes the text's reset",
			exit:   1,
			stdout: lines(ccRate("rejected", 0, "seven_day", nil), ccResult(true, "success", ccSeoul, 429)),
			want:   want{class: provider.ClassQuota, resource: "seven_day", reset: at(t, "Asia/Seoul", 2026, 8, 6, 10, 0), retryAfter: -1, reason: "reset from the text", obs: 1},
		},
		{
			name:   "rejected event with resetsAt in epoch milliseconds: reset unknown",
			exit:   1,
			stdout: lines(ccRate("rejected", rs*1000, "five_hour", nil), ccResult(true, "success", "limited", 429)),
			want:   want{class: provider.ClassQuota, resource: "five_hour", retryAfter: -1, reason: "reset unknown"},
		},
		{
			name: "allowed with overageStatus rejected is not a limit",
			exit: 1,
			stdout: lines(ccRate("allowed", rs, "five_hour", map[string]any{"overageStatus": "rejected", "overageDisabledReason": "org_level_disabled", "utilization": 0.42}),
				ccResult(true, "error_during_execution", "", 0)),
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "result is_error (subtype error_during_execution)", obs: 1},
		},
		{
			name:   "allowed_warning then a server error is transient",
			exit:   1,
			stdout: lines(ccRate("allowed_warning", rs, "five_hour", map[string]any{"utilization": 0.95}), ccResult(true, "success", `API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, 500)),
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "api_error_status 500", obs: 1},
		},
		// The result: subtype success does not mean success.
		{
			name:   "result is_error 429 with the account text is secondary",
			exit:   1,
			stdout: lines(ccInit(), ccResult(true, "success", ccAccount, 429)),
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "api_error_status 429 (subtype success); no retry-after"},
		},
		{
			name:   "result is_error 429 with a usage-limit text is quota",
			exit:   1,
			stdout: lines(ccInit(), ccResult(true, "success", ccTokyo, 429)),
			want:   want{class: provider.ClassQuota, resource: "five_hour", reset: at(t, "Asia/Tokyo", 2026, 8, 6, 20, 30), retryAfter: -1, reason: "api_error_status 429", obs: 1},
		},
		{
			name:   "result is_error 429 with a stated wait",
			exit:   1,
			stdout: lines(ccResult(true, "success", "Rate limited. Please try again in 30 seconds.", 429)),
			want:   want{class: provider.ClassSecondary, retryAfter: 30 * time.Second, reason: "the text says wait 30s"},
		},
		{
			name:   "result is_error 401 is auth",
			exit:   1,
			stdout: lines(ccResult(true, "success", "Invalid API key · Please run /login", 401)),
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "api_error_status 401"},
		},
		{
			name:   "result is_error 402 is quota billing",
			exit:   1,
			stdout: lines(ccResult(true, "success", "Credit balance is too low", 402)),
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "result is_error 529 overloaded is transient",
			exit:   1,
			stdout: lines(ccResult(true, "success", `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529)),
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "api_error_status 529"},
		},
		{
			name:   "result is_error 400 credit balance is quota",
			exit:   1,
			stdout: lines(ccResult(true, "success", `API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`, 400)),
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "API Error: 400 invalid_request_error (billing)"},
		},
		// The assistant message's error field.
		{
			name:   "assistant error rate_limit with a usage-limit text",
			exit:   1,
			stdout: lines(ccInit(), ccAssistant(ccRecife, "rate_limit"), ccResult(true, "success", ccRecife, 0)),
			want:   want{class: provider.ClassQuota, reset: at(t, "America/Recife", 2027, 4, 23, 16, 0), retryAfter: -1, reason: "assistant error rate_limit with usage-limit text"},
		},
		{
			name:   "assistant error authentication_failed",
			exit:   1,
			stdout: lines(ccAssistant("Invalid API key · Please run /login", "authentication_failed"), ccResult(true, "success", "Invalid API key · Please run /login", 0)),
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "assistant error authentication_failed"},
		},
		{
			name:   "assistant error billing_error",
			exit:   1,
			stdout: lines(ccAssistant("Credit balance is too low", "billing_error"), ccResult(true, "success", "Credit balance is too low", 0)),
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "assistant error billing_error (billing)"},
		},
		{
			name:   "assistant error server_error",
			exit:   1,
			stdout: lines(ccAssistant("API Error: 500", "server_error"), ccResult(true, "success", "API Error: 500", 0)),
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "assistant error server_error"},
		},
		{
			name:   "assistant error invalid_request",
			exit:   1,
			stdout: lines(ccAssistant("API Error: 400 prompt is too long", "invalid_request"), ccResult(true, "success", "API Error: 400 prompt is too long", 0)),
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "assistant error invalid_request"},
		},
		// Retry notices are not quotas.
		{
			name: "api_retry rate_limit notices, then a failure that is not a limit",
			exit: 1,
			stdout: lines(ccInit(), ccRetry(1, 429, "rate_limit"), ccRetry(2, 429, "rate_limit"),
				ccResult(true, "error_max_turns", "", 0)),
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "result is_error (subtype error_max_turns)"},
		},
		{
			name:   "api_retry notices and a killed run",
			exit:   143,
			stdout: lines(ccInit(), ccRetry(1, 529, "overloaded")),
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 143"},
		},
		{
			name:   "a limit text quoted in the conversation is not a limit",
			exit:   1,
			stdout: lines(ccInit(), ccAssistant("The test expects "+ccRome, ""), ccResult(true, "error_during_execution", "", 0)),
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "error_during_execution"},
		},
		// Every text era (text output, stderr).
		{
			name:   "pipe era with epoch seconds",
			exit:   1,
			stdout: ccPipe + "\n",
			want:   want{class: provider.ClassQuota, reset: time.Unix(1749924000, 0), retryAfter: -1, reason: "usage-limit text"},
		},
		{
			name:   "pipe era with epoch milliseconds: reset unknown",
			exit:   1,
			stdout: "Claude AI usage limit reached|1749924000000\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "will reset at 5pm (Europe/Warsaw), later today",
			exit:   1,
			stdout: ccWarsaw + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "Europe/Warsaw", 2026, 8, 5, 17, 0), retryAfter: -1, reason: "usage-limit text"},
		},
		{
			name:   "5-hour limit, resets 1am without a zone: loc, already past, tomorrow",
			exit:   1,
			stderr: cc5Hour + "\n",
			want:   want{class: provider.ClassQuota, resource: "five_hour", reset: at(t, "America/New_York", 2026, 8, 6, 1, 0), retryAfter: -1, reason: "5-hour limit reached", obs: 1},
		},
		{
			name:   "5-hour limit without a zone read in another loc",
			exit:   1,
			stderr: cc5Hour + "\n",
			loc:    time.UTC,
			want:   want{class: provider.ClassQuota, resource: "five_hour", reset: time.Date(2026, 8, 6, 1, 0, 0, 0, time.UTC), retryAfter: -1, reason: "5-hour limit reached", obs: 1},
		},
		{
			name:   "weekly limit, 10am in Seoul already past: tomorrow",
			exit:   1,
			stdout: ccSeoul + "\n",
			want:   want{class: provider.ClassQuota, resource: "seven_day", reset: at(t, "Asia/Seoul", 2026, 8, 6, 10, 0), retryAfter: -1, reason: "Weekly limit reached", obs: 1},
		},
		{
			name:   "hit your limit, 4:50am in Rome already past: tomorrow",
			exit:   1,
			stdout: ccRome + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "Europe/Rome", 2026, 8, 6, 4, 50), retryAfter: -1, reason: "You've hit your limit"},
		},
		{
			name:   "a date without a year already past: next year",
			exit:   1,
			stdout: ccRecife + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "America/Recife", 2027, 4, 23, 16, 0), retryAfter: -1, reason: "Apr 23 at 4pm"},
		},
		{
			name:   "session limit with the /login line",
			exit:   1,
			stdout: ccTokyo + "\n" + ccLogin + "\n",
			want:   want{class: provider.ClassQuota, resource: "five_hour", reset: at(t, "Asia/Tokyo", 2026, 8, 6, 20, 30), retryAfter: -1, reason: "session limit", obs: 1},
		},
		{
			name:   "weekly limit with a date and no zone: loc",
			exit:   1,
			stdout: ccWeekly + "\n",
			want:   want{class: provider.ClassQuota, resource: "seven_day", reset: at(t, "America/New_York", 2026, 9, 15, 19, 0), retryAfter: -1, reason: "weekly limit", obs: 1},
		},
		{
			name:   "usage form with a comma: Jan 12, 10:59am",
			exit:   1,
			stdout: "You've hit your limit · " + strings.ToLower(ccUsage[:1]) + ccUsage[1:] + "\n",
			want:   want{class: provider.ClassQuota, reset: at(t, "America/New_York", 2027, 1, 12, 10, 59), retryAfter: -1, reason: "Jan 12, 10:59am"},
		},
		{
			name:   "a time just past (within PastGrace) is today's",
			exit:   1,
			stdout: "You've hit your limit · resets 11:58am (UTC)\n",
			want:   want{class: provider.ClassQuota, reset: time.Date(2026, 8, 5, 11, 58, 0, 0, time.UTC), retryAfter: -1, reason: "11:58am"},
		},
		{
			name:   "a time past by more than PastGrace is tomorrow's",
			exit:   1,
			stdout: "You've hit your limit · resets 11:50am (UTC)\n",
			want:   want{class: provider.ClassQuota, reset: time.Date(2026, 8, 6, 11, 50, 0, 0, time.UTC), retryAfter: -1, reason: "11:50am"},
		},
		{
			name:   "an unknown zone leaves the reset unknown",
			exit:   1,
			stdout: "You've hit your limit · resets 4:50am (Mars/Olympus_Mons)\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "an impossible date leaves the reset unknown",
			exit:   1,
			stdout: "You've hit your limit · resets Feb 30 at 4pm (UTC)\n",
			want:   want{class: provider.ClassQuota, retryAfter: -1, reason: "reset unknown"},
		},
		// Output formats.
		{
			name:   "--output-format json: one result object",
			exit:   1,
			stdout: ccResult(true, "success", "You've hit your limit · resets 4pm (UTC)", 429) + "\n",
			want:   want{class: provider.ClassQuota, reset: time.Date(2026, 8, 5, 16, 0, 0, 0, time.UTC), retryAfter: -1, reason: "api_error_status 429"},
		},
		{
			name:   "--output-format json --verbose: an array of events",
			exit:   1,
			stdout: "[" + ccInit() + ",\n" + ccRate("rejected", rs, "seven_day_opus", nil) + "," + ccResult(true, "success", "Opus weekly limit reached", 429) + "]\n",
			want:   want{class: provider.ClassQuota, resource: "seven_day_opus", reset: reset, retryAfter: -1, reason: "rate_limit_event status rejected", obs: 1},
		},
		// Other texts.
		{
			name:   "text: Invalid API key",
			exit:   1,
			stdout: "Invalid API key · Please run /login\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: `"invalid api key"`},
		},
		{
			name:   "text: API Error 529 overloaded",
			exit:   1,
			stdout: `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "API Error: 529"},
		},
		{
			name:   "text: API Error 429 account limit",
			exit:   1,
			stdout: ccAccount + "\n",
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "API Error: 429 rate_limit_error"},
		},
		{
			name:   "network failure",
			exit:   1,
			stderr: "Error: connect ECONNREFUSED 127.0.0.1:443\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "econnrefused"},
		},
		{
			name:   "exit 1 and nothing else",
			exit:   1,
			stdout: "something went wrong\n",
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
	}
	runCases(t, tests, ClassifyClaudeCode, ProviderClaudeCode, ny)
}

func TestClaudeCodeObservations(t *testing.T) {
	t.Parallel()
	reset := now.Add(3 * time.Hour)
	stdout := lines(ccInit(),
		ccRate("allowed_warning", reset.Unix(), "seven_day", map[string]any{"utilization": 0.9}),
		ccRate("rejected", reset.Unix(), "five_hour", nil),
		ccResult(true, "success", "You've hit your limit", 429))
	got := ClassifyClaudeCode(1, []byte(stdout), nil, now, time.UTC)
	if got.Class != provider.ClassQuota || got.Resource != "five_hour" || !got.ResetAt.Equal(reset) {
		t.Fatalf("got %+v", got)
	}
	if len(got.Observations) != 2 {
		t.Fatalf("observations = %+v", got.Observations)
	}
	week, five := got.Observations[0], got.Observations[1]
	if week.Resource != "seven_day" || week.Limit != 100 || week.Remaining != 10 || week.Cause != quota.CauseNone || week.Source != quota.SourceHeaders {
		t.Errorf("seven_day = %+v", week)
	}
	if five.Resource != "five_hour" || five.Remaining != 0 || five.Cause != quota.CauseExhausted || five.Source != quota.SourceRejected || five.RawReset != reset.Unix() {
		t.Errorf("five_hour = %+v", five)
	}
	// The same stream with exit 0 keeps only the allowed window.
	ok := ClassifyClaudeCode(0, []byte(stdout), nil, now, time.UTC)
	if ok.Class != provider.ClassOK || len(ok.Observations) != 1 || ok.Observations[0].Resource != "seven_day" {
		t.Errorf("exit 0: %+v", ok)
	}
}

func TestSessionID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, stdout, want string
	}{
		{"stream-json", lines(ccInit(), ccRate("rejected", 1785945600, "five_hour", nil), ccResult(true, "success", ccRome, 429)), ccSession},
		{"json result", ccResult(true, "success", ccRome, 429), ccSession},
		{"verbose json array", "[" + ccInit() + "," + ccResult(false, "success", "ok", 0) + "]", ccSession},
		{"the last id wins", lines(ccInit(), strings.ReplaceAll(ccResult(false, "success", "ok", 0), ccSession, "2bf1c3d4-0000-4000-8000-00000000abcd")), "2bf1c3d4-0000-4000-8000-00000000abcd"},
		{"text output", ccRome + "\n", ""},
		{"an id that is not one", `{"type":"result","session_id":"a b; rm -rf /"}` + "\n", ""},
		{"empty", "", ""},
	} {
		if got := SessionID([]byte(tt.stdout), nil); got != tt.want {
			t.Errorf("%s: SessionID = %q, want %q", tt.name, got, tt.want)
		}
	}
	// A stream longer than the scanned tail: the head still gives the id.
	long := ccInit() + "\n" + strings.Repeat("x", 2*maxScan) + "\n"
	if got := SessionID([]byte(long), nil); got != ccSession {
		t.Errorf("long stream: SessionID = %q", got)
	}
}
