package agentcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/quota"
)

// Provider names: the Outcome.Provider of each classifier. The names a
// user gives (`run --provider`, `classify --provider`) are looked up in
// provider/registry, which describes each CLI once.
const (
	ProviderClaudeCode = "claude-code"
	ProviderCodex      = "codex"
	ProviderCopilot    = "copilot"
	ProviderKimi       = "kimi"
	ProviderGeminiCLI  = "gemini-cli"
	// ProviderGitHub is gh, classified by github.ClassifyCLI.
	ProviderGitHub = github.Provider
	// ProviderAuto names [ClassifyAuto]. It is also the Outcome.Provider
	// when no CLI's evidence was recognized (an ok, or a failure nobody
	// could read).
	ProviderAuto = "auto"
)

// Func is the signature of every classifier of this package: a finished
// command's exit code, its output (stdout, stderr), the time it finished
// and the zone in which a time printed without one is read (nil: now's
// location).
type Func func(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome

// Limits on how much output is examined.
const (
	// maxScan is how much of each stream is examined: its last 64 KiB.
	maxScan = 64 << 10
	// maxEmbedded bounds the JSON objects looked for inside one text.
	maxEmbedded = 16
	// maxReason is how much of a printed message a Reason quotes.
	maxReason = llm.MaxReasonMessage
)

// Resources named by agent CLIs' evidence.
const (
	// ResourceBilling is a balance, a plan or a membership: Claude's
	// billing_error, Codex's "Quota exceeded. Check your plan and billing
	// details.", Kimi's 402.
	ResourceBilling = "billing"
	// ResourcePremiumRequests is Copilot's monthly premium-request quota.
	ResourcePremiumRequests = "premium-requests"
	// ResourceRequests is a request-rate limit (Copilot's rate limits).
	ResourceRequests = "requests"
	// ResourceTokens is Copilot's token-usage limit.
	ResourceTokens = "tokens"
)

// evidence is how strongly the output supports the class a classifier
// chose, the second key of ClassifyAuto's ranking.
type evidence int

const (
	evNone       evidence = iota // the exit code alone, or nothing
	evGeneric                    // a text any program may print: "429", "connection refused"
	evText                       // a text this CLI prints
	evStructured                 // a field of this CLI's structured output
)

// verdict is one classifier's answer with what ClassifyAuto ranks it by.
type verdict struct {
	out provider.Outcome
	ev  evidence
	// seen says how surely the output is this CLI's, whatever the class.
	seen recognition
}

// recognition is how surely an output was printed by a given CLI, the
// first key of ClassifyAuto's ranking.
type recognition int

const (
	seenNone   recognition = iota
	seenText               // a text only this CLI prints ("You've hit your usage limit")
	seenFormat             // this CLI's output protocol: its stream-json or JSONL events
)

// classifiers in ClassifyAuto's tie order: the CLIs whose formats are
// the most distinctive first.
var classifiers = []struct {
	name string
	fn   func(in *input, now time.Time, loc *time.Location) verdict
	// protocol: the CLI has a structured output protocol (seenFormat).
	protocol bool
}{
	{ProviderClaudeCode, claudeCode, true},
	{ProviderCodex, codex, true},
	{ProviderGeminiCLI, geminiCLI, true},
	{ProviderKimi, kimi, false},
	{ProviderCopilot, copilot, true},
	{ProviderAntigravity, antigravity, true},
}

// ClassifyAuto classifies a finished command whose program is not known:
// it asks every agent CLI's classifier and gh's (github.ClassifyCLI), and
// returns the most specific answer. It never panics.
//
// Each answer is ranked by three things. How surely the output is that
// CLI's: its own protocol (Claude Code's stream-json events, Codex's
// `exec --json` events, Gemini CLI's stream-json or json error object,
// Copilot CLI's JSON events, Antigravity's events with a conversation_id)
// beats a text only that CLI prints ("You've hit your usage limit", Kimi's
// "Error code: 429 - {…}", Antigravity's "Individual quota reached", gh's
// "API rate limit exceeded"), which beats nothing. The evidence behind its class: a field of the CLI's structured
// output (a rejected rate_limit_event, a usage_limit_reached body, an
// error dict) beats a text that CLI prints, which beats a generic text (an
// HTTP status, "rate limit", "connection refused"), which beats the exit
// code alone. And its class: one a wait or a probe can act on (quota,
// secondary, auth, transient) beats permanent.
//
// Exit 0 is ok whatever was printed: the outcome is that of the classifier
// that recognized its output most surely (or, failing that, observed quotas
// in it), so that its observations are kept; else an ok of provider "auto".
//
// A failed command gets, best first:
//
//  1. the answer of a CLI that recognized its own output, the most surely
//     recognized first: a CLI's stream settles which program ran, so
//     texts other classifiers find inside it (a quoted message in the
//     conversation) do not count. Among them, the stronger evidence wins,
//     then a class that is not permanent, then a stated reset or wait;
//  2. else the answer with the strongest evidence (generic texts), a class
//     that is not permanent first, then a stated reset or wait. An answer
//     from the exit code alone (Kimi's 75, Gemini CLI's 41, gh's 4) is not
//     taken here: any program may exit so;
//  3. else an outcome of provider "auto": transient for exit 75
//     (EX_TEMPFAIL, "try again later"), permanent otherwise.
//
// Remaining ties go to the first of Claude Code, Codex, Gemini CLI, Kimi,
// Copilot, Antigravity and gh.
func ClassifyAuto(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	return provider.CleanReason(classifyAuto(exitCode, stdout, stderr, now, loc))
}

func classifyAuto(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	in := newInput(exitCode, stdout, stderr)
	vs := make([]verdict, 0, len(classifiers)+1)
	format := false
	for _, c := range classifiers {
		// The CLIs with an output protocol come first: once one has
		// recognized its protocol, no text-only answer can rank above it.
		if format && !c.protocol {
			continue
		}
		v := c.fn(in, now, loc)
		vs = append(vs, v)
		format = format || v.seen == seenFormat
	}
	if !format {
		vs = append(vs, ghVerdict(github.ClassifyCLI(exitCode, stdout, stderr, now), stdout, stderr))
	}
	if exitCode == 0 {
		best := -1
		for i, v := range vs {
			if v.seen > seenNone && (best < 0 || v.seen > vs[best].seen) {
				best = i
			}
		}
		if best < 0 {
			for i, v := range vs {
				if len(v.out.Observations) > 0 {
					best = i
					break
				}
			}
		}
		if best >= 0 {
			return vs[best].out
		}
		return provider.Unknown(ProviderAuto, provider.ClassOK, "exit 0")
	}
	best := -1
	for i, v := range vs {
		if v.seen == seenNone && v.ev == evNone {
			continue
		}
		if best < 0 || better(v, vs[best]) {
			best = i
		}
	}
	if best >= 0 {
		return vs[best].out
	}
	if exitCode == exitTempFail {
		return provider.Unknown(ProviderAuto, provider.ClassTransient, "exit 75 (EX_TEMPFAIL) and no provider's output recognized")
	}
	return provider.Unknown(ProviderAuto, provider.ClassPermanent, fmt.Sprintf("exit %d and no provider's output recognized", exitCode))
}

// exitTempFail is sysexits' EX_TEMPFAIL.
const exitTempFail = 75

// better reports whether a ranks above b (a strict order; ties keep b,
// which came first).
func better(a, b verdict) bool {
	if a.seen != b.seen {
		return a.seen > b.seen
	}
	if a.ev != b.ev {
		return a.ev > b.ev
	}
	ap, bp := a.out.Class == provider.ClassPermanent, b.out.Class == provider.ClassPermanent
	if ap != bp {
		return !ap
	}
	return stated(a.out) && !stated(b.out)
}

// stated reports whether an outcome carries a reset or a wait.
func stated(o provider.Outcome) bool { return !o.ResetAt.IsZero() || o.RetryAfter >= 0 }

// reGHWrapped finds gh's wrappers around a server message ("gh: …",
// "HTTP 403: …", "GraphQL: …", `gh api -i`'s status line) or GitHub's
// URLs.
var reGHWrapped = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^(?:gh: |HTTP [1-5][0-9]{2}\b|GraphQL: |HTTP/[12](?:\.[01])? [1-5][0-9]{2}\b)|api\.github\.com|docs\.github\.com`)
})

// ghVerdict ranks github.ClassifyCLI's answer. Its rate-limit and auth
// classes are gh's texts when the output carries gh's wrappers or GitHub's
// URLs ("gh: Bad credentials (HTTP 401)"), and generic otherwise (gh's
// rules read any "rate limit exceeded" or "bad credentials"); its other
// rules (HTTP 5xx, network errors) are generic; an answer from gh's exit
// code alone ("exit 4: …") is no evidence.
func ghVerdict(out provider.Outcome, stdout, stderr []byte) verdict {
	v := verdict{out: out}
	if !strings.HasPrefix(out.Reason, "gh:") {
		return v
	}
	v.ev = evGeneric
	if out.Class == provider.ClassQuota || out.Class == provider.ClassSecondary || out.Class == provider.ClassAuth {
		if reGHWrapped().Match(clean(stderr)) || reGHWrapped().Match(clean(stdout)) {
			v.ev = evText
			v.seen = seenText
		}
	}
	return v
}

// ---- shared helpers ----

// input is a finished command's output, read once for every classifier.
type input struct {
	exit           int
	stdout, stderr []byte // the last maxScan bytes, without terminal escapes
	parsed         bool
	outLines       []line
	lowered        bool
	lower          string // asciiLower(stdout + "\n" + stderr)
	network        string // the network failure lower names
}

// all returns stdout and stderr joined, lower-cased (ASCII), and the
// network failure they name ("" when none), computed once.
func (in *input) all() (lower, network string) {
	if !in.lowered {
		in.lowered = true
		in.lower = asciiLower(string(in.stdout) + "\n" + string(in.stderr))
		in.network = networkText(in.lower)
	}
	return in.lower, in.network
}

// line is one line of stdout, with the JSON object it holds (nil when
// it holds none).
type line struct {
	text []byte
	obj  map[string]json.RawMessage
}

func newInput(exitCode int, stdout, stderr []byte) *input {
	return &input{exit: exitCode, stdout: clean(stdout), stderr: clean(stderr)}
}

// lines returns stdout's lines, each JSON object decoded once.
func (in *input) lines() []line {
	if !in.parsed {
		in.parsed = true
		eachLine(in.stdout, func(l []byte) {
			in.outLines = append(in.outLines, line{text: l, obj: jsonObject(l)})
		})
	}
	return in.outLines
}

// location is the zone for times printed without one.
func location(loc *time.Location, now time.Time) *time.Location {
	if loc != nil {
		return loc
	}
	return now.Location()
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

var reANSI = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`) })

// clean returns the last maxScan bytes of b without terminal escapes.
func clean(b []byte) []byte {
	b = tail(b, maxScan)
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	return reANSI().ReplaceAll(b, nil)
}

// eachLine calls fn with every line of b (without its line ending).
func eachLine(b []byte, fn func(line []byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var line []byte
		if i < 0 {
			line, b = b, nil
		} else {
			line, b = b[:i], b[i+1:]
		}
		fn(bytes.TrimRight(line, "\r"))
	}
}

// jsonObject decodes a line that is one JSON object, nil otherwise.
func jsonObject(line []byte) map[string]json.RawMessage {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil {
		return nil
	}
	return obj
}

// embeddedObjects returns the JSON objects written inside a text (an
// error body after "API Error: 429 ", a pretty-printed error on stderr),
// at most maxEmbedded, in order.
func embeddedObjects(s string) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	tries := 0
	for i := 0; i < len(s) && len(out) < maxEmbedded && tries < 4*maxEmbedded; {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			break
		}
		i += j
		tries++
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var obj map[string]json.RawMessage
		if err := dec.Decode(&obj); err != nil || obj == nil {
			i++
			continue
		}
		out = append(out, obj)
		i += int(dec.InputOffset())
	}
	return out
}

// str returns raw as a string when it is a JSON string, else "". raw comes
// from a decoded object, so a quoted text without escapes is the string.
func str(raw json.RawMessage) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if in := raw[1 : n-1]; bytes.IndexByte(in, '\\') < 0 && bytes.IndexByte(in, '"') < 0 && utf8.Valid(in) {
			return string(in)
		}
	}
	return llm.String(raw)
}

// obj returns raw as an object, nil when it is not one.
func obj(raw json.RawMessage) map[string]json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

// isTrue reports whether raw is the JSON literal true.
func isTrue(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "true" }

// status reads an HTTP status: a JSON number or string of three digits
// from 100 to 599, else 0.
func status(raw json.RawMessage) int {
	s := strings.TrimSpace(llm.Scalar(raw))
	if len(s) != 3 {
		return 0
	}
	n, ok := llm.Count(s)
	if !ok || n < 100 || n > 599 {
		return 0
	}
	return int(n)
}

// excerpt quotes a printed message in a Reason: one line, cut short.
func excerpt(s string) string { return provider.CleanText(s, maxReason) }

// quotaOut returns a quota outcome for p with reason; reset may be zero.
func quotaOut(p, resource, reason string, reset time.Time, now time.Time) provider.Outcome {
	out := provider.Unknown(p, provider.ClassQuota, reason)
	out.Resource = resource
	if reset.IsZero() {
		out.Reason += ", reset unknown"
		return out
	}
	out.ResetAt = reset
	return llm.AddRejected(out, reset.Unix(), time.Time{}, now)
}

// relabel adopts another classifier's outcome for provider p: its class,
// reset, wait, counts and observations, with p's label before its reason.
func relabel(o provider.Outcome, p, label string) provider.Outcome {
	o.Provider = p
	if o.Reason == "" {
		o.Reason = label
	} else {
		o.Reason = label + " " + o.Reason
	}
	return o
}

// networkTexts are transport and server failures that a later attempt may
// not meet (lower case).
var networkTexts = []string{
	"connection refused",
	"connection reset",
	"econnrefused",
	"econnreset",
	"etimedout",
	"enotfound",
	"eai_again",
	"socket hang up",
	"i/o timeout",
	"tls handshake timeout",
	"network is unreachable",
	"no such host",
	"fetch failed",
	"connection error.",
	"request timed out.",
	"service unavailable",
	"bad gateway",
	"gateway timeout",
	"internal server error",
}

// networkText returns the network failure a text names, "" when none.
func networkText(lower string) string {
	for _, t := range networkTexts {
		if strings.Contains(lower, t) {
			return t
		}
	}
	return ""
}

// percentLeft is the percent of a window left at utilization u, at least
// 1: only a rejection empties a window (a used-up window may still admit
// calls through overage). It matches the anthropic package's reading of
// the same subscription windows.
func percentLeft(u float64) int64 {
	if u >= 1 {
		return 1
	}
	p := int64(100*(1-u) + 0.5)
	return max(p, 1)
}

// rejectedState is a state for a quota the CLI said is exhausted, with
// the provider's own reset.
func rejectedState(resource string, limit int64, reset time.Time, now time.Time) quota.State {
	return quota.State{
		Key:        quota.Key{Resource: resource},
		Limit:      limit,
		Remaining:  0,
		ResetAt:    reset,
		ResetKnown: true,
		RawReset:   reset.Unix(),
		ObservedAt: now,
		Source:     quota.SourceRejected,
		Cause:      quota.CauseExhausted,
	}
}

// mergeStates returns first followed by the states of second whose
// resource first does not already describe.
func mergeStates(first, second []quota.State) []quota.State {
	if len(first) == 0 {
		return second
	}
	out := first
	for _, s := range second {
		dup := false
		for _, f := range first {
			if f.Resource == s.Resource {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}

// hasAny reports whether s contains any of subs.
func hasAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// submatch runs re on s only when filter (s, or s lower-cased for a
// case-insensitive re) contains one of keys, which every match of re
// contains: a cheap test that spares the regular expression engine most
// texts.
func submatch(re *regexp.Regexp, s, filter string, keys ...string) []string {
	if !hasAny(filter, keys...) {
		return nil
	}
	return re.FindStringSubmatch(s)
}

// submatchIndex is submatch returning indexes.
func submatchIndex(re *regexp.Regexp, s, filter string, keys ...string) []int {
	if !hasAny(filter, keys...) {
		return nil
	}
	return re.FindStringSubmatchIndex(s)
}

// maxWindows bounds the windows findNear examines.
const maxWindows = 64

// findNear returns the first match of re (as indexes into s) that lies in
// a window around an occurrence of one of keys: from before bytes before
// the key to after bytes after it. lower is s with ASCII letters
// lower-cased (asciiLower), in which keys are looked for. Every match of
// re must contain a key and fit its window; the regular expression engine
// then reads a few hundred bytes instead of the whole text.
func findNear(re *regexp.Regexp, s, lower string, keys []string, before, after int) []int {
	var at []int
	for _, k := range keys {
		for i := 0; len(at) < maxWindows; {
			j := strings.Index(lower[i:], k)
			if j < 0 {
				break
			}
			at = append(at, i+j)
			i += j + len(k)
		}
	}
	slices.Sort(at)
	for _, p := range at {
		lo, hi := max(0, p-before), min(len(s), p+after)
		if m := re.FindStringSubmatchIndex(s[lo:hi]); m != nil {
			for i := range m {
				if m[i] >= 0 {
					m[i] += lo
				}
			}
			return m
		}
	}
	return nil
}

// asciiLower lower-cases the ASCII letters of s, keeping every byte
// offset.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
