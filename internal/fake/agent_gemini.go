package fake

import (
	"encoding/json"
	"fmt"
	"time"
)

// Gemini CLI's exit codes (packages/core/src/utils/exitCodes.ts).
const (
	geminiExitError = 1
	geminiExitAuth  = 41
	geminiExitInput = 42
)

// geminiModel is the model the fake Gemini CLI reports by default.
const geminiModel = "gemini-2.5-pro"

// gemini imitates Gemini CLI's `gemini -p PROMPT`. With --output-format
// text (the default) errors go to stderr as text; with json, as the
// pretty-printed {"error":{"type","message","code"}} of its JsonFormatter;
// with stream-json, as the result event {"type":"result","status":"error",
// "error":{"type","message"},"stats":{…}} after the init event. Per mode:
//
//   - ok: "done" (json: {"response":"done","stats":{…}}; stream-json: init,
//     an assistant message and a success result); exit 0.
//   - limit [EPOCH]: TerminalQuotaError "Usage limit reached for
//     gemini-2.5-pro. Access resets at 3:45 PM PDT." (the UI's texts; the
//     reset in FAKE_AGENT_TZ as en-US prints it, "PDT" for US zones, else
//     "GMT+9" or "UTC"); in text mode the two sentences on two lines;
//     exit 1.
//   - limit-text [EPOCH]: the text mode's lines, whatever the format;
//     exit 1.
//   - secondary [SECONDS]: text: "[API Error: Resource has been exhausted
//     (e.g. check quota). Please retry in 26s. (Status:
//     RESOURCE_EXHAUSTED)]" and the "Please wait and try again later…"
//     line; json and stream-json: RetryableQuotaError "Quota limit hit.
//     Retrying after 26s."; exit 1.
//   - auth: FatalAuthenticationError "Failed to login. Message: Request had
//     invalid authentication credentials."; exit 41.
//   - overloaded: text: "[API Error: The model is overloaded. Please try
//     again later. (Status: UNAVAILABLE)]", exit 1; json and stream-json:
//     an ApiError whose message is the API's 503 body (a JSON string inside
//     the JSON error) and exit 247 (503 mod 256, as the error's status
//     becomes the exit code).
//   - fail: FatalInputError "No input provided via stdin. …"; exit 42.
//
// The json output starts with the session's "session_id", as newer
// releases print it; --resume (-r) with a session UUID continues that
// session ("latest" or an index names one the fake does not keep: a new
// id is reported).
//
// Departures from the real CLI: a terminal quota's headless message may not
// carry the UI's "Access resets at" text (the fake always does, so that a
// reset can be scripted); stats are fixed; -m only sets the model named.
func (r *agentRun) gemini() int {
	format, _ := flagValue(r.args, "--output-format", "-o")
	model := geminiModel
	if m, ok := flagValue(r.args, "--model", "-m"); ok && m != "" {
		model = m
	}
	resumed, _ := flagValue(r.args, "--resume", "-r")
	if !uuidShaped(resumed) {
		resumed = "" // "latest" or an index: a session the fake does not keep
	}
	g := geminiRun{r: r, model: model, sid: r.sessionID(resumed)}
	if r.mode == ModeOK {
		switch format {
		case "json":
			out, _ := json.MarshalIndent(ordered{{"session_id", g.sid}, {"response", "done"}, {"stats", g.stats()}}, "", "  ")
			fmt.Fprintln(r.stdout, string(out))
		case "stream-json":
			writeLines(r.stdout, g.init(),
				ordered{{"type", "message"}, {"timestamp", g.ts()}, {"role", "assistant"}, {"content", "done"}, {"delta", true}}.line(),
				ordered{{"type", "result"}, {"timestamp", g.ts()}, {"status", "success"}, {"stats", g.stats()}}.line())
		default:
			fmt.Fprintln(r.stdout, "done")
		}
		return 0
	}
	var typ, msg, text string
	code, exit := 1, geminiExitError
	switch r.mode {
	case ModeLimit, ModeLimitText:
		typ = "TerminalQuotaError"
		usage := fmt.Sprintf("Usage limit reached for %s.", model)
		resets := "Access resets at " + geminiClock(r.reset(), r.zone) + "."
		msg, text = usage+" "+resets, usage+"\n"+resets
		if r.mode == ModeLimitText {
			format = "text"
		}
	case ModeSecondary:
		s := r.wait(26)
		typ, msg = "RetryableQuotaError", fmt.Sprintf("Quota limit hit. Retrying after %ds.", s)
		text = fmt.Sprintf("[API Error: Resource has been exhausted (e.g. check quota). Please retry in %ds. (Status: RESOURCE_EXHAUSTED)]\n", s) +
			"Please wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method"
	case ModeAuth:
		typ, msg = "FatalAuthenticationError", "Failed to login. Message: Request had invalid authentication credentials."
		text, code, exit = msg, geminiExitAuth, geminiExitAuth
	case ModeOverloaded:
		typ = "ApiError"
		msg = string(mustJSON(ordered{{"error", ordered{{"code", 503}, {"message", "The model is overloaded. Please try again later."}, {"status", "UNAVAILABLE"}}}}))
		text = "[API Error: The model is overloaded. Please try again later. (Status: UNAVAILABLE)]"
		if format == "json" || format == "stream-json" {
			code, exit = 503, 503%256
		}
	case ModeFail:
		typ, msg = "FatalInputError", "No input provided via stdin. Input can be provided by piping data into gemini or using the --prompt option."
		text, code, exit = msg, geminiExitInput, geminiExitInput
	}
	switch format {
	case "json":
		out, _ := json.MarshalIndent(ordered{{"session_id", g.sid}, {"error", ordered{{"type", typ}, {"message", msg}, {"code", code}}}}, "", "  ")
		fmt.Fprintln(r.stderr, string(out))
	case "stream-json":
		writeLines(r.stdout, g.init(),
			ordered{{"type", "result"}, {"timestamp", g.ts()}, {"status", "error"},
				{"error", ordered{{"type", typ}, {"message", msg}}}, {"stats", g.stats()}}.line())
	default:
		fmt.Fprintln(r.stderr, text)
	}
	return exit
}

// geminiRun renders one fake Gemini CLI session's events.
type geminiRun struct {
	r          *agentRun
	model, sid string
}

func (g *geminiRun) ts() string { return g.r.now.UTC().Format("2006-01-02T15:04:05.000Z") }

func (g *geminiRun) init() string {
	return ordered{{"type", "init"}, {"timestamp", g.ts()}, {"session_id", g.sid}, {"model", g.model}}.line()
}

func (g *geminiRun) stats() ordered {
	return ordered{{"total_tokens", 30}, {"input_tokens", 24}, {"output_tokens", 6}, {"duration_ms", 812}, {"tool_calls", 0}}
}

// uuidShaped reports whether s looks like a UUID: 36 characters, dashes
// at 8, 13, 18 and 23.
func uuidShaped(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		dash := i == 8 || i == 13 || i == 18 || i == 23
		if dash != (c == '-') {
			return false
		}
	}
	return true
}

// usZoneName reports whether en-US formatting prints the zone abbreviation
// name by name. A switch, not a map: the package does no work at
// initialisation (see internal/fake's doc).
func usZoneName(name string) bool {
	switch name {
	case "EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT", "AKST", "AKDT", "HST", "UTC":
		return true
	}
	return false
}

// geminiClock renders a reset as toLocaleTimeString('en-US',
// {timeZoneName: 'short'}) does: "3:45 PM PDT", "11:30 PM GMT+9".
func geminiClock(reset time.Time, zone *time.Location) string {
	t := reset.In(zone)
	name, off := t.Zone()
	if !usZoneName(name) {
		sign := "+"
		if off < 0 {
			sign, off = "-", -off
		}
		name = fmt.Sprintf("GMT%s%d", sign, off/3600)
		if m := off % 3600 / 60; m != 0 {
			name += fmt.Sprintf(":%02d", m)
		}
		if off == 0 {
			name = "UTC"
		}
	}
	return t.Format("3:04 PM") + " " + name
}
