package fake

import (
	"fmt"
	"time"
)

// antigravity imitates Antigravity CLI's `agy -p PROMPT`: the answer on
// stdout, errors on stderr; with --output-format json, one object
// {"conversation_id","status","response"|"error"} on stdout; with
// stream-json, an init event with the conversation_id, a step_update and a
// result event carrying it again. --conversation ID continues conversation
// ID. Per mode (texts from google-antigravity/antigravity-cli issues):
//
//   - ok: "done"; exit 0.
//   - limit [EPOCH]: "⚠ Individual quota reached. Please upgrade your
//     subscription to increase your limits." and "Resets in 143h57m55s."
//     (the wait to the reset as a Go duration; an hour without EPOCH);
//     exit 1.
//   - limit-text [EPOCH]: "RESOURCE_EXHAUSTED: Individual quota reached.
//     Contact your administrator to enable overages. Resets in …" as text,
//     whatever the format; exit 1.
//   - secondary: the API's 429, "RESOURCE_EXHAUSTED (code 429): Resource
//     has been exhausted (e.g. check quota)." (Antigravity states no short
//     throttle: this is a quota without a reset); exit 1.
//   - auth: "error getting token source: You are not logged into
//     Antigravity."; exit 1.
//   - overloaded: "UNAVAILABLE (code 503): The model is overloaded. Please
//     try again later."; exit 1.
//   - fail: "Agent execution terminated due to error."; exit 1.
//
// Departures from the real CLI: the exit code of a failure (1), the event
// and field names other than conversation_id, and where the auth and
// overload texts appear are unconfirmed; the plain --print output carries
// no conversation id, as the real one (antigravity-cli#7); other flags are
// ignored.
func (r *agentRun) antigravity() int {
	resumed, _ := flagValue(r.args, "--conversation")
	conv := r.sessionID(resumed)
	format, _ := flagValue(r.args, "--output-format")
	wait := func() string {
		d := r.reset().Sub(r.now).Truncate(time.Second)
		return max(d, time.Second).String()
	}
	msg := ""
	switch r.mode {
	case ModeOK:
	case ModeLimit:
		msg = "⚠ Individual quota reached. Please upgrade your subscription to increase your limits.\nResets in " + wait() + "."
	case ModeLimitText:
		msg = "RESOURCE_EXHAUSTED: Individual quota reached. Contact your administrator to enable overages. Resets in " + wait() + "."
		format = "text"
	case ModeSecondary:
		msg = "RESOURCE_EXHAUSTED (code 429): Resource has been exhausted (e.g. check quota)."
	case ModeAuth:
		msg = "error getting token source: You are not logged into Antigravity."
	case ModeOverloaded:
		msg = "UNAVAILABLE (code 503): The model is overloaded. Please try again later."
	case ModeFail:
		msg = "Agent execution terminated due to error."
	}
	code := 0
	if msg != "" {
		code = 1
	}
	result := ordered{{"type", "result"}, {"conversation_id", conv}}
	whole := ordered{{"conversation_id", conv}}
	if code == 0 {
		result = append(result, kv{"status", "success"}, kv{"response", "done"})
		whole = append(whole, kv{"status", "DONE"}, kv{"response", "done"})
	} else {
		result = append(result, kv{"status", "error"}, kv{"error", ordered{{"message", msg}}})
		whole = append(whole, kv{"status", "ERROR"}, kv{"error", ordered{{"message", msg}}})
	}
	switch format {
	case "json":
		writeLines(r.stdout, whole.line())
	case "stream-json":
		writeLines(r.stdout,
			ordered{{"type", "init"}, {"conversation_id", conv}, {"model", "Gemini 3.5 Flash (Medium)"}}.line(),
			ordered{{"type", "step_update"}, {"conversation_id", conv}, {"step_index", 0}}.line(),
			result.line())
	default:
		if code == 0 {
			fmt.Fprintln(r.stdout, "done")
		} else {
			fmt.Fprintln(r.stderr, msg)
		}
	}
	return code
}
