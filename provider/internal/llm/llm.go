// Package llm holds what the LLM API classifiers (anthropic, openai, gemini)
// share: header reading, retry-after, event-stream scanning, the search for
// an error in a response, the throttle cut-off and quota observations. The
// github classifier uses its JSON and text helpers (String, TrimBody) too.
package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// Limits on how much of a body is examined.
const (
	// MaxJSONBody is the largest body (or event data) decoded as JSON.
	MaxJSONBody = 1 << 20
	// MaxStream is how much of an event stream is scanned for error events.
	MaxStream = 8 << 20
	// MaxReasonMessage is how much of a server message a Reason quotes.
	MaxReasonMessage = 80
	// MaxErrorText is how much of a non-JSON error body is kept as its
	// message.
	MaxErrorText = 64 << 10
	// maxPrincipal bounds an organisation id.
	maxPrincipal = 128
)

// Header returns the first value of header name, trimmed, and whether the
// header was present at all. h may be nil.
func Header(h http.Header, name string) (string, bool) {
	vals, ok := h[name]
	if !ok {
		vals = h.Values(name)
	}
	if len(vals) == 0 {
		return "", false
	}
	return strings.TrimSpace(vals[0]), true
}

// Get is Header for a name already in canonical form (see
// textproto.CanonicalMIMEHeaderKey): a map lookup, without canonicalizing
// name on every call.
func Get(h http.Header, canonical string) (string, bool) {
	vals := h[canonical]
	if len(vals) == 0 {
		return "", false
	}
	return strings.TrimSpace(vals[0]), true
}

// Date returns the response's Date header, zero when missing or not a
// plausible HTTP-date.
func Date(h http.Header) time.Time {
	v, ok := Header(h, "Date")
	if !ok {
		return time.Time{}
	}
	t, _ := resetparse.HTTPDate(v)
	return t
}

// RetryAfter returns the wait the response stated, reading retry-after-ms
// first and then Retry-After, as the Stainless SDKs do (docs/provider-signals.md
// §6), and the header it came from. A value that does not parse, or is over
// resetparse.MaxDelay, counts as not stated.
func RetryAfter(h http.Header, date, now time.Time) (time.Duration, string, bool) {
	if v, ok := Header(h, "Retry-After-Ms"); ok {
		if d, ok := resetparse.Milliseconds(v); ok {
			return d, "retry-after-ms", true
		}
	}
	if v, ok := Header(h, "Retry-After"); ok {
		if d, ok := resetparse.RetryAfter(v, date, now); ok {
			return d, "retry-after", true
		}
	}
	return 0, "", false
}

// Count parses a non-negative decimal count of at most 18 digits.
func Count(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	return n, true
}

// Principal returns the organisation id in header name when it is present
// and looks like an id: 1 to 128 ASCII letters, digits, '-', '_', '.' or
// ':'. Anything else (empty, spaces, control characters) is not trusted.
func Principal(h http.Header, name string) (string, bool) {
	v, ok := Header(h, name)
	if !ok || v == "" || len(v) > maxPrincipal {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return "", false
		}
	}
	return v, true
}

// CleanName lowercases s and keeps it only when it is 1 to 64 bytes of
// letters, digits, '-', '_', '.' or ':' (a resource or model name).
func CleanName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || len(s) > 64 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return "", false
		}
	}
	return s, true
}

// TrimBody trims white space and a UTF-8 byte-order mark.
func TrimBody(b []byte) []byte {
	return bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(b), []byte("\ufeff")))
}

// Object decodes raw as a JSON object, nil when it is not one (or is larger
// than MaxJSONBody).
func Object(raw []byte) map[string]json.RawMessage {
	raw = TrimBody(raw)
	if len(raw) == 0 || raw[0] != '{' || len(raw) > MaxJSONBody {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	return obj
}

// Array decodes raw as a JSON array, nil when it is not one.
func Array(raw []byte) []json.RawMessage {
	raw = TrimBody(raw)
	if len(raw) == 0 || raw[0] != '[' || len(raw) > MaxJSONBody {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	return list
}

// String returns raw as a string when it is a JSON string, else "".
func String(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// Scalar returns raw as text when it is a JSON string or number, else "".
func Scalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		return String(raw)
	}
	if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
		return string(raw)
	}
	return ""
}

// Event is one server-sent event: its name ("" when the event had no
// "event:" line) and its data lines joined by "\n".
type Event struct {
	Name string
	Data []byte
}

// IsEventStream reports whether a body is a server-sent event stream: the
// Content-Type says text/event-stream, or the body starts with an "event:",
// "data:" or ":" comment line.
func IsEventStream(h http.Header, body []byte) bool {
	if ct, _ := Header(h, "Content-Type"); strings.Contains(strings.ToLower(ct), "event-stream") {
		return true
	}
	b := TrimBody(body)
	return bytes.HasPrefix(b, []byte("event:")) || bytes.HasPrefix(b, []byte("data:")) || bytes.HasPrefix(b, []byte(":"))
}

// ErrorEvents returns the events of an event stream (its first MaxStream
// bytes) that may carry an error: those named "error" or
// "response.failed", and those whose data mentions "error". Lines may end in
// LF, CRLF or CR. Event data aliases body unless it spans several lines.
func ErrorEvents(body []byte) []Event {
	if len(body) > MaxStream {
		body = body[:MaxStream]
	}
	if !bytes.Contains(body, []byte("error")) && !bytes.Contains(body, []byte("failed")) {
		return nil
	}
	var out []Event
	var name, data []byte
	lines := 0
	flush := func() {
		if lines > 0 || len(name) > 0 {
			if string(name) == "error" || string(name) == "response.failed" || bytes.Contains(data, []byte("error")) {
				out = append(out, Event{Name: string(name), Data: data})
			}
		}
		name, data, lines = nil, nil, 0
	}
	for len(body) > 0 {
		var line []byte
		i := bytes.IndexAny(body, "\r\n")
		if i < 0 {
			line, body = body, nil
		} else {
			line = body[:i]
			if body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n' {
				i++
			}
			body = body[i+1:]
		}
		if len(line) == 0 {
			flush()
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = bytes.TrimSpace(value)
		case "data":
			switch lines {
			case 0:
				data = value
			case 1:
				data = append(append(append([]byte(nil), data...), '\n'), value...)
			default:
				data = append(append(data, '\n'), value...)
			}
			lines++
		}
	}
	flush()
	return out
}

// Where an error inside a 2xx response was found, as FindError returns
// it and a Reason names it ("200 with a stream error event …").
const (
	InStreamEvent = "a stream error event"
	InErrorBody   = "an error body"
)

// FindError returns the error a response carries and, for a 2xx (success),
// where it was found ("" for other statuses):
//
//   - a 2xx event stream: the first of its error events (see ErrorEvents)
//     that holds an error, one whose data is an object parse reads an
//     error from or one named "error" whose data is not an object (its
//     text): InStreamEvent;
//   - any other 2xx: the body, when it mentions "error" and is an object
//     inBody reads an error from: InErrorBody;
//   - any other status: what parse reads from the body's object, or, when
//     the body is not a JSON object, its text (trimmed, at most
//     MaxErrorText bytes) if it has any.
//
// parse and inBody return false for an object that holds no error;
// fromText makes an error of a bare text. The providers differ in what an
// error object looks like, not in where they look for one.
func FindError[E any](h http.Header, body []byte, success bool,
	parse, inBody func(obj map[string]json.RawMessage) (E, bool), fromText func(text string) E) (e E, where string, ok bool) {
	if success {
		if IsEventStream(h, body) {
			for _, ev := range ErrorEvents(body) {
				if obj := Object(ev.Data); obj != nil {
					if e, ok := parse(obj); ok {
						return e, InStreamEvent, true
					}
					continue
				}
				if ev.Name == "error" {
					return fromText(string(ev.Data)), InStreamEvent, true
				}
			}
			return e, "", false
		}
		if !bytes.Contains(body, []byte(`"error"`)) {
			return e, "", false
		}
		if obj := Object(body); obj != nil {
			if e, ok := inBody(obj); ok {
				return e, InErrorBody, true
			}
		}
		return e, "", false
	}
	if obj := Object(body); obj != nil {
		e, ok = parse(obj)
		return e, "", ok
	}
	if t := TrimBody(body); len(t) > 0 {
		if len(t) > MaxErrorText {
			t = t[:MaxErrorText]
		}
		return fromText(string(t)), "", true
	}
	return e, "", false
}

// WithMessage appends to label an excerpt of a server message
// (provider.CleanText: one line, secrets masked, at most MaxReasonMessage
// runes): "label: message". A message with nothing to show leaves label as
// it is.
func WithMessage(label, message string) string {
	if m := provider.CleanText(message, MaxReasonMessage); m != "" {
		return label + ": " + m
	}
	return label
}

// Wait makes out a throttle with a stated wait d: secondary with RetryAfter
// d, or, when d is over quota.ThrottleQuotaCutoff, quota with ResetAt = now
// + d (docs/design.md, Glossary: a throttle whose stated wait is over 5 minutes is quota).
// why names where d came from.
func Wait(out provider.Outcome, d time.Duration, why string, now time.Time) provider.Outcome {
	out.Class = provider.ClassSecondary
	out.RetryAfter = d
	out.Reason += fmt.Sprintf("; %s %s", why, FormatWait(d))
	if d > quota.ThrottleQuotaCutoff {
		out.Class = provider.ClassQuota
		out.ResetAt = now.Add(d)
		out.Reason += fmt.Sprintf(" (over %s: quota)", quota.ThrottleQuotaCutoff)
	}
	return out
}

// UntilReset makes out a throttle that lasts until an exhausted quota's
// reset (already on this machine's clock): secondary with RetryAfter the
// wait and ResetAt the reset, or quota when the wait is over the cut-off.
func UntilReset(out provider.Outcome, reset time.Time, why string, now time.Time) provider.Outcome {
	d := max(reset.Sub(now), 0)
	out.Class = provider.ClassSecondary
	out.RetryAfter = d
	out.ResetAt = reset
	out.Reason += fmt.Sprintf("; %s, waits until the reset (%s)", why, FormatWait(d))
	if d > quota.ThrottleQuotaCutoff {
		out.Class = provider.ClassQuota
		out.Reason += fmt.Sprintf(" (over %s: quota)", quota.ThrottleQuotaCutoff)
	}
	return out
}

// NoWait makes out a throttle whose wait was not stated: secondary with
// RetryAfter -1.
func NoWait(out provider.Outcome) provider.Outcome {
	out.Class = provider.ClassSecondary
	out.RetryAfter = -1
	out.Reason += "; no retry-after"
	return out
}

// FormatWait renders a wait for a Reason: to the millisecond under a
// minute, else to the second.
func FormatWait(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Family is one rate-limit header family: the resource it describes and
// the canonical names (see textproto.CanonicalMIMEHeaderKey) of its limit,
// remaining and reset headers.
type Family struct {
	Resource                         string
	LimitKey, RemainingKey, ResetKey string
}

// NewFamily returns the family of resource whose headers are named limit,
// remaining and reset, in any case.
func NewFamily(resource, limit, remaining, reset string) Family {
	return Family{
		Resource:     resource,
		LimitKey:     textproto.CanonicalMIMEHeaderKey(limit),
		RemainingKey: textproto.CanonicalMIMEHeaderKey(remaining),
		ResetKey:     textproto.CanonicalMIMEHeaderKey(reset),
	}
}

// Read returns what family f's headers in h say: the remaining count, the
// limit (quota.Unknown when its header is absent) and the reset header's
// value, which the provider's own encoding reads. ok is false when the
// remaining or reset header is missing, or a count is not a non-negative
// decimal (Count).
func (f Family) Read(h http.Header) (limit, remaining int64, reset string, ok bool) {
	remV, ok := Get(h, f.RemainingKey)
	if !ok {
		return 0, 0, "", false
	}
	remaining, ok = Count(remV)
	if !ok {
		return 0, 0, "", false
	}
	reset, ok = Get(h, f.ResetKey)
	if !ok {
		return 0, 0, "", false
	}
	limit = quota.Unknown
	if v, ok := Get(h, f.LimitKey); ok {
		if limit, ok = Count(v); !ok {
			return 0, 0, "", false
		}
	}
	return limit, remaining, reset, true
}

// HeaderState returns a quota state read from response headers at now.
// reset is on this machine's clock; raw is the provider's own reset in
// epoch seconds. Cause is exhausted when remaining is 0.
func HeaderState(resource string, limit, remaining int64, reset time.Time, raw int64, now time.Time) quota.State {
	s := quota.State{
		Key:        quota.Key{Resource: resource},
		Limit:      limit,
		Remaining:  remaining,
		ResetAt:    reset,
		ResetKnown: true,
		RawReset:   raw,
		ObservedAt: now,
		Source:     quota.SourceHeaders,
	}
	if remaining == 0 {
		s.Cause = quota.CauseExhausted
	}
	return s
}

// RawReset is the provider-clock epoch seconds of a reset that is at on
// this machine's clock: date + (at − now) when the response had a Date,
// else at. It keys the activity log and does not move with our clock.
func RawReset(at, date, now time.Time) int64 {
	if date.IsZero() {
		return at.Unix()
	}
	return date.Add(at.Sub(now)).Unix()
}

// AddRejected appends to out a rejected state for out.Resource when out is a
// quota with a known reset and no observation of that resource is there
// already: remaining 0, cause exhausted, source rejected. raw is the
// provider's own reset (0: derived with RawReset).
func AddRejected(out provider.Outcome, raw int64, date, now time.Time) provider.Outcome {
	if out.Class != provider.ClassQuota || out.ResetAt.IsZero() || out.Resource == "" {
		return out
	}
	for _, o := range out.Observations {
		if o.Resource == out.Resource {
			return out
		}
	}
	if raw == 0 {
		raw = RawReset(out.ResetAt, date, now)
	}
	out.Observations = append(out.Observations, quota.State{
		Key:        quota.Key{Resource: out.Resource},
		Limit:      out.Limit,
		Remaining:  0,
		ResetAt:    out.ResetAt,
		ResetKnown: true,
		RawReset:   raw,
		ObservedAt: now,
		Source:     quota.SourceRejected,
		Cause:      quota.CauseExhausted,
	})
	return out
}

// FindState returns the observation of resource in states.
func FindState(states []quota.State, resource string) (quota.State, bool) {
	for _, s := range states {
		if s.Resource == resource {
			return s, true
		}
	}
	return quota.State{}, false
}

// LatestExhausted returns the observation of one response that says its
// quota is used up (quota.State.Depleted) with the latest reset: the one
// that binds longest.
func LatestExhausted(states []quota.State) (quota.State, bool) {
	var best quota.State
	found := false
	for _, s := range states {
		if s.Depleted() && (!found || s.ResetAt.After(best.ResetAt)) {
			best, found = s, true
		}
	}
	return best, found
}

// StatusClass is the class a bare HTTP status implies when no body or
// header says more: 2xx and 304 ok; 401 auth; 408, 409 (both retried by the
// Stainless SDKs, §6) and 5xx other than 501 transient; else permanent.
func StatusClass(code int) provider.Class {
	switch {
	case code >= 200 && code < 300 || code == http.StatusNotModified:
		return provider.ClassOK
	case code == http.StatusUnauthorized:
		return provider.ClassAuth
	case code == http.StatusRequestTimeout || code == http.StatusConflict:
		return provider.ClassTransient
	case code >= 500 && code != http.StatusNotImplemented:
		return provider.ClassTransient
	}
	return provider.ClassPermanent
}

// ErrorClass is the class of an error response that no rule of the
// provider's decided: StatusClass of its status, except that a success
// status (an error found inside a 2xx whose status mapping is a success)
// is transient.
func ErrorClass(status int) provider.Class {
	if c := StatusClass(status); c != provider.ClassOK {
		return c
	}
	return provider.ClassTransient
}
