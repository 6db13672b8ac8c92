package agentcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/openai"
	"github.com/layoverhq/layover/provider/resetparse"
)

var (
	reCodexUsage = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)you['’]ve hit your usage limit`) })
	// reCodexTryAt is what comes before Codex's reset: "try again at".
	reCodexTryAt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\btry again at[ \t]+`) })
	// reCodexRetryLimit is "exceeded retry limit, last status: 429 Too
	// Many Requests".
	reCodexRetryLimit = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)exceeded retry limit, last status: (\d{3})`)
	})
	// reCodexStatus is "unexpected status 429 Too Many Requests: <body>".
	reCodexStatus = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)unexpected status (\d{3})\b[^:\n]*:?`) })
	// reCodexErrorInfo finds a codexErrorInfo value in an app-server or
	// protocol event: "usageLimitExceeded" or {"httpConnectionFailed":…}.
	reCodexErrorInfo = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`"codex_?[eE]rror_?[iI]nfo"\s*:\s*(?:"([A-Za-z_]{1,64})"|\{\s*"([A-Za-z_]{1,64})"\s*:\s*(?:\{\s*"http_?[sS]tatus_?[cC]ode"\s*:\s*(\d{3}))?)`)
	})
	// reStatus429 is a bare "429 Too Many Requests" or "status 429".
	reStatus429 = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b429\b.{0,4}too many requests|\bstatus:? 429\b|\bHTTP 429\b`)
	})
)

// codexAuthTexts are Codex's texts for missing or refused credentials.
var codexAuthTexts = []string{
	"401 unauthorized",
	"refresh token",
	"sign in again",
	"not logged in",
	"please run `codex login`",
	"codex login",
	"token data is not available",
	"invalid_api_key",
	"incorrect api key",
}

// codexTransientTexts are Codex's texts for a failure a later attempt may
// not meet (lower case).
var codexTransientTexts = []string{
	"we're currently experiencing high demand",
	"stream disconnected before completion",
	"connection failed:",
	"error while reading the server response",
	"internal error; agent loop died",
	"server overloaded",
}

// codexRun is what a Codex run printed.
type codexRun struct {
	seen recognition
	// messages are the error messages of its JSON events (turn.failed,
	// error), retry notices excepted; texts add the other lines and
	// stderr.
	messages, texts []string
	// infos are the codexErrorInfo values seen, with the HTTP status
	// some carry.
	infos []codexInfo
	// objs are stdout's JSON objects that are not events; free are the
	// texts that are not JSON lines (event messages, other lines, stderr),
	// where a JSON body may be written inside a message.
	objs []map[string]json.RawMessage
	free []string
}

type codexInfo struct {
	name   string
	status int
}

// codexEvents are the event types of `codex exec --json`.
var codexEvents = map[string]bool{
	"thread.started": true, "turn.started": true, "turn.completed": true, "turn.failed": true,
	"item.started": true, "item.updated": true, "item.completed": true, "error": true,
}

func readCodex(in *input) *codexRun {
	r := &codexRun{}
	var plain []byte
	for _, l := range in.lines() {
		r.errorInfo(l.text)
		if l.obj != nil {
			if r.event(l.obj) {
				continue
			}
			// Another JSON object (a protocol notification, an error
			// body): it may be a backend body, and its messages count.
			r.objs = append(r.objs, l.obj)
			r.messages = append(r.messages, objectMessages(l.obj)...)
			continue
		}
		plain = append(append(plain, l.text...), '\n')
	}
	r.texts = append(r.texts, r.messages...)
	if len(bytes.TrimSpace(plain)) > 0 {
		r.texts = append(r.texts, string(plain))
		r.free = append(r.free, string(plain))
	}
	if len(bytes.TrimSpace(in.stderr)) > 0 {
		eachLine(in.stderr, r.errorInfo)
		r.texts = append(r.texts, string(in.stderr))
		r.free = append(r.free, string(in.stderr))
	}
	r.free = append(r.free, r.messages...)
	return r
}

func (r *codexRun) errorInfo(line []byte) {
	if !bytes.Contains(line, []byte("rrorInfo")) && !bytes.Contains(line, []byte("rror_info")) {
		return
	}
	for _, m := range reCodexErrorInfo().FindAllSubmatch(line, 4) {
		info := codexInfo{name: string(m[1])}
		if info.name == "" {
			info.name = string(m[2])
		}
		if len(m[3]) > 0 {
			info.status, _ = strconv.Atoi(string(m[3]))
		}
		r.infos = append(r.infos, info)
		r.seen = max(r.seen, seenText)
	}
}

// isNotice reports whether an error event is one of Codex's retry
// notices: "Reconnecting... 2/5 (…)", "… retrying 1/5 in 200ms…".
func isNotice(msg string) bool {
	msg = strings.TrimSpace(msg)
	if strings.HasPrefix(msg, "Reconnecting") {
		return true
	}
	return strings.Contains(strings.ToLower(msg), "retrying") && reAttempt().MatchString(msg)
}

// reAttempt is a retry notice's attempt count, "2/5".
var reAttempt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b\d{1,3}/\d{1,3}\b`) })

// event reads one `codex exec --json` event (or a protocol event {"msg":
// {"type":"error",…}} of older releases) and reports whether it was one.
func (r *codexRun) event(o map[string]json.RawMessage) bool {
	if m := obj(o["msg"]); m != nil && str(o["type"]) == "" {
		o = m
		switch str(o["type"]) {
		case "error":
			if msg := str(o["message"]); msg != "" && !isNotice(msg) {
				r.messages = append(r.messages, msg)
			}
			r.seen = seenFormat
			return true
		case "stream_error":
			r.seen = seenFormat
			return true
		}
		return false
	}
	typ := str(o["type"])
	if !codexEvents[typ] {
		return false
	}
	if typ != "error" {
		// A lone {"type":"error"} is too common a shape to be Codex's.
		r.seen = seenFormat
	}
	switch typ {
	case "error":
		if msg := str(o["message"]); msg != "" && !isNotice(msg) {
			r.messages = append(r.messages, msg)
		}
	case "turn.failed":
		if e := obj(o["error"]); e != nil {
			if msg := str(e["message"]); msg != "" {
				r.messages = append(r.messages, msg)
			}
		}
	}
	return true
}

// ClassifyCodex classifies a finished `codex` run (`codex exec`, with or
// without --json) from its exit code and output, at now; a reset printed
// without a zone (Codex prints local time) is read in loc (nil: now's
// location). It never panics and reads the last 64 KiB of each stream.
//
// Exit 0 is ok whatever was printed. Otherwise the error messages of its
// JSON events (turn.failed, error; "Reconnecting…" retry notices
// excepted), its other lines and stderr are read, in order:
//
//   - a backend body {"error":{"type":"usage_limit_reached",…}}: quota,
//     ResetAt its resets_at (epoch seconds), else now + resets_in_seconds,
//     else the text's reset, else unknown; usage_not_included (a plan
//     without Codex): quota, resource "billing", reset unknown;
//   - a codexErrorInfo: usageLimitExceeded and rateLimitExceeded are
//     quota (the text's reset),
//     serverOverloaded and internalServerError transient, unauthorized
//     auth, responseTooManyFailedAttempts with 429 secondary (other
//     statuses by status), httpConnectionFailed and stream failures
//     transient, contextWindowExceeded and badRequest permanent;
//   - "You've hit your usage limit.": quota; the reset is "try again at
//     3:28 PM" (today, or tomorrow once past) or "try again at Aug 8th,
//     2026 12:30 PM", local time read in loc, else "try again in 3 days 6
//     hours 57 minutes" from now, else unknown ("Try again later.");
//   - "Quota exceeded. Check your plan and billing details." and "To use
//     Codex with your ChatGPT plan, upgrade to Plus": quota, resource
//     "billing", reset unknown;
//   - "We're currently experiencing high demand", stream disconnections,
//     "Connection failed:": transient;
//   - "exceeded retry limit, last status: 429 Too Many Requests":
//     secondary, RetryAfter -1 (5xx transient, 401 auth);
//   - "unexpected status <code> …: <body>": the openai package's rules on
//     that response;
//   - a wait the text states ("Please try again in 1.5s"): a throttle
//     (quota over quota.ThrottleQuotaCutoff);
//   - auth texts (401 Unauthorized, a refresh token that failed, "codex
//     login"): auth; network failures: transient; a bare 429: secondary.
//
// Anything else is permanent.
func ClassifyCodex(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	return provider.CleanReason(codex(newInput(exitCode, stdout, stderr), now, loc).out)
}

func codex(in *input, now time.Time, loc *time.Location) verdict {
	loc = location(loc, now)
	r := readCodex(in)
	v := r.classify(in.exit, now, loc)
	v.seen = max(v.seen, r.seen)
	return v
}

func (r *codexRun) classify(exitCode int, now time.Time, loc *time.Location) verdict {
	p := ProviderCodex
	if exitCode == 0 {
		return verdict{out: provider.Unknown(p, provider.ClassOK, "exit 0")}
	}
	// Structured: a backend body, a codexErrorInfo.
	for _, o := range r.objs {
		if v, ok := r.usageBody(o, now, loc); ok {
			return v
		}
	}
	for _, t := range r.free {
		if !strings.Contains(t, "usage_") {
			continue
		}
		for _, o := range embeddedObjects(t) {
			if v, ok := r.usageBody(o, now, loc); ok {
				return v
			}
		}
	}
	for _, info := range r.infos {
		if v, ok := r.errorInfoVerdict(info, now, loc); ok {
			return v
		}
	}
	// Texts.
	all := strings.Join(r.texts, "\n")
	lower := asciiLower(all)
	for _, t := range r.texts {
		if !strings.Contains(lower, "hit your usage limit") {
			break
		}
		if reCodexUsage().MatchString(t) {
			reason := fmt.Sprintf("text %q", excerpt(reCodexUsage().FindString(t)))
			reset, why := r.textReset(now, loc)
			return verdict{out: quotaOut(p, "", reason+why, reset, now), ev: evText, seen: seenText}
		}
	}
	switch {
	case strings.Contains(lower, "quota exceeded. check your plan and billing details"):
		return verdict{out: quotaOut(p, ResourceBilling, `text "Quota exceeded. Check your plan and billing details."`, time.Time{}, now), ev: evText, seen: seenText}
	case strings.Contains(lower, "to use codex with your chatgpt plan"):
		return verdict{out: quotaOut(p, ResourceBilling, "text: the plan does not include Codex", time.Time{}, now), ev: evText, seen: seenText}
	}
	for _, t := range codexTransientTexts {
		if strings.Contains(lower, t) {
			return verdict{out: provider.Unknown(p, provider.ClassTransient, fmt.Sprintf("text %q", t)), ev: evText, seen: seenText}
		}
	}
	if strings.Contains(lower, "ran out of room in the model's context window") {
		return verdict{out: provider.Unknown(p, provider.ClassPermanent, "text: the context window is full"), ev: evText, seen: seenText}
	}
	if m := submatch(reCodexRetryLimit(), all, lower, "exceeded retry limit"); m != nil {
		code, _ := strconv.Atoi(m[1])
		label := fmt.Sprintf("text %q", excerpt(m[0]))
		return verdict{out: statusOutcome(p, code, label, now), ev: evText, seen: seenText}
	}
	if ix := submatchIndex(reCodexStatus(), all, lower, "unexpected status"); ix != nil {
		code, _ := strconv.Atoi(all[ix[2]:ix[3]])
		rest := all[ix[1]:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.HasPrefix(strings.TrimSpace(rest), "{") {
			rest = rest[:nl]
		}
		var body []byte
		if objs := embeddedObjects(rest); len(objs) > 0 {
			body, _ = json.Marshal(objs[0])
		} else {
			body = []byte(strings.TrimSpace(rest))
		}
		o := openai.ClassifyHTTP(&http.Response{StatusCode: code, Header: http.Header{}}, body, now)
		o.Observations = nil
		if o.Class == provider.ClassQuota && !o.ResetAt.IsZero() {
			o = llm.AddRejected(o, 0, time.Time{}, now)
		}
		return verdict{out: relabel(o, p, "unexpected status"), ev: evText, seen: seenText}
	}
	for _, t := range r.texts {
		if d, ok := resetparse.MessageDelay(t); ok {
			out := provider.Unknown(p, provider.ClassSecondary, "text states a wait")
			return verdict{out: llm.AddRejected(llm.Wait(out, d, "try again in", now), 0, time.Time{}, now), ev: evGeneric}
		}
	}
	for _, t := range codexAuthTexts {
		if strings.Contains(lower, t) {
			return verdict{out: provider.Unknown(p, provider.ClassAuth, fmt.Sprintf("text %q", t)), ev: evGeneric}
		}
	}
	if t := networkText(lower); t != "" {
		return verdict{out: provider.Unknown(p, provider.ClassTransient, fmt.Sprintf("text %q (network or server)", t)), ev: evGeneric}
	}
	if m := status429(all, lower); m != "" {
		return verdict{out: llm.NoWait(provider.Unknown(p, provider.ClassSecondary, fmt.Sprintf("text %q", excerpt(m)))), ev: evGeneric}
	}
	reason := fmt.Sprintf("exit %d", exitCode)
	if len(r.messages) > 0 {
		reason += ": " + excerpt(r.messages[len(r.messages)-1])
		// Only a message of Codex's own events is evidence that the
		// failure is Codex's: any program may print a JSON error body (gh
		// prints GitHub's).
		v := verdict{out: provider.Unknown(p, provider.ClassPermanent, reason)}
		if r.seen == seenFormat {
			v.ev = evStructured
		}
		return v
	}
	return verdict{out: provider.Unknown(p, provider.ClassPermanent, reason)}
}

// textReset is the reset Codex's usage-limit text states, with a Reason
// suffix.
func (r *codexRun) textReset(now time.Time, loc *time.Location) (time.Time, string) {
	for _, t := range r.texts {
		if reset, clock, found, ok := findClock(t, reCodexTryAt(), now, loc); found {
			if ok {
				return reset, fmt.Sprintf("; try again at %s", strings.TrimSpace(clock))
			}
			return time.Time{}, fmt.Sprintf("; try again at %q is not a time", excerpt(clock))
		}
	}
	for _, t := range r.texts {
		if d, ok := resetparse.MessageDelay(t); ok {
			return now.Add(d), "; try again in " + llm.FormatWait(d)
		}
	}
	return time.Time{}, ""
}

// usageBody classifies a backend error body {"error":{"type":
// "usage_limit_reached",…}} (or the error object itself).
func (r *codexRun) usageBody(o map[string]json.RawMessage, now time.Time, loc *time.Location) (verdict, bool) {
	e := obj(o["error"])
	if e == nil {
		e = o
	}
	p := ProviderCodex
	switch typ := str(e["type"]); typ {
	case "usage_limit_reached":
		reason := "usage_limit_reached"
		if plan, ok := llm.CleanName(str(e["plan_type"])); ok {
			reason += " (plan " + plan + ")"
		}
		if t, ok := resetparse.EpochSeconds(llm.Scalar(e["resets_at"])); ok {
			return verdict{out: quotaOut(p, "", reason+"; resets_at", t, now), ev: evStructured, seen: seenText}, true
		}
		if d, ok := resetparse.Seconds(llm.Scalar(e["resets_in_seconds"])); ok {
			return verdict{out: quotaOut(p, "", reason+"; resets_in_seconds "+llm.FormatWait(d), now.Add(d), now), ev: evStructured, seen: seenText}, true
		}
		reset, why := r.textReset(now, loc)
		return verdict{out: quotaOut(p, "", reason+why, reset, now), ev: evStructured, seen: seenText}, true
	case "usage_not_included":
		return verdict{out: quotaOut(p, ResourceBilling, "usage_not_included (the plan does not include Codex)", time.Time{}, now), ev: evStructured, seen: seenText}, true
	}
	return verdict{}, false
}

// errorInfoVerdict classifies a codexErrorInfo.
func (r *codexRun) errorInfoVerdict(info codexInfo, now time.Time, loc *time.Location) (verdict, bool) {
	p := ProviderCodex
	label := "codexErrorInfo " + info.name
	name := strings.ToLower(strings.ReplaceAll(info.name, "_", ""))
	var out provider.Outcome
	switch name {
	case "usagelimitexceeded", "ratelimitexceeded":
		// Both are the account's limit (docs/agents.md): a quota whose
		// reset only the text may state.
		reset, why := r.textReset(now, loc)
		out = quotaOut(p, "", label+why, reset, now)
	case "serveroverloaded", "internalservererror":
		out = provider.Unknown(p, provider.ClassTransient, label)
	case "unauthorized":
		out = provider.Unknown(p, provider.ClassAuth, label)
	case "responsetoomanyfailedattempts":
		if info.status == 0 {
			out = provider.Unknown(p, provider.ClassTransient, label)
		} else {
			out = statusOutcome(p, info.status, fmt.Sprintf("%s (HTTP %d)", label, info.status), now)
		}
	case "httpconnectionfailed", "responsestreamconnectionfailed", "responsestreamdisconnected":
		out = provider.Unknown(p, provider.ClassTransient, label)
		if info.status != 0 {
			out = statusOutcome(p, info.status, fmt.Sprintf("%s (HTTP %d)", label, info.status), now)
		}
	case "contextwindowexceeded", "badrequest", "sandboxerror":
		out = provider.Unknown(p, provider.ClassPermanent, label)
	default:
		return verdict{}, false
	}
	return verdict{out: out, ev: evStructured, seen: seenText}, true
}

// statusOutcome is the class a bare HTTP status implies for a request the
// CLI gave up on: 429 secondary (no wait stated), 401 auth, 402 quota,
// 408, 409 and 5xx other than 501 transient, else permanent.
func statusOutcome(p string, code int, label string, now time.Time) provider.Outcome {
	switch code {
	case http.StatusTooManyRequests:
		return llm.NoWait(provider.Unknown(p, provider.ClassSecondary, label))
	case http.StatusUnauthorized:
		return provider.Unknown(p, provider.ClassAuth, label)
	case http.StatusPaymentRequired:
		return quotaOut(p, ResourceBilling, label, time.Time{}, now)
	}
	c := llm.StatusClass(code)
	if c == provider.ClassOK {
		c = provider.ClassPermanent
	}
	return provider.Unknown(p, c, label)
}

// status429 returns a bare 429 a text writes ("429 Too Many Requests",
// "status 429", "HTTP 429"), "" when none. lower is asciiLower(s).
func status429(s, lower string) string {
	if m := findNear(reStatus429(), s, lower, []string{"429"}, 16, 32); m != nil {
		return s[m[0]:m[1]]
	}
	return ""
}

// objectMessages returns the messages of a JSON object that is not an
// exec event: its "message", its error's, and those of an app-server
// notification's params.
func objectMessages(o map[string]json.RawMessage) []string {
	var out []string
	add := func(m map[string]json.RawMessage) {
		if m == nil {
			return
		}
		if s := str(m["message"]); s != "" {
			out = append(out, s)
		}
		if e := obj(m["error"]); e != nil {
			if s := str(e["message"]); s != "" {
				out = append(out, s)
			}
		}
	}
	add(o)
	add(obj(o["params"]))
	add(obj(o["msg"]))
	return out
}
