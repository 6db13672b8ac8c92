package agentcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/gemini"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
)

// Gemini CLI's exit codes (packages/core/src/utils/exitCodes.ts).
const (
	geminiExitAuth      = 41
	geminiExitInput     = 42
	geminiExitSandbox   = 44
	geminiExitConfig    = 52
	geminiExitTurnLimit = 53
	geminiExitTool      = 54
	geminiExitCancel    = 130
	// geminiExit429 is 429 truncated to 8 bits: in json and stream-json
	// modes the exit code is the error's code, which may be its HTTP status
	// (inferred from packages/cli/src/utils/errors.ts; unverified).
	geminiExit429 = 429 % 256
)

var (
	// reGeminiUsage is the UI's "Usage limit reached for gemini-2.5-pro.".
	reGeminiUsage = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)usage limit reached for ([A-Za-z0-9][A-Za-z0-9._:-]{0,63}?)\.?(?:\s|$)`)
	})
	// reGeminiResets precedes the UI's "Access resets at 3:45 PM PDT.".
	reGeminiResets = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\baccess resets at[ \t]+`) })
	// reGeminiAPIError is the text mode's "[API Error: <msg> (Status:
	// RESOURCE_EXHAUSTED)]".
	reGeminiAPIError = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\[API Error: (.*?)(?: \(Status: ([A-Za-z_ ]{2,40})\))?\]`)
	})
	// reGeminiDaily are the texts of a daily quota.
	reGeminiDaily = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)exhausted your daily quota|reached your daily (?:[A-Za-z0-9._-]+ )?quota limit|reached a daily quota limit`)
	})
	// reGeminiWait is a wait the quota errors state: "Retrying after
	// 26s.", "requires a long delay of 3600s.", "Please retry in 10s".
	reGeminiWait = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:retrying after|long delay of|retry in)[ \t]+([0-9]+(?:\.[0-9]+)?(?:ms|s))\b`)
	})
	// reGeminiErrorName is an error class printed by name, as in a stack
	// trace: "TerminalQuotaError: You have exhausted your daily quota".
	reGeminiErrorName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(TerminalQuotaError|RetryableQuotaError|FatalAuthenticationError)\b:?[ \t]*([^\n]*)`)
	})
)

// reJSClass is a JavaScript error class name.
var reJSClass = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,63}Error$`) })

// googleStatuses are the HTTP statuses of google.rpc codes.
var googleStatuses = map[string]int{
	"RESOURCE_EXHAUSTED":  http.StatusTooManyRequests,
	"UNAVAILABLE":         http.StatusServiceUnavailable,
	"UNAUTHENTICATED":     http.StatusUnauthorized,
	"PERMISSION_DENIED":   http.StatusForbidden,
	"INVALID_ARGUMENT":    http.StatusBadRequest,
	"FAILED_PRECONDITION": http.StatusBadRequest,
	"NOT_FOUND":           http.StatusNotFound,
	"INTERNAL":            http.StatusInternalServerError,
	"DEADLINE_EXCEEDED":   http.StatusGatewayTimeout,
	"CANCELLED":           499,
}

// geminiPermanentErrors are Gemini CLI's fatal error classes a wait cannot
// fix.
var geminiPermanentErrors = map[string]bool{
	"FatalInputError": true, "FatalConfigError": true, "FatalTurnLimitedError": true,
	"FatalToolExecutionError": true, "FatalSandboxError": true, "FatalCancellationError": true,
	"ModelNotFoundError": true,
}

// geminiEvents are the stream-json event types.
var geminiEvents = map[string]bool{"init": true, "message": true, "tool_use": true, "tool_result": true, "error": true, "result": true}

// geminiErr is a structured error Gemini CLI printed.
type geminiErr struct {
	typ, message string
	code         int // error.code when it is an HTTP status
}

type geminiRun struct {
	seen  recognition
	errs  []geminiErr
	texts []string
}

func readGemini(in *input) *geminiRun {
	r := &geminiRun{}
	var plain []byte
	for _, l := range in.lines() {
		if l.obj != nil {
			if !r.event(l.obj) {
				r.jsonError(l.obj)
			}
			continue
		}
		if !geminiNotice(l.text) {
			plain = append(append(plain, l.text...), '\n')
		}
	}
	var errText []byte
	eachLine(in.stderr, func(line []byte) {
		if !geminiNotice(line) {
			errText = append(append(errText, line...), '\n')
		}
	})
	for _, t := range [][]byte{plain, errText} {
		if len(bytes.TrimSpace(t)) == 0 {
			continue
		}
		s := string(t)
		r.texts = append(r.texts, s)
		// json mode: a (pretty-printed) {"error":{"type","message","code"}}.
		if strings.Contains(s, `"error"`) {
			for _, o := range embeddedObjects(s) {
				r.jsonError(o)
			}
		}
	}
	return r
}

// jsonError reads the json mode's {"error":{"type","message","code"}},
// whose type is the JavaScript error class ("TerminalQuotaError"), not an
// API's snake_case error type.
func (r *geminiRun) jsonError(o map[string]json.RawMessage) {
	if _, ok := o["type"]; ok {
		return // an API error body, {"type":"error","error":{…}}
	}
	e := obj(o["error"])
	if e == nil || e["message"] == nil || e["code"] == nil || !reJSClass().MatchString(str(e["type"])) {
		return
	}
	r.seen = seenFormat
	r.errs = append(r.errs, geminiErr{typ: str(e["type"]), message: str(e["message"]), code: status(e["code"])})
}

// event reads one stream-json event and reports whether it was one.
func (r *geminiRun) event(o map[string]json.RawMessage) bool {
	typ := str(o["type"])
	if !geminiEvents[typ] || o["conversation_id"] != nil {
		return false // not an event, or Antigravity's (which names conversations)
	}
	if typ == "result" {
		if _, ok := o["status"]; !ok {
			return false // not Gemini CLI's result event
		}
	}
	if typ == "init" || typ == "result" {
		// message, tool_use and error events are too common a shape.
		r.seen = seenFormat
	}
	if typ == "result" && str(o["status"]) == "error" {
		e := obj(o["error"])
		if e != nil {
			r.errs = append(r.errs, geminiErr{typ: str(e["type"]), message: str(e["message"]), code: status(e["code"])})
		}
	}
	return true
}

// ClassifyGeminiCLI classifies a finished Gemini CLI run (`gemini -p …`,
// any --output-format) from its exit code and output, at now; a reset
// printed without a zone is read in loc (nil: now's location). It never
// panics and reads the last 64 KiB of each stream.
//
// Exit 0 is ok whatever was printed. Otherwise structured errors first:
// the stream-json result {"type":"result","status":"error","error":
// {"type","message"}} and the json mode's {"error":{"type","message",
// "code"}} (pretty-printed on stderr):
//
//   - TerminalQuotaError: quota; resource the model "Usage limit reached
//     for <model>." names; ResetAt "Access resets at 3:45 PM PDT." (en-US
//     time with a US zone abbreviation, or GMT±h), else now + the wait the
//     message states ("requires a long delay of 3600s"), else unknown;
//   - RetryableQuotaError: a throttle with the wait its message states
//     ("Retrying after 26s."), secondary (quota over
//     quota.ThrottleQuotaCutoff), RetryAfter -1 without one;
//   - FatalAuthenticationError: auth; FatalInputError, FatalConfigError,
//     FatalTurnLimitedError, FatalToolExecutionError, FatalSandboxError,
//     FatalCancellationError: permanent;
//   - any other error whose message holds a Google API error (a JSON
//     string nested inside a JSON error is unwrapped): the gemini package's
//     rules on that error (RESOURCE_EXHAUSTED with RetryInfo, QuotaFailure,
//     "limit: 0", per-day quota ids, MODEL_CAPACITY_EXHAUSTED, …).
//
// Then texts: "Usage limit reached for <model>." is quota (reset "Access
// resets at …"); "You have exhausted your daily quota", "You have reached
// your daily … quota limit" and a TerminalQuotaError printed by name are
// quota; "[API Error: <msg> (Status: <STATUS>)]" is classified by the
// gemini package as a response with that status and message (nested JSON
// unwrapped); network failures are transient. Gemini CLI's retry notices
// ("Attempt 1 failed with status 429. Retrying with backoff...") are
// skipped. Then exit codes: 41 auth; 42, 44, 52, 53, 54 permanent; 130
// (cancelled) permanent; 173 (429 mod 256, inferred) without a text saying
// more transient, since only a text or a field makes a limit. Anything
// else is permanent.
func ClassifyGeminiCLI(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome {
	return provider.CleanReason(geminiCLI(newInput(exitCode, stdout, stderr), now, loc).out)
}

func geminiCLI(in *input, now time.Time, loc *time.Location) verdict {
	loc = location(loc, now)
	r := readGemini(in)
	v := r.classify(in.exit, now, loc)
	v.seen = max(v.seen, r.seen)
	return v
}

func (r *geminiRun) classify(exitCode int, now time.Time, loc *time.Location) verdict {
	p := ProviderGeminiCLI
	if exitCode == 0 {
		return verdict{out: provider.Unknown(p, provider.ClassOK, "exit 0")}
	}
	all := strings.Join(r.texts, "\n")
	for i := len(r.errs) - 1; i >= 0; i-- {
		if v, ok := r.structured(r.errs[i], all, now, loc); ok {
			return v
		}
	}
	if v, ok := r.text(all, "", now, loc); ok {
		return v
	}
	switch exitCode {
	case geminiExitAuth:
		return verdict{out: provider.Unknown(p, provider.ClassAuth, "exit 41 (FatalAuthenticationError)")}
	case geminiExitInput, geminiExitSandbox, geminiExitConfig, geminiExitTurnLimit, geminiExitTool:
		return verdict{out: provider.Unknown(p, provider.ClassPermanent, fmt.Sprintf("exit %d (a fatal input, configuration or tool error)", exitCode))}
	case geminiExitCancel:
		return verdict{out: provider.Unknown(p, provider.ClassPermanent, "exit 130 (cancelled)")}
	case geminiExit429:
		return verdict{out: provider.Unknown(p, provider.ClassTransient, "exit 173 may be a 429 (status mod 256), but no text says so")}
	}
	return verdict{out: provider.Unknown(p, provider.ClassPermanent, fmt.Sprintf("exit %d", exitCode))}
}

// structured classifies one structured error.
func (r *geminiRun) structured(e geminiErr, all string, now time.Time, loc *time.Location) (verdict, bool) {
	p := ProviderGeminiCLI
	label := "error " + e.typ
	if e.typ == "" {
		label = "error"
	}
	ctx := e.message + "\n" + all
	switch {
	case e.typ == "TerminalQuotaError":
		return verdict{out: geminiQuota(withMsg(label, e.message), e.message, ctx, now, loc), ev: evStructured, seen: seenText}, true
	case e.typ == "RetryableQuotaError":
		return verdict{out: geminiThrottle(withMsg(label, e.message), e.message, now), ev: evStructured, seen: seenText}, true
	case e.typ == "FatalAuthenticationError":
		return verdict{out: provider.Unknown(p, provider.ClassAuth, withMsg(label, e.message)), ev: evStructured, seen: seenText}, true
	case geminiPermanentErrors[e.typ]:
		return verdict{out: provider.Unknown(p, provider.ClassPermanent, withMsg(label, e.message)), ev: evStructured, seen: seenText}, true
	}
	if body, code, ok := googleError(e.message, e.code); ok {
		o := gemini.ClassifyHTTP(&http.Response{StatusCode: code, Header: http.Header{}}, body, now)
		return verdict{out: adoptGemini(o, label+":", now), ev: evStructured, seen: seenText}, true
	}
	if v, ok := r.text(e.message, label+" with", now, loc); ok {
		v.ev = evStructured
		return v, true
	}
	if e.code == http.StatusTooManyRequests {
		return verdict{out: geminiThrottle(withMsg(label+" code 429", e.message), e.message, now), ev: evStructured, seen: seenText}, true
	}
	return verdict{}, false
}

// text applies the text rules to s; prefix (may be "") starts the Reason.
func (r *geminiRun) text(s, prefix string, now time.Time, loc *time.Location) (verdict, bool) {
	p := ProviderGeminiCLI
	lead := func(reason string) string {
		if prefix == "" {
			return reason
		}
		return prefix + " " + reason
	}
	lower := strings.ToLower(s)
	if m := submatch(reGeminiUsage(), s, lower, "usage limit reached for"); m != nil {
		return verdict{out: geminiQuota(lead(fmt.Sprintf("text %q", excerpt(m[0]))), s, s, now, loc), ev: evText, seen: seenText}, true
	}
	if m := submatch(reGeminiDaily(), s, lower, "daily"); m != nil {
		return verdict{out: geminiQuota(lead(fmt.Sprintf("text %q", m[0])), s, s, now, loc), ev: evText, seen: seenText}, true
	}
	if m := submatch(reGeminiErrorName(), s, s, "QuotaError", "FatalAuthenticationError"); m != nil {
		label := lead(m[1])
		switch m[1] {
		case "TerminalQuotaError":
			return verdict{out: geminiQuota(withMsg(label, m[2]), m[2], s, now, loc), ev: evText, seen: seenText}, true
		case "RetryableQuotaError":
			return verdict{out: geminiThrottle(withMsg(label, m[2]), m[2], now), ev: evText, seen: seenText}, true
		default:
			return verdict{out: provider.Unknown(p, provider.ClassAuth, withMsg(label, m[2])), ev: evText, seen: seenText}, true
		}
	}
	if m := submatch(reGeminiAPIError(), s, s, "[API Error: "); m != nil {
		msg, st := m[1], strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(m[2]), " ", "_"))
		code := googleStatuses[st]
		body, c, ok := googleError(msg, code)
		if !ok {
			if code == 0 {
				code = http.StatusInternalServerError
				if strings.Contains(msg, "429") || strings.Contains(strings.ToLower(msg), "quota") {
					code = http.StatusTooManyRequests
				}
			}
			c = code
			body, _ = json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": st}})
		}
		o := gemini.ClassifyHTTP(&http.Response{StatusCode: c, Header: http.Header{}}, body, now)
		return verdict{out: adoptGemini(o, lead("[API Error]:"), now), ev: evText, seen: seenText}, true
	}
	if strings.Contains(lower, "failed to login") {
		return verdict{out: provider.Unknown(p, provider.ClassAuth, lead(`text "Failed to login"`)), ev: evText, seen: seenText}, true
	}
	if t := networkText(strings.ToLower(s)); t != "" {
		return verdict{out: provider.Unknown(p, provider.ClassTransient, lead(fmt.Sprintf("text %q (network or server)", t))), ev: evGeneric}, true
	}
	return verdict{}, false
}

// googleError finds a Google API error ({"error":{"code","message",
// "status","details"}}) in a message, unwrapping an error whose message is
// itself a JSON error, and returns the innermost as a body with its code
// (else fallback, else 500).
func googleError(msg string, fallback int) ([]byte, int, bool) {
	var found map[string]json.RawMessage
	for depth := 0; depth < 4 && strings.Contains(msg, "{"); depth++ {
		var next map[string]json.RawMessage
		for _, o := range embeddedObjects(msg) {
			if e := obj(o["error"]); e != nil {
				next = o
				break
			}
		}
		if next == nil {
			break
		}
		found = next
		msg = str(obj(next["error"])["message"])
	}
	if found == nil {
		return nil, 0, false
	}
	e := obj(found["error"])
	code := status(e["code"])
	if code == 0 {
		code = googleStatuses[str(e["status"])]
	}
	if code == 0 {
		code = fallback
	}
	if code == 0 {
		code = http.StatusInternalServerError
	}
	body, err := json.Marshal(found)
	if err != nil {
		return nil, 0, false
	}
	return body, code, true
}

// adoptGemini adopts the gemini package's outcome.
func adoptGemini(o provider.Outcome, label string, now time.Time) provider.Outcome {
	o.Observations = nil
	if o.Class == provider.ClassQuota && !o.ResetAt.IsZero() && o.Resource != "" {
		o = llm.AddRejected(o, 0, time.Time{}, now)
	}
	return relabel(o, ProviderGeminiCLI, label)
}

// geminiWait is the wait a quota error's message states.
func geminiWait(msg string) (time.Duration, bool) {
	if m := reGeminiWait().FindStringSubmatch(msg); m != nil {
		if d, ok := resetparse.GoDuration(m[1]); ok {
			return d, true
		}
	}
	return resetparse.MessageDelay(msg)
}

// geminiQuota is a terminal quota: its model, and its reset from "Access
// resets at …" in ctx, else the wait msg states.
func geminiQuota(reason, msg, ctx string, now time.Time, loc *time.Location) provider.Outcome {
	resource := ""
	if m := submatch(reGeminiUsage(), ctx, strings.ToLower(ctx), "usage limit reached for"); m != nil {
		if name, ok := llm.CleanName(m[1]); ok {
			resource = name
		}
	}
	if reset, clock, found, ok := findClock(ctx, reGeminiResets(), now, loc); found {
		if ok {
			return quotaOut(ProviderGeminiCLI, resource, reason+"; access resets at "+strings.TrimSpace(clock), reset, now)
		}
		reason += fmt.Sprintf("; %q is not a time", excerpt(clock))
	}
	if d, ok := geminiWait(msg); ok {
		out := quotaOut(ProviderGeminiCLI, resource, reason+"; wait "+llm.FormatWait(d), now.Add(d), now)
		out.RetryAfter = d
		return out
	}
	return quotaOut(ProviderGeminiCLI, resource, reason, time.Time{}, now)
}

// geminiThrottle is a retryable quota with the wait msg states.
func geminiThrottle(reason, msg string, now time.Time) provider.Outcome {
	out := provider.Unknown(ProviderGeminiCLI, provider.ClassSecondary, reason)
	if d, ok := geminiWait(msg); ok {
		return llm.Wait(out, d, "the message says wait", now)
	}
	return llm.NoWait(out)
}

// geminiNotice reports whether a line is one of Gemini CLI's retry notices
// ("Attempt 1 failed with status 429. Retrying with backoff...").
func geminiNotice(line []byte) bool {
	l := bytes.ToLower(bytes.TrimSpace(line))
	if bytes.Contains(l, []byte("retrying with backoff")) {
		return true
	}
	rest, ok := bytes.CutPrefix(l, []byte("attempt "))
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && bytes.HasPrefix(rest[i:], []byte(" failed"))
}
