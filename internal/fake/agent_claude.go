package fake

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// claudeModel is the model the fake Claude Code reports.
const claudeModel = "claude-sonnet-4-5-20250929"

// claudeAccountLimit is the Anthropic API's 429 body for a subscription
// that ran out, as Claude Code prints it after its retries.
const claudeAccountLimit = `API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CXp749yZnKiwC2nVdB91g"}`

// claudeOverloaded is the API's 529 as Claude Code prints it.
const claudeOverloaded = `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CXp749yZnKiwC2nVdB91h"}`

// claude imitates `claude -p` (Claude Code 2.1). With --output-format
// stream-json it prints the session's events, one JSON object a line
// (system init first, every event with session_id); with json, the result
// object alone; with text (the default), the result's text. Per mode:
//
//   - ok: an assistant message "done" and a result {"subtype":"success",
//     "is_error":false}; exit 0.
//   - limit [EPOCH]: a rate_limit_event {"status":"rejected","resetsAt":
//     EPOCH,"rateLimitType":"five_hour",…}, an assistant message whose
//     "error" is "rate_limit" and whose text is "You've hit your limit ·
//     resets 4pm (UTC)" (the reset in FAKE_AGENT_TZ, with a date when it
//     is more than a day away), and a result with "subtype":"success",
//     "is_error":true, "api_error_status":429 and that text; exit 1.
//   - limit-text [EPOCH]: the same text alone on stdout, whatever the
//     output format; exit 1.
//   - secondary: two system/api_retry events (error rate_limit, status
//     429), then an assistant error rate_limit and a result with
//     api_error_status 429 whose text is the API's "This request would
//     exceed your account's rate limit. Please try again later." body;
//     exit 1. Claude Code states no wait, so a number is ignored.
//   - auth: assistant error authentication_failed, result "Invalid API key
//     · Please run /login" with api_error_status 401; exit 1.
//   - overloaded: api_retry events (error overloaded, 529), assistant error
//     server_error, result "API Error: 529 {…overloaded_error…}" with
//     api_error_status 529; exit 1.
//   - fail: a result with "subtype":"error_during_execution"; exit 1.
//
// Departures from the real CLI: --resume and --session-id only set the
// session id; every other flag is accepted and ignored (stream-json does
// not insist on --verbose); the init event lists one tool; usage and cost
// are fixed; a failed run without a result text prints "Error: execution
// failed" on stderr in text mode (what the real CLI prints there is not
// documented).
func (r *agentRun) claude() int {
	resumed, _ := flagValue(r.args, "--resume", "-r")
	if resumed == "" {
		resumed, _ = flagValue(r.args, "--session-id")
	}
	format, _ := flagValue(r.args, "--output-format")
	sid := r.sessionID(resumed)
	c := claudeRun{r: r, sid: sid}
	text := "done"
	isError := false
	apiStatus := 0
	subtype := "success"
	var events []string
	switch r.mode {
	case ModeOK:
		events = append(events, c.assistant(text, ""))
	case ModeLimit, ModeLimitText:
		reset := r.reset()
		text = "You've hit your limit · resets " + claudeClock(reset, r.now, r.zone)
		if r.mode == ModeLimitText {
			fmt.Fprintln(r.stdout, text)
			return 1
		}
		events = append(events,
			c.rateLimit(reset),
			c.assistant(text, "rate_limit"))
		isError, apiStatus = true, 429
	case ModeSecondary:
		text = claudeAccountLimit
		if r.apiText != "" {
			text = r.apiText
		}
		events = append(events, c.retry(1, 429, "rate_limit"), c.retry(2, 429, "rate_limit"), c.assistant(text, "rate_limit"))
		isError, apiStatus = true, 429
	case ModeAuth:
		text = "Invalid API key · Please run /login"
		events = append(events, c.assistant(text, "authentication_failed"))
		isError, apiStatus = true, 401
	case ModeOverloaded:
		text = claudeOverloaded
		events = append(events, c.retry(1, 529, "overloaded"), c.retry(2, 529, "overloaded"), c.assistant(text, "server_error"))
		isError, apiStatus = true, 529
	case ModeFail:
		text = ""
		subtype = "error_during_execution"
		isError = true
	}
	result := c.result(subtype, isError, text, apiStatus)
	switch format {
	case "stream-json":
		writeLines(r.stdout, c.init())
		writeLines(r.stdout, events...)
		writeLines(r.stdout, result)
	case "json":
		writeLines(r.stdout, result)
	default:
		if text != "" {
			fmt.Fprintln(r.stdout, text)
		} else if isError {
			fmt.Fprintln(r.stderr, "Error: execution failed")
		}
	}
	if isError {
		return 1
	}
	return 0
}

// claudeRun renders one fake Claude Code session's events.
type claudeRun struct {
	r   *agentRun
	sid string
	n   int
}

// uuid is the next event's uuid.
func (c *claudeRun) uuid() string {
	c.n++
	h := strings.ReplaceAll(c.sid, "-", "")
	if len(h) < 32 {
		h += strings.Repeat("0", 32-len(h))
	}
	return fmt.Sprintf("%s-%s-4%s-8%s-%s%04x", h[0:8], h[8:12], h[13:16], h[17:20], h[20:28], c.n)
}

func (c *claudeRun) init() string {
	cwd, _ := os.Getwd()
	return ordered{
		{"type", "system"}, {"subtype", "init"}, {"cwd", cwd}, {"session_id", c.sid},
		{"tools", []string{"Bash"}}, {"mcp_servers", []any{}}, {"model", claudeModel},
		{"permissionMode", "default"}, {"apiKeySource", "none"}, {"uuid", c.uuid()},
	}.line()
}

func (c *claudeRun) rateLimit(reset time.Time) string {
	return ordered{
		{"type", "rate_limit_event"},
		{"rate_limit_info", ordered{
			{"status", "rejected"}, {"resetsAt", reset.Unix()}, {"rateLimitType", "five_hour"},
			{"utilization", 1.0}, {"overageStatus", "rejected"}, {"overageDisabledReason", "org_level_disabled"},
			{"isUsingOverage", false},
		}},
		{"uuid", c.uuid()}, {"session_id", c.sid},
	}.line()
}

func (c *claudeRun) retry(attempt, status int, errName string) string {
	return ordered{
		{"type", "system"}, {"subtype", "api_retry"}, {"attempt", attempt}, {"max_retries", 10},
		{"retry_delay_ms", 500 << attempt}, {"error_status", status}, {"error", errName},
		{"session_id", c.sid}, {"uuid", c.uuid()},
	}.line()
}

func (c *claudeRun) assistant(text, errName string) string {
	model := claudeModel
	if errName != "" {
		model = "<synthetic>"
	}
	o := ordered{
		{"type", "assistant"},
		{"message", ordered{
			{"id", "msg_" + strings.ReplaceAll(c.uuid(), "-", "")[:24]}, {"type", "message"}, {"role", "assistant"},
			{"model", model}, {"content", []any{ordered{{"type", "text"}, {"text", text}}}},
			{"stop_reason", "end_turn"}, {"stop_sequence", nil},
			{"usage", ordered{{"input_tokens", 0}, {"output_tokens", 0}}},
		}},
		{"parent_tool_use_id", nil}, {"session_id", c.sid}, {"uuid", c.uuid()},
	}
	if errName != "" {
		o = append(o, kv{"error", errName})
	}
	return o.line()
}

func (c *claudeRun) result(subtype string, isError bool, text string, apiStatus int) string {
	o := ordered{
		{"type", "result"}, {"subtype", subtype}, {"is_error", isError},
		{"duration_ms", 1834}, {"duration_api_ms", 1502}, {"num_turns", 1},
	}
	if subtype == "success" {
		o = append(o, kv{"result", text})
	}
	o = append(o, kv{"session_id", c.sid}, kv{"total_cost_usd", 0.0123},
		kv{"usage", ordered{{"input_tokens", 12}, {"output_tokens", 4}}}, kv{"permission_denials", []any{}})
	if apiStatus != 0 {
		o = append(o, kv{"api_error_status", apiStatus})
	}
	return append(o, kv{"uuid", c.uuid()}).line()
}

// claudeClock renders a reset as Claude Code does: "4pm (Europe/Rome)",
// "4:50am (UTC)", "Apr 23 at 4pm (America/Recife)" (with the date when the
// reset is more than a day away).
func claudeClock(reset, now time.Time, zone *time.Location) string {
	t := reset.In(zone)
	clock := t.Format("3pm")
	if t.Minute() != 0 {
		clock = t.Format("3:04pm")
	}
	if reset.Sub(now) > 24*time.Hour {
		clock = t.Format("Jan 2") + " at " + clock
	}
	return fmt.Sprintf("%s (%s)", clock, zone.String())
}
