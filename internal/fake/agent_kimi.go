package fake

import (
	"fmt"
	"strings"
)

// Kimi Code's exit codes in print mode (kimi_cli/cli ExitCode).
const (
	kimiExitFailure   = 1
	kimiExitRetryable = 75 // 429, 5xx, connection, timeout
)

// kimi imitates Kimi Code's `kimi --print`, which prints the openai SDK's
// error, "Error code: <status> - <the error body as a Python dict repr>",
// on stdout and exits 75 for a retryable status (429, 5xx) and 1
// otherwise. Per mode (texts from MoonshotAI/kimi-cli issues):
//
//   - ok: "done" (with --output-format stream-json, {"role":"assistant",
//     "content":"done"}); exit 0.
//   - limit: the daily token limit, 429 rate_limit_reached_error "Your
//     account org-… request reached organization TPD rate limit, current:
//     1526210, limit: 1500000"; Kimi prints no reset, so an EPOCH is
//     ignored; exit 75.
//   - limit-text: an expired membership, 402 "Membership expired, please
//     renew your plan"; exit 1.
//   - secondary [SECONDS]: the per-minute limit, 429 "… request reached
//     organization max RPM: 20, please try again after 1 seconds" (the
//     server's words, "1 seconds" included); exit 75.
//   - auth: 401 "Authorization failed. Your session may have expired.";
//     exit 1.
//   - overloaded: 429 engine_overloaded_error "The engine is currently
//     overloaded, please try again later"; exit 75.
//   - fail: "Max steps reached: 100"; exit 1.
//
// Every run ends with "To resume this session: kimi -r <id>" on stderr;
// -S/--session ID (or -r/--resume ID) continues session ID. The prompt is
// -p/--prompt or -c/--command.
//
// Departures from the real CLI: it prints through rich, which wraps long
// lines at the terminal's width (80 columns off a terminal); the fake
// never wraps. The error type of the 402 is a stand-in; that the resume
// hint goes to stderr in print mode is reported by integrators, not
// documented.
func (r *agentRun) kimi() int {
	resumed, _ := flagValue(r.args, "--session", "-S", "--resume", "-r")
	code := r.kimiRun()
	fmt.Fprintf(r.stderr, "\nTo resume this session: kimi -r %s\n", r.sessionID(resumed))
	return code
}

// kimiRun prints the run's output and returns its exit code.
func (r *agentRun) kimiRun() int {
	org := "org-" + strings.ReplaceAll(r.sessionID("")[:8], "-", "")
	providerError := func(status int, typ, msg string) {
		fmt.Fprintf(r.stdout, "Error code: %d - {'error': {'message': %s, 'type': '%s'}}\n", status, pyQuote(msg), typ)
	}
	switch r.mode {
	case ModeOK:
		if v, _ := flagValue(r.args, "--output-format"); v == "stream-json" {
			fmt.Fprintln(r.stdout, ordered{{"role", "assistant"}, {"content", "done"}}.line())
		} else {
			fmt.Fprintln(r.stdout, "done")
		}
		return 0
	case ModeLimit:
		providerError(429, "rate_limit_reached_error", fmt.Sprintf("Your account %s request reached organization TPD rate limit, current: 1526210, limit: 1500000", org))
		return kimiExitRetryable
	case ModeLimitText:
		providerError(402, "exceeded_current_quota_error", "Membership expired, please renew your plan")
		return kimiExitFailure
	case ModeSecondary:
		s := r.wait(1)
		providerError(429, "rate_limit_reached_error", fmt.Sprintf("Your account %s request reached organization max RPM: 20, please try again after %d seconds", org, s))
		return kimiExitRetryable
	case ModeAuth:
		providerError(401, "invalid_authentication_error", "Authorization failed. Your session may have expired.")
		return kimiExitFailure
	case ModeOverloaded:
		providerError(429, "engine_overloaded_error", "The engine is currently overloaded, please try again later")
		return kimiExitRetryable
	}
	fmt.Fprintln(r.stdout, "Max steps reached: 100")
	return kimiExitFailure
}

// pyQuote quotes s as Python's repr does: single quotes, or double quotes
// when s holds a single quote and no double quote.
func pyQuote(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	var b strings.Builder
	b.WriteString(q)
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case string(c) == q:
			b.WriteString(`\` + q)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteString(q)
	return b.String()
}
