package fake

import (
	"fmt"
	"os"
	"time"
)

// codex imitates `codex exec` (codex-rs). With --json it prints its JSONL
// events (thread.started with the thread id, turn.started, then either
// item.completed and turn.completed, or an error event and turn.failed
// carrying the error's message); without it, its header on stderr (with
// "session id: <thread id>"), then the answer on stdout or "ERROR:
// <message>" on stderr. `codex exec resume ID PROMPT` continues thread
// ID. Per mode (messages as codex-rs's
// error.rs writes them):
//
//   - ok: the agent message "done"; exit 0.
//   - limit [EPOCH]: "You've hit your usage limit. Upgrade to Pro
//     (https://openai.com/chatgpt/pricing), visit
//     https://chatgpt.com/codex/settings/usage to purchase more credits or
//     try again at 3:28 PM." (a Plus plan), the reset in FAKE_AGENT_TZ as
//     "3:28 PM" on the same day, else "Aug 8th, 2026 12:30 PM"; exit 1.
//   - limit-text [EPOCH]: the same message as plain "ERROR:" text, even
//     with --json; exit 1.
//   - secondary: "exceeded retry limit, last status: 429 Too Many
//     Requests, request id: …"; exit 1 (Codex states no wait).
//   - auth: "Your access token could not be refreshed because your refresh
//     token has expired. Please log out and sign in again."; exit 1.
//   - overloaded: "We're currently experiencing high demand, which may
//     cause temporary errors."; exit 1.
//   - fail: "Codex ran out of room in the model's context window. …";
//     exit 1.
//
// Departures from the real CLI: `codex exec resume ID` only reuses the
// thread id; no reasoning, command or file-change items are printed; the
// human-readable output is reduced to the header, the answer or the error
// line (that the real header holds a "session id:" line is unconfirmed); the
// exit code of a failed turn is 1 (third-party fixtures show 1; the code
// is unconfirmed).
func (r *agentRun) codex() int {
	jsonOut := hasFlag(r.args, "--json", "--experimental-json")
	resumed := ""
	for i, a := range r.args {
		if a == "resume" && i+1 < len(r.args) {
			resumed = r.args[i+1]
			break
		}
	}
	thread := r.sessionID(resumed)
	msg := ""
	switch r.mode {
	case ModeOK:
	case ModeLimit, ModeLimitText:
		msg = "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing), visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at " +
			codexClock(r.reset(), r.now, r.zone) + "."
		if r.mode == ModeLimitText {
			jsonOut = false
		}
	case ModeSecondary:
		msg = "exceeded retry limit, last status: 429 Too Many Requests, request id: req_" + thread[:8]
	case ModeAuth:
		msg = "Your access token could not be refreshed because your refresh token has expired. Please log out and sign in again."
	case ModeOverloaded:
		msg = "We're currently experiencing high demand, which may cause temporary errors."
	case ModeFail:
		msg = "Codex ran out of room in the model's context window. Start a new conversation or clear earlier history before retrying."
	}
	if !jsonOut {
		r.codexHeader(thread)
		if msg == "" {
			fmt.Fprintln(r.stdout, "done")
			return 0
		}
		fmt.Fprintln(r.stderr, "ERROR: "+msg)
		return 1
	}
	writeLines(r.stdout,
		ordered{{"type", "thread.started"}, {"thread_id", thread}}.line(),
		ordered{{"type", "turn.started"}}.line())
	if msg == "" {
		writeLines(r.stdout,
			ordered{{"type", "item.completed"}, {"item", ordered{{"id", "item_0"}, {"type", "agent_message"}, {"text", "done"}}}}.line(),
			ordered{{"type", "turn.completed"}, {"usage", ordered{{"input_tokens", 24}, {"cached_input_tokens", 0}, {"output_tokens", 5}}}}.line())
		return 0
	}
	writeLines(r.stdout,
		ordered{{"type", "error"}, {"message", msg}}.line(),
		ordered{{"type", "turn.failed"}, {"error", ordered{{"message", msg}}}}.line())
	return 1
}

// codexHeader prints what `codex exec` prints on stderr before the turn
// without --json: its version and settings, with the session (thread) id.
func (r *agentRun) codexHeader(thread string) {
	cwd, _ := os.Getwd()
	writeLines(r.stderr,
		"OpenAI Codex v"+AgentVersion+" (research preview)",
		"--------",
		"workdir: "+cwd,
		"model: gpt-5-codex",
		"provider: openai",
		"approval: never",
		"sandbox: read-only",
		"session id: "+thread,
		"--------")
}

// codexClock renders a reset as codex-rs does, in local time without a
// zone: "3:28 PM" on the same day, else "Aug 8th, 2026 12:30 PM".
func codexClock(reset, now time.Time, zone *time.Location) string {
	t, n := reset.In(zone), now.In(zone)
	if t.Year() == n.Year() && t.YearDay() == n.YearDay() {
		return t.Format("3:04 PM")
	}
	return t.Format("Jan 2") + daySuffix(t.Day()) + t.Format(", 2006 3:04 PM")
}

// daySuffix is the English ordinal suffix of a day of the month.
func daySuffix(day int) string {
	switch {
	case day >= 11 && day <= 13:
		return "th"
	case day%10 == 1:
		return "st"
	case day%10 == 2:
		return "nd"
	case day%10 == 3:
		return "rd"
	}
	return "th"
}
