package github

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/llm"
)

// gh's exit codes (cli/cli internal/ghcmd/cmd.go).
const (
	ghExitCancel = 2 // the user cancelled
	ghExitAuth   = 4 // no local credentials
)

var (
	// reANSI matches terminal escape sequences (colours when forced).
	reANSI = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`) })
	// reGHAPISuffix matches gh api's "<message> (HTTP <status>)".
	reGHAPISuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.*?)\s*\(HTTP (\d{3})\)\s*$`) })
	// reGoGHHTTP matches go-gh's "HTTP <status>: <message> (<url>)",
	// "HTTP <status> (<url>)" and gh api's bare "HTTP <status>", possibly
	// after a "context: " prefix.
	reGoGHHTTP = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|\s)HTTP (\d{3})(?::\s*(.*?))?(?:\s*\((https?://[^\s()]*)\))?\s*$`)
	})
	// reURLInParens finds a request URL printed in parentheses.
	reURLInParens = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\((https?://[^\s()]+)\)`) })
)

// networkTexts are transport failures that a later attempt may not meet.
var networkTexts = []string{
	"connection refused",
	"connection reset",
	"i/o timeout",
	"tls handshake timeout",
	"network is unreachable",
	"client.timeout exceeded",
	"error connecting to", // gh's text for a failed DNS lookup
}

// authTexts are gh's and GitHub's texts for missing or refused credentials.
var authTexts = []string{
	"bad credentials",
	"gh auth login",
	"requires authentication",
}

// ghLine is one line of gh's stderr with gh's wrappers removed.
type ghLine struct {
	message string // the server's or gh's message
	status  int    // HTTP status when the wrapper gave one, else 0
	url     string // request URL when the wrapper gave one
	graphql bool   // "GraphQL: …"
}

// unwrapGHLine removes the wrappers gh puts around server messages:
//
//	gh: <message> (HTTP <status>)          gh api, REST error body
//	gh: <message>                          gh api, GraphQL errors[]
//	gh: HTTP <status>                      gh api, no message
//	HTTP <status>: <message> (<url>)       go-gh REST errors, other commands
//	GraphQL: <msg> (<path>), <msg> (<path>) go-gh GraphQL errors
//
// A "context: " prefix before "HTTP …" or "GraphQL: …" is dropped too.
func unwrapGHLine(line string) ghLine {
	s := strings.TrimSpace(line)
	var g ghLine
	if rest, ok := strings.CutPrefix(s, "gh: "); ok {
		s = rest
		if m := reGHAPISuffix().FindStringSubmatch(s); m != nil {
			g.status, _ = strconv.Atoi(m[2])
			s = m[1]
		}
	}
	if i := strings.Index(s, "GraphQL: "); i >= 0 {
		g.graphql = true
		s = s[i+len("GraphQL: "):]
	} else if m := reGoGHHTTP().FindStringSubmatchIndex(s); m != nil {
		g.status, _ = strconv.Atoi(s[m[2]:m[3]])
		if m[6] >= 0 {
			g.url = s[m[6]:m[7]]
		}
		msg := ""
		if m[4] >= 0 {
			msg = s[m[4]:m[5]]
		}
		s = msg
	}
	if g.url == "" {
		if m := reURLInParens().FindStringSubmatch(line); m != nil {
			g.url = m[1]
		}
	}
	g.message = strings.TrimSpace(s)
	return g
}

// includeBlock finds the last response `gh api -i` printed in stdout (a
// status line such as "HTTP/2.0 403 Forbidden", headers, body), looking at
// the last maxScan bytes, else the first. ANSI colours are removed first.
func includeBlock(stdout []byte) (*http.Response, []byte, bool) {
	windows := [][]byte{tail(stdout, maxScan)}
	if len(stdout) > maxScan {
		windows = append(windows, head(stdout, maxScan))
	}
	for _, w := range windows {
		w = stripANSI(w)
		const maxTries = 64
		end := len(w)
		for try := 0; try < maxTries && end > 0; try++ {
			i := bytes.LastIndex(w[:end], []byte("HTTP/"))
			if i < 0 {
				break
			}
			end = i
			if i > 0 && w[i-1] != '\n' {
				continue
			}
			resp, body, err := provider.ParseRawHTTP(w[i:])
			if err == nil {
				return resp, body, true
			}
		}
	}
	return nil, nil, false
}

// stripANSI removes terminal escape sequences.
func stripANSI(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	return reANSI().ReplaceAll(b, nil)
}

// ClassifyCLI classifies a finished `gh` invocation from its exit code and
// output, at now. It never panics and scans at most the last 64 KiB of each
// stream (and the first 64 KiB of stdout for `gh api -i` headers).
//
// Exit 0 is ok whatever was printed. Otherwise the wrappers gh puts around
// server texts are removed (see unwrapGHLine), along with the JSON error
// body `gh api` prints to stdout and the status line and headers `gh api -i`
// prints before it, and then, in order:
//
//   - exit 4 (no local credentials) or HTTP 401 is auth;
//   - exit 2 (cancelled) is permanent;
//   - a secondary-limit text (including legacy abuse detection) is
//     secondary, RetryAfter -1 unless a Retry-After header line is visible
//     (or, with x-ratelimit-remaining: 0 visible, until the reset); a
//     stated wait over quota.ThrottleQuotaCutoff makes it a quota;
//   - "API rate limit exceeded", "API rate limit already exceeded", a
//     GraphQL RATE_LIMITED error, or a visible 403/429 with
//     x-ratelimit-remaining: 0, is quota: resource graphql for GraphQL
//     forms, search or code_search for a /search/ URL, else core (a visible
//     X-Ratelimit-Resource wins); the reset is unknown unless header lines
//     show it, skew-corrected with a visible Date line;
//   - "Bad credentials" or "gh auth login" is auth;
//   - a bare 429 is secondary;
//   - HTTP 5xx other than 501, "connection refused", "connection reset",
//     "i/o timeout", "TLS handshake timeout" (and a few like them) is
//     transient;
//   - anything else is permanent.
//
// Observations come from visible x-ratelimit-* header lines, as for
// [Observations].
func ClassifyCLI(exitCode int, stdout, stderr []byte, now time.Time) provider.Outcome {
	return provider.CleanReason(classifyCLI(exitCode, stdout, stderr, now))
}

func classifyCLI(exitCode int, stdout, stderr []byte, now time.Time) provider.Outcome {
	e := &evidence{rate: parseRateHeaders(nil)}
	resp, body, hasBlock := includeBlock(stdout)
	if hasBlock {
		e.status = resp.StatusCode
		e.header = resp.Header
		e.rate = parseRateHeaders(resp.Header)
	} else {
		body = stripANSI(tail(stdout, maxScan))
	}

	if exitCode == 0 {
		return e.outcome(provider.ClassOK, "exit 0", now)
	}
	if exitCode == ghExitAuth {
		return e.outcome(provider.ClassAuth, "exit 4: gh has no credentials", now)
	}

	// gh api prints the error body to stdout. Other stdout is the command's
	// own output: only a JSON object's message, documentation_url and
	// errors[] are read from it.
	e.addBody(body, hasBlock)
	errText := string(stripANSI(tail(stderr, maxScan)))
	stderrStatus := 0
	for _, line := range strings.Split(errText, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		g := unwrapGHLine(line)
		if g.message != "" {
			e.messages = append(e.messages, g.message)
		}
		if g.status != 0 {
			stderrStatus = g.status
		}
		if g.graphql {
			e.graphql = true
		}
		if g.url != "" {
			if u, err := url.Parse(g.url); err == nil {
				e.path = u.Path
				if strings.HasSuffix(u.Path, "/graphql") {
					e.graphql = true
				}
			}
		}
	}
	if e.status == 0 {
		e.status = stderrStatus
	}
	lower := strings.ToLower(errText)

	if e.status == http.StatusUnauthorized {
		return e.outcome(provider.ClassAuth, "gh: HTTP 401", now)
	}
	if exitCode == ghExitCancel {
		return e.outcome(provider.ClassPermanent, "exit 2: cancelled", now)
	}
	label := "gh: "
	if e.status != 0 {
		label = fmt.Sprintf("gh: HTTP %d with ", e.status)
	}
	if out := e.limited(e.outcome(provider.ClassPermanent, "", now), label, now); out.Class != provider.ClassPermanent {
		return out
	}
	for _, t := range authTexts {
		if strings.Contains(lower, t) || e.hasMessage(t) {
			return e.outcome(provider.ClassAuth, fmt.Sprintf("gh: %q", t), now)
		}
	}
	if e.status >= 500 && e.status != http.StatusNotImplemented {
		return e.outcome(provider.ClassTransient, fmt.Sprintf("gh: HTTP %d (server error)", e.status), now)
	}
	for _, t := range networkTexts {
		if strings.Contains(lower, t) {
			return e.outcome(provider.ClassTransient, fmt.Sprintf("gh: %q (network)", t), now)
		}
	}
	reason := fmt.Sprintf("exit %d", exitCode)
	if e.status >= 300 {
		reason = "gh: " + e.permanentReason(e.status)
	} else if m := e.firstMessage(); m != "" {
		reason = fmt.Sprintf("exit %d: %s", exitCode, provider.CleanText(m, llm.MaxReasonMessage))
	}
	return e.outcome(provider.ClassPermanent, reason, now)
}
