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
	"github.com/layoverhq/layover/provider/anthropic"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// Claude Code's subscription windows, as rate_limit_event's rateLimitType
// names them; the Resource of a Claude Code limit.
const (
	ResourceFiveHour       = "five_hour"
	ResourceSevenDay       = "seven_day"
	ResourceSevenDayOpus   = "seven_day_opus"
	ResourceSevenDaySonnet = "seven_day_sonnet"
)

var (
	// reClaudePipe is the mid-2025 -p text: "Claude AI usage limit
	// reached|1749924000".
	reClaudePipe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)claude (?:ai )?usage limit reached\|(\d{1,13})\b`)
	})
	// reClaudeLimit finds every other era's usage-limit text: "Claude
	// usage limit reached.", "5-hour limit reached", "Weekly limit
	// reached", "You've hit your limit", "You've hit your session limit",
	// "You've hit your weekly limit".
	reClaudeLimit = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:claude (?:ai )?usage limit reached|(5-hour|weekly|session|opus|sonnet|opus weekly|sonnet weekly|daily) limit reached|you['’]ve hit your (?:(5-hour|weekly|session|opus|sonnet|opus weekly|sonnet weekly|daily) )?limit)\b`)
	})
	// reClaudeReset is what comes before a Claude reset time: "resets",
	// "Resets", "reset at", "will reset at".
	reClaudeReset = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bresets?(?:[ \t]+at)?[ \t]+`) })
	// reAPIError is Claude Code's "API Error: 429 {…}".
	reAPIError = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bAPI Error: (\d{3})\b`) })
)

// claudeAuthTexts are Claude Code's texts for missing or refused
// credentials (lower case).
var claudeAuthTexts = []string{
	"invalid api key",
	"please run /login",
	"oauth token has expired",
	"oauth token has been revoked",
	"authentication_error",
	"not logged in",
}

// claudeRun is what a Claude Code run printed.
type claudeRun struct {
	seen recognition
	// rejected is the last rate_limit_event whose status is "rejected".
	rejected *claudeRate
	// windows are the last rate_limit_event of each rateLimitType.
	windows []claudeRate
	// assistantError is the last assistant message's "error" field, and
	// assistantText that message's text.
	assistantError, assistantText string
	// result is the last result event.
	result *claudeResult
	// texts are what may carry a limit text: error texts of the stream
	// (an errored result's text, an errored assistant message's text) and
	// every line that is not a stream event.
	texts []string
}

type claudeRate struct {
	status, typ string
	resetsAt    time.Time // zero when absent or implausible
	utilization float64
	hasUtil     bool
}

type claudeResult struct {
	isError   bool
	subtype   string
	text      string
	apiStatus int
}

// claudeEvents are the stream-json event types, each with a field every
// such event has (other CLIs print "result" and "error" events too).
var claudeEvents = map[string]string{
	"system": "subtype", "assistant": "message", "user": "message", "result": "is_error",
	"rate_limit_event": "rate_limit_info", "stream_event": "event",
}

// readClaude reads Claude Code's output: stream-json (one event a line),
// --output-format json (the result object, or with --verbose an array of
// events), or text.
func readClaude(in *input) *claudeRun {
	r := &claudeRun{}
	array := false
	if t := bytes.TrimSpace(in.stdout); len(t) > 0 && t[0] == '[' {
		var events []json.RawMessage
		if json.Unmarshal(t, &events) == nil {
			for _, ev := range events {
				if o := obj(ev); o != nil {
					r.event(o)
				}
			}
			array = true
		}
	}
	var plain []byte
	if !array {
		for _, l := range in.lines() {
			if l.obj != nil && r.event(l.obj) {
				continue
			}
			plain = append(append(plain, l.text...), '\n')
		}
	}
	if len(bytes.TrimSpace(plain)) > 0 {
		r.texts = append(r.texts, string(plain))
	}
	if len(bytes.TrimSpace(in.stderr)) > 0 {
		r.texts = append(r.texts, string(in.stderr))
	}
	return r
}

// event reads one decoded event and reports whether it was one of Claude
// Code's.
func (r *claudeRun) event(o map[string]json.RawMessage) bool {
	typ := str(o["type"])
	if field, ok := claudeEvents[typ]; !ok || o[field] == nil {
		return false
	}
	r.seen = seenFormat
	switch typ {
	case "rate_limit_event":
		info := obj(o["rate_limit_info"])
		if info == nil {
			return true
		}
		rate := claudeRate{
			status: strings.ToLower(strings.TrimSpace(str(info["status"]))),
			typ:    strings.TrimSpace(str(info["rateLimitType"])),
		}
		if typ, ok := llm.CleanName(rate.typ); ok {
			rate.typ = typ
		} else {
			rate.typ = ""
		}
		if t, ok := resetparse.EpochSeconds(llm.Scalar(info["resetsAt"])); ok {
			rate.resetsAt = t
		}
		if u, err := strconv.ParseFloat(strings.TrimSpace(llm.Scalar(info["utilization"])), 64); err == nil && u >= 0 && u < 1e6 {
			rate.utilization, rate.hasUtil = u, true
		}
		if rate.status == "rejected" {
			rr := rate
			r.rejected = &rr
		}
		for i := range r.windows {
			if r.windows[i].typ == rate.typ {
				r.windows[i] = rate
				return true
			}
		}
		r.windows = append(r.windows, rate)
	case "assistant":
		e := strings.TrimSpace(str(o["error"]))
		if e == "" {
			return true
		}
		r.assistantError = e
		r.assistantText = messageText(o["message"])
		if r.assistantText != "" {
			r.texts = append(r.texts, r.assistantText)
		}
	case "result":
		res := &claudeResult{
			isError:   isTrue(o["is_error"]),
			subtype:   str(o["subtype"]),
			apiStatus: status(o["api_error_status"]),
		}
		if res.isError {
			res.text = str(o["result"])
			if res.text != "" {
				r.texts = append(r.texts, res.text)
			}
			var errs []json.RawMessage
			if json.Unmarshal(o["errors"], &errs) == nil {
				for _, e := range errs {
					if s := str(e); s != "" {
						r.texts = append(r.texts, s)
					}
				}
			}
		}
		r.result = res
	}
	return true
}

// messageText joins the text blocks of an assistant message.
func messageText(raw json.RawMessage) string {
	m := obj(raw)
	if m == nil {
		return ""
	}
	var blocks []json.RawMessage
	if json.Unmarshal(m["content"], &blocks) != nil {
		return str(m["content"])
	}
	var b strings.Builder
	for _, blk := range blocks {
		o := obj(blk)
		if o == nil || str(o["type"]) != "text" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(str(o["text"]))
	}
	return b.String()
}

// ClassifyClaudeCode classifies a finished `claude -p` run from its exit
// code and output, at now; a reset printed without a zone is read in loc
// (nil: now's location). It never panics and reads the last 64 KiB of
// each stream.
//
// Exit 0 is ok whatever was printed. Otherwise, structured evidence
// first:
//
//   - a rate_limit_event whose rate_limit_info.status is "rejected" (only
//     the status decides: allowed and allowed_warning are no limit, whatever
//     overageStatus says) is quota, resource its rateLimitType
//     ("five_hour", "seven_day", …), ResetAt its resetsAt (epoch seconds),
//     else the reset a usage-limit text states, else unknown;
//   - the last assistant message's "error" field: rate_limit is a limit
//     (below), authentication_failed auth, billing_error quota (resource
//     "billing", reset unknown), server_error transient, invalid_request
//     permanent unless its text is a spend or credit limit;
//   - an errored result's api_error_status (a result with is_error true,
//     whatever its subtype: "success" does not mean success): 429 is a
//     limit, 401 auth, 402 quota, 529 and 5xx transient, others permanent
//     unless its text says more.
//
// A limit is quota when a usage-limit text gives it (with that text's
// reset), a throttle with the wait a text states ("try again in …"),
// else secondary with RetryAfter -1. The usage-limit texts of every era
// are read, in an errored result, an errored assistant message, any line
// that is not a stream event, and stderr (never in the conversation
// itself):
//
//	Claude AI usage limit reached|1749924000            (epoch seconds)
//	Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).
//	5-hour limit reached ∙ resets 1am                   (no zone: loc)
//	Weekly limit reached · resets 10am (Asia/Seoul) · /upgrade …
//	You've hit your limit · resets 4:50am (Europe/Rome)
//	You've hit your limit · resets Apr 23 at 4pm (America/Recife)
//	You've hit your session limit · resets 8:30pm (Asia/Tokyo)
//	You've hit your weekly limit · resets Sep 15 at 7pm (no zone: loc)
//
// A time of day already past (by more than PastGrace) is tomorrow's; a
// date without a year, the next such date; a zone that cannot be loaded
// leaves the reset unknown. "5-hour" and "session" limits are resource
// five_hour, "weekly" ones seven_day. Then texts: "API Error: <status>
// {body}" is classified by the anthropic package's rules on that body;
// "Invalid API key", "Please run /login" and OAuth expiry are auth;
// network failures are transient. system/api_retry events are retry
// notices, never a limit. Anything else is permanent.
//
// Observations are the subscription windows the rate_limit_events
// describe (Limit 100, Remaining the percent left, at least 1 unless
// rejected); a rejected window's is kept only when the run failed.
func ClassifyClaudeCode(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	return provider.CleanReason(claudeCode(newInput(exitCode, stdout, stderr), now, loc).out)
}

func claudeCode(in *input, now time.Time, loc *time.Location) verdict {
	loc = location(loc, now)
	r := readClaude(in)
	v := r.classify(in.exit, now, loc)
	v.seen = max(v.seen, r.seen)
	v.out.Observations = mergeStates(r.observations(in.exit != 0, now), v.out.Observations)
	return v
}

func (r *claudeRun) classify(exitCode int, now time.Time, loc *time.Location) verdict {
	p := ProviderClaudeCode
	if exitCode == 0 {
		return verdict{out: provider.Unknown(p, provider.ClassOK, "exit 0")}
	}
	limit := r.limitText(now, loc)
	if rj := r.rejected; rj != nil {
		reason := "rate_limit_event status rejected"
		if rj.typ != "" {
			reason += " (" + rj.typ + ")"
		}
		reset := rj.resetsAt
		switch {
		case !reset.IsZero():
			reason += "; resetsAt"
		case limit.found && !limit.reset.IsZero():
			reset = limit.reset
			reason += "; reset from the text " + strconv.Quote(excerpt(limit.text))
		}
		return verdict{out: quotaOut(p, rj.typ, reason, reset, now), ev: evStructured}
	}
	if e := r.assistantError; e != "" {
		label := "assistant error " + e
		switch e {
		case "rate_limit":
			return verdict{out: r.limited(label, limit, now), ev: evStructured}
		case "authentication_failed":
			return verdict{out: provider.Unknown(p, provider.ClassAuth, r.withText(label)), ev: evStructured}
		case "billing_error":
			return verdict{out: quotaOut(p, ResourceBilling, r.withText(label+" (billing)"), time.Time{}, now), ev: evStructured}
		case "server_error":
			return verdict{out: provider.Unknown(p, provider.ClassTransient, r.withText(label)), ev: evStructured}
		case "invalid_request":
			if v, ok := r.apiError(now); ok && v.out.Class == provider.ClassQuota {
				return v
			}
			return verdict{out: provider.Unknown(p, provider.ClassPermanent, r.withText(label)), ev: evStructured}
		}
	}
	if res := r.result; res != nil && res.isError && res.apiStatus != 0 {
		label := fmt.Sprintf("result is_error with api_error_status %d", res.apiStatus)
		if res.subtype != "" {
			label += " (subtype " + res.subtype + ")"
		}
		switch s := res.apiStatus; {
		case s == http.StatusTooManyRequests:
			return verdict{out: r.limited(label, limit, now), ev: evStructured}
		case s == http.StatusUnauthorized:
			return verdict{out: provider.Unknown(p, provider.ClassAuth, r.withText(label)), ev: evStructured}
		case s == http.StatusPaymentRequired:
			return verdict{out: quotaOut(p, ResourceBilling, r.withText(label+" (billing)"), time.Time{}, now), ev: evStructured}
		case s == 529 || s >= 500 && s != http.StatusNotImplemented || s == http.StatusRequestTimeout:
			return verdict{out: provider.Unknown(p, provider.ClassTransient, r.withText(label)), ev: evStructured}
		default:
			if v, ok := r.apiError(now); ok && v.out.Class != provider.ClassPermanent {
				v.ev = evStructured
				return v
			}
			if r.authText() != "" {
				return verdict{out: provider.Unknown(p, provider.ClassAuth, r.withText(label)), ev: evStructured}
			}
			return verdict{out: provider.Unknown(p, provider.ClassPermanent, r.withText(label)), ev: evStructured}
		}
	}
	if limit.found {
		reason := fmt.Sprintf("usage-limit text %q", excerpt(limit.text))
		return verdict{out: quotaOut(p, limit.resource, reason, limit.reset, now), ev: evText, seen: seenText}
	}
	if v, ok := r.apiError(now); ok {
		return v
	}
	if t := r.authText(); t != "" {
		return verdict{out: provider.Unknown(p, provider.ClassAuth, fmt.Sprintf("text %q", t)), ev: evText}
	}
	lower := strings.ToLower(strings.Join(r.texts, "\n"))
	if t := networkText(lower); t != "" {
		return verdict{out: provider.Unknown(p, provider.ClassTransient, fmt.Sprintf("text %q (network or server)", t)), ev: evGeneric}
	}
	if res := r.result; res != nil && res.isError {
		reason := fmt.Sprintf("exit %d: result is_error", exitCode)
		if res.subtype != "" {
			reason += " (subtype " + res.subtype + ")"
		}
		return verdict{out: provider.Unknown(p, provider.ClassPermanent, r.withText(reason)), ev: evStructured}
	}
	return verdict{out: provider.Unknown(p, provider.ClassPermanent, fmt.Sprintf("exit %d", exitCode))}
}

// withText appends an excerpt of the run's first error text to label.
func (r *claudeRun) withText(label string) string {
	for _, t := range r.texts {
		if t = strings.TrimSpace(t); t != "" {
			return label + ": " + excerpt(t)
		}
	}
	return label
}

// authText returns the auth text the run printed, "" when none.
func (r *claudeRun) authText() string {
	for _, t := range r.texts {
		lower := strings.ToLower(t)
		for _, a := range claudeAuthTexts {
			if strings.Contains(lower, a) {
				return a
			}
		}
	}
	return ""
}

// limited classifies a rate limit the stream reported (assistant error
// rate_limit, api_error_status 429).
func (r *claudeRun) limited(label string, limit claudeLimit, now time.Time) provider.Outcome {
	p := ProviderClaudeCode
	if limit.found {
		return quotaOut(p, limit.resource, fmt.Sprintf("%s with usage-limit text %q", label, excerpt(limit.text)), limit.reset, now)
	}
	out := provider.Unknown(p, provider.ClassSecondary, label)
	for _, t := range r.texts {
		if d, ok := resetparse.MessageDelay(t); ok {
			return llm.AddRejected(llm.Wait(out, d, "the text says wait", now), 0, time.Time{}, now)
		}
	}
	if v, ok := r.apiError(now); ok && v.out.Class == provider.ClassQuota {
		return relabel(v.out, p, label+";")
	}
	return llm.NoWait(out)
}

// apiError classifies the first "API Error: <status> {body}" the run
// printed with the anthropic package's rules for that response.
func (r *claudeRun) apiError(now time.Time) (verdict, bool) {
	for _, t := range r.texts {
		if !strings.Contains(t, "API Error: ") {
			continue
		}
		m := reAPIError().FindStringSubmatchIndex(t)
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(t[m[2]:m[3]])
		rest := t[m[1]:]
		var body []byte
		if objs := embeddedObjects(rest); len(objs) > 0 {
			body, _ = json.Marshal(objs[0])
		} else {
			body = []byte(strings.TrimSpace(rest))
		}
		o := anthropic.ClassifyHTTP(&http.Response{StatusCode: code, Header: http.Header{}}, body, now)
		o.Observations = nil
		if o.Class == provider.ClassQuota && !o.ResetAt.IsZero() && o.Resource != "" {
			o = llm.AddRejected(o, 0, time.Time{}, now)
		}
		return verdict{out: relabel(o, ProviderClaudeCode, "API Error:"), ev: evText, seen: seenText}, true
	}
	return verdict{}, false
}

// claudeLimit is a usage-limit text.
type claudeLimit struct {
	found    bool
	text     string // the text matched, for a Reason
	resource string
	reset    time.Time // zero when unknown
}

// limitText finds a usage-limit text of any era in the run's texts.
func (r *claudeRun) limitText(now time.Time, loc *time.Location) claudeLimit {
	for _, t := range r.texts {
		lower := asciiLower(t)
		if !strings.Contains(lower, "limit") {
			continue
		}
		if m := submatch(reClaudePipe(), t, lower, "usage limit reached|"); m != nil {
			l := claudeLimit{found: true, text: m[0]}
			if reset, ok := resetparse.EpochSeconds(m[1]); ok {
				l.reset = reset
			}
			return l
		}
		ix := findNear(reClaudeLimit(), t, lower, []string{"limit"}, 48, 32)
		if ix == nil {
			continue
		}
		l := claudeLimit{found: true}
		word := ""
		for g := 1; g <= 2; g++ {
			if ix[2*g] >= 0 {
				word = strings.ToLower(t[ix[2*g]:ix[2*g+1]])
			}
		}
		l.resource = claudeWindow(word)
		// The reset follows the limit text, on its line or the next.
		end := ix[1]
		window := t[end:min(len(t), end+256)]
		start := strings.LastIndexByte(t[:ix[0]], '\n') + 1
		lineEnd := len(t)
		if k := strings.IndexByte(t[end:], '\n'); k >= 0 {
			lineEnd = end + k
		}
		l.text = strings.TrimSpace(t[start:lineEnd])
		if reset, _, found, ok := findClock(window, reClaudeReset(), now, loc); found && ok {
			l.reset = reset
		}
		return l
	}
	return claudeLimit{}
}

// claudeWindow is the window a usage-limit text names.
func claudeWindow(word string) string {
	switch word {
	case "5-hour", "session":
		return ResourceFiveHour
	case "weekly":
		return ResourceSevenDay
	case "opus", "opus weekly":
		return ResourceSevenDayOpus
	case "sonnet", "sonnet weekly":
		return ResourceSevenDaySonnet
	}
	return ""
}

// observations returns the windows the rate_limit_events describe.
func (r *claudeRun) observations(failed bool, now time.Time) []quota.State {
	var out []quota.State
	for _, w := range r.windows {
		if w.typ == "" || w.resetsAt.IsZero() {
			continue
		}
		if w.status == "rejected" {
			if failed {
				out = append(out, rejectedState(w.typ, 100, w.resetsAt, now))
			}
			continue
		}
		if !w.hasUtil {
			continue
		}
		out = append(out, llm.HeaderState(w.typ, 100, percentLeft(w.utilization), w.resetsAt, w.resetsAt.Unix(), now))
	}
	return out
}
