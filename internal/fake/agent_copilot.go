package fake

import (
	"fmt"
	"strings"
)

// copilot imitates GitHub Copilot CLI's `copilot -p PROMPT`, which prints
// its answer on stdout and errors on stderr. Per mode (texts from
// github/copilot-cli issues):
//
//   - ok: "done"; exit 0.
//   - limit: the premium-request quota, "✗ 402 You have no quota (Request
//     ID: …)"; Copilot prints no reset (its quota resets monthly), so an
//     EPOCH is ignored; exit 1.
//   - limit-text [EPOCH]: a long rate limit, "Sorry, you've hit a rate
//     limit that restricts the number of Copilot model requests you can
//     make within a specific time period. Please try again in N hours."
//     (N the whole hours to the reset, at least 1); exit 1.
//   - secondary [SECONDS]: "You've hit your global rate limit. Please
//     upgrade your plan or wait 6 seconds for your limit to reset.";
//     exit 1.
//   - auth: "Error: No authentication information found." and how to log
//     in; exit 1.
//   - overloaded: "✗ Request failed: 503 Service Unavailable"; exit 1.
//   - fail: "✗ Error: tool execution failed"; exit 1.
//
// Departures from the real CLI (closed source; exit codes unconfirmed):
// every failure exits 1; the overloaded and fail texts are stand-ins, since
// no public report quotes Copilot's; --resume and other flags are ignored.
func (r *agentRun) copilot() int {
	req := strings.ToUpper(r.sessionID("")[:8])
	switch r.mode {
	case ModeOK:
		fmt.Fprintln(r.stdout, "done")
		return 0
	case ModeLimit:
		fmt.Fprintf(r.stderr, "✗ 402 You have no quota (Request ID: %s:3D0A1B:8E2F1A:9B3C4D:67F0A1B2)\n", req)
	case ModeLimitText:
		hours := int64(r.reset().Sub(r.now).Hours())
		fmt.Fprintf(r.stderr, "✗ Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make within a specific time period. Please try again in %d %s.\n",
			max(hours, 1), plural(max(hours, 1), "hour"))
	case ModeSecondary:
		s := r.wait(6)
		fmt.Fprintf(r.stderr, "✗ You've hit your global rate limit. Please upgrade your plan or wait %d %s for your limit to reset.\n", s, plural(s, "second"))
	case ModeAuth:
		fmt.Fprintln(r.stderr, "Error: No authentication information found.")
		fmt.Fprintln(r.stderr, "Run 'copilot' and enter /login, or set GH_TOKEN or GITHUB_TOKEN.")
	case ModeOverloaded:
		fmt.Fprintln(r.stderr, "✗ Request failed: 503 Service Unavailable")
	case ModeFail:
		fmt.Fprintln(r.stderr, "✗ Error: tool execution failed")
	}
	return 1
}

// plural is unit, with an "s" unless n is 1.
func plural(n int64, unit string) string {
	if n == 1 {
		return unit
	}
	return unit + "s"
}
