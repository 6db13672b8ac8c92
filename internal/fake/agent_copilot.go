package fake

import (
	"fmt"
	"strings"
)

// copilot imitates GitHub Copilot CLI's `copilot -p PROMPT`, which prints
// its answer on stdout and errors on stderr; with --output-format json,
// its JSONL events on stdout instead: session.start with the sessionId, an
// assistant.message or a session.error {"errorType","message",
// "statusCode"}, and a result event with the sessionId. --resume ID (or
// --resume=ID) continues session ID. Per mode (texts from
// github/copilot-cli issues; session.error's fields as the Copilot SDK
// names them):
//
//   - ok: "done"; exit 0.
//   - limit: the premium-request quota, "✗ 402 You have no quota (Request
//     ID: …)" (json: errorType "quota", statusCode 402); Copilot prints no
//     reset (its quota resets monthly), so an EPOCH is ignored; exit 1.
//   - limit-text [EPOCH]: a long rate limit, "Sorry, you've hit a rate
//     limit that restricts the number of Copilot model requests you can
//     make within a specific time period. Please try again in N hours."
//     (N the whole hours to the reset, at least 1; json: errorType
//     "rate_limit", statusCode 429); exit 1.
//   - secondary [SECONDS]: "You've hit your global rate limit. Please
//     upgrade your plan or wait 6 seconds for your limit to reset." (json:
//     errorType "rate_limit"); exit 1.
//   - auth: "Error: No authentication information found." and how to log
//     in (json: errorType "authentication", statusCode 401); exit 1.
//   - overloaded: "✗ Request failed: 503 Service Unavailable"; exit 1.
//   - fail: "✗ Error: tool execution failed"; exit 1.
//
// Without json, the run ends with "Resume this session with copilot
// --resume=<id>" on stderr, as the interactive CLI prints it
// (copilot-cli#1342).
//
// Departures from the real CLI (closed source; exit codes unconfirmed):
// every failure exits 1; the overloaded and fail texts are stand-ins, since
// no public report quotes Copilot's; that -p prints the resume hint, the
// errorType of an auth failure and the result event's fields are
// unconfirmed; other flags are ignored.
func (r *agentRun) copilot() int {
	resumed, _ := flagValue(r.args, "--resume")
	sid := r.sessionID(resumed)
	req := strings.ToUpper(r.sessionID("")[:8])
	jsonOut := false
	if v, _ := flagValue(r.args, "--output-format"); v == "json" {
		jsonOut = true
	}
	var text, errType string
	status := 0
	switch r.mode {
	case ModeOK:
	case ModeLimit:
		text = fmt.Sprintf("✗ 402 You have no quota (Request ID: %s:3D0A1B:8E2F1A:9B3C4D:67F0A1B2)", req)
		errType, status = "quota", 402
	case ModeLimitText:
		hours := max(int64(r.reset().Sub(r.now).Hours()), 1)
		text = fmt.Sprintf("✗ Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make within a specific time period. Please try again in %d %s.",
			hours, plural(hours, "hour"))
		errType, status = "rate_limit", 429
	case ModeSecondary:
		s := r.wait(6)
		text = fmt.Sprintf("✗ You've hit your global rate limit. Please upgrade your plan or wait %d %s for your limit to reset.", s, plural(s, "second"))
		errType, status = "rate_limit", 429
	case ModeAuth:
		text = "Error: No authentication information found.\nRun 'copilot' and enter /login, or set GH_TOKEN or GITHUB_TOKEN."
		errType, status = "authentication", 401
	case ModeOverloaded:
		text, errType, status = "✗ Request failed: 503 Service Unavailable", "error", 503
	case ModeFail:
		text, errType = "✗ Error: tool execution failed", "error"
	}
	code := 0
	if r.mode != ModeOK {
		code = 1
	}
	if jsonOut {
		ev := func(typ string, data ordered) string {
			return ordered{{"type", typ}, {"data", data}, {"id", fmt.Sprintf("%s-%d", sid[:8], len(typ))}, {"timestamp", r.now.UTC().Format("2006-01-02T15:04:05.000Z")}}.line()
		}
		writeLines(r.stdout, ev("session.start", ordered{{"sessionId", sid}, {"copilotVersion", AgentVersion}}))
		if code == 0 {
			writeLines(r.stdout, ev("assistant.message", ordered{{"content", "done"}}))
		} else {
			msg := strings.TrimPrefix(strings.SplitN(text, "\n", 2)[0], "✗ ")
			data := ordered{{"errorType", errType}, {"message", msg}}
			if status != 0 {
				data = append(data, kv{"statusCode", status})
			}
			writeLines(r.stdout, ev("session.error", data))
		}
		writeLines(r.stdout, ordered{{"type", "result"}, {"sessionId", sid}, {"exitCode", code}, {"usage", ordered{{"premiumRequests", 1}}}}.line())
		return code
	}
	if code == 0 {
		fmt.Fprintln(r.stdout, "done")
	} else {
		fmt.Fprintln(r.stderr, text)
	}
	fmt.Fprintf(r.stderr, "Resume this session with copilot --resume=%s\n", sid)
	return code
}

// plural is unit, with an "s" unless n is 1.
func plural(n int64, unit string) string {
	if n == 1 {
		return unit
	}
	return unit + "s"
}
