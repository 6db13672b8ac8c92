package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// violation is one QuotaFailure violation.
type violation struct {
	metric, id, model string
	value             int64 // quotaValue; quota.Unknown when absent
}

// apiError is a google.rpc.Status error: {"error":{"code","message",
// "status","details":[…],"errors":[…]}}.
type apiError struct {
	code    int    // error.code; 0 when absent
	message string // error.message
	status  string // error.status ("RESOURCE_EXHAUSTED", …)
	// retryDelay is RetryInfo.retryDelay, when given and valid.
	retryDelay time.Duration
	hasDelay   bool
	violations []violation
	// reasons are ErrorInfo reasons and errors[].reason values.
	reasons []string
	// info* are ErrorInfo metadata: quota_limit, quota_metric, model and
	// quota_limit_value.
	infoLimit, infoMetric, infoModel string
	infoValue                        int64
	// inSuccess names where an error in a 2xx response was found.
	inSuccess string
}

// hasReason reports whether an ErrorInfo or errors[] reason is r.
func (e *apiError) hasReason(r string) bool {
	for _, x := range e.reasons {
		if strings.EqualFold(x, r) {
			return true
		}
	}
	return false
}

// parseError reads the google.rpc.Status under obj["error"].
func parseError(obj map[string]json.RawMessage) (apiError, bool) {
	inner := llm.Object(obj["error"])
	if inner == nil {
		return apiError{}, false
	}
	e := apiError{
		message:   llm.String(inner["message"]),
		status:    strings.ToUpper(strings.TrimSpace(llm.String(inner["status"]))),
		infoValue: quota.Unknown,
	}
	if n, err := strconv.Atoi(llm.Scalar(inner["code"])); err == nil && n >= 100 && n <= 599 {
		e.code = n
	}
	var details []json.RawMessage
	if json.Unmarshal(inner["details"], &details) == nil {
		for _, d := range details {
			e.addDetail(llm.Object(d))
		}
	}
	var errs []json.RawMessage
	if json.Unmarshal(inner["errors"], &errs) == nil {
		for _, x := range errs {
			if o := llm.Object(x); o != nil {
				if r := strings.TrimSpace(llm.String(o["reason"])); r != "" {
					e.reasons = append(e.reasons, r)
				}
			}
		}
	}
	return e, e.code != 0 || e.message != "" || e.status != "" || len(e.reasons) > 0 || len(e.violations) > 0
}

// addDetail reads one details[] entry: RetryInfo, QuotaFailure, ErrorInfo.
func (e *apiError) addDetail(d map[string]json.RawMessage) {
	if d == nil {
		return
	}
	typ := llm.String(d["@type"])
	switch {
	case strings.HasSuffix(typ, "google.rpc.RetryInfo"):
		if v, ok := resetparse.ProtoDuration(llm.String(d["retryDelay"])); ok && !e.hasDelay {
			e.retryDelay, e.hasDelay = v, true
		}
	case strings.HasSuffix(typ, "google.rpc.QuotaFailure"):
		var vs []json.RawMessage
		if json.Unmarshal(d["violations"], &vs) != nil {
			return
		}
		for _, raw := range vs {
			o := llm.Object(raw)
			if o == nil {
				continue
			}
			v := violation{
				metric: llm.String(o["quotaMetric"]),
				id:     llm.String(o["quotaId"]),
				value:  quota.Unknown,
			}
			if dims := llm.Object(o["quotaDimensions"]); dims != nil {
				v.model = llm.String(dims["model"])
			}
			if n, ok := llm.Count(llm.Scalar(o["quotaValue"])); ok {
				v.value = n
			}
			e.violations = append(e.violations, v)
		}
	case strings.HasSuffix(typ, "google.rpc.ErrorInfo"):
		if r := strings.TrimSpace(llm.String(d["reason"])); r != "" {
			e.reasons = append(e.reasons, r)
		}
		if md := llm.Object(d["metadata"]); md != nil {
			e.infoLimit = llm.String(md["quota_limit"])
			e.infoMetric = llm.String(md["quota_metric"])
			e.infoModel = llm.String(md["model"])
			if n, ok := llm.Count(llm.Scalar(md["quota_limit_value"])); ok {
				e.infoValue = n
			}
		}
	}
}

// errorIn returns the first error of a JSON object or array body.
func errorIn(data []byte) (apiError, bool) {
	if obj := llm.Object(data); obj != nil {
		return parseError(obj)
	}
	for _, item := range llm.Array(data) {
		if obj := llm.Object(item); obj != nil {
			if e, ok := parseError(obj); ok {
				return e, true
			}
		}
	}
	return apiError{}, false
}

// findError returns the error a response carries: for a 2xx, an error in
// its event stream (alt=sse), in its JSON array stream, or as its body;
// otherwise the body's error, or the body's text when it is not JSON.
func findError(h http.Header, body []byte, success bool) (apiError, bool) {
	if success {
		if llm.IsEventStream(h, body) {
			for _, ev := range llm.ErrorEvents(body) {
				if e, ok := errorIn(ev.Data); ok {
					e.inSuccess = llm.InStreamEvent
					return e, true
				}
			}
			return apiError{}, false
		}
		if !bytes.Contains(body, []byte(`"error"`)) {
			return apiError{}, false
		}
		if e, ok := errorIn(body); ok {
			e.inSuccess = llm.InErrorBody
			return e, true
		}
		return apiError{}, false
	}
	t := llm.TrimBody(body)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return errorIn(t)
	}
	if len(t) > 0 {
		if len(t) > llm.MaxErrorText {
			t = t[:llm.MaxErrorText]
		}
		return apiError{message: string(t), infoValue: quota.Unknown}, true
	}
	return apiError{}, false
}

// statusOfCode maps google.rpc.Code names to HTTP statuses.
var statusOfCode = map[string]int{
	"INVALID_ARGUMENT":    http.StatusBadRequest,
	"FAILED_PRECONDITION": http.StatusBadRequest,
	"OUT_OF_RANGE":        http.StatusBadRequest,
	"UNAUTHENTICATED":     http.StatusUnauthorized,
	"PERMISSION_DENIED":   http.StatusForbidden,
	"NOT_FOUND":           http.StatusNotFound,
	"ABORTED":             http.StatusConflict,
	"ALREADY_EXISTS":      http.StatusConflict,
	"RESOURCE_EXHAUSTED":  http.StatusTooManyRequests,
	"CANCELLED":           499,
	"INTERNAL":            http.StatusInternalServerError,
	"UNKNOWN":             http.StatusInternalServerError,
	"DATA_LOSS":           http.StatusInternalServerError,
	"UNIMPLEMENTED":       http.StatusNotImplemented,
	"UNAVAILABLE":         http.StatusServiceUnavailable,
	"DEADLINE_EXCEEDED":   http.StatusGatewayTimeout,
}

// Resource naming.

var (
	// reLimitName reads Code Assist's "limit 'Gemini 2.5 Pro Requests per
	// day per user per tier'".
	reLimitName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\blimit '([^']{1,160})'`) })
	// reWindowWords finds "per minute", "per day", "per hour" in a name.
	reWindowWords = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bper (minute|day|hour|second)\b`) })
)

// camelWords splits "GenerateRequestsPerMinute" into its words.
func camelWords(s string) []string {
	var words []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' && !(s[i-1] >= 'A' && s[i-1] <= 'Z') {
			words = append(words, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		words = append(words, s[start:])
	}
	return words
}

// dimensionOf names the counted unit in words: input-tokens,
// output-tokens, tokens or requests ("" when none).
func dimensionOf(words []string) string {
	for i, w := range words {
		lw := strings.ToLower(w)
		next := ""
		if i+1 < len(words) {
			next = strings.ToLower(words[i+1])
		}
		switch {
		case (lw == "input" || lw == "output") && strings.HasPrefix(next, "token"):
			return lw + "-tokens"
		case strings.HasPrefix(lw, "token"):
			return "tokens"
		case strings.HasPrefix(lw, "request"):
			return "requests"
		}
	}
	return ""
}

// windowOf names the window in words ("minute", "day", …), "" when none.
func windowOf(words []string) string {
	for i := 0; i+1 < len(words); i++ {
		if strings.EqualFold(words[i], "per") {
			switch w := strings.ToLower(words[i+1]); w {
			case "minute", "day", "hour", "second":
				return w
			}
		}
	}
	return ""
}

// idResource names the quota of a quotaId ("GenerateRequestsPerDay
// PerProjectPerModel-FreeTier" → "requests-per-day"): its dimension and
// window, else the whole id cleaned, else "".
func idResource(id string) string {
	base, _, _ := strings.Cut(strings.TrimSpace(id), "-")
	if len(base) > 128 {
		return ""
	}
	words := camelWords(base)
	dim, win := dimensionOf(words), windowOf(words)
	switch {
	case dim != "" && win != "":
		return dim + "-per-" + win
	case dim != "":
		return dim
	}
	if name, ok := llm.CleanName(id); ok {
		return name
	}
	return ""
}

// metricResource names the counted unit of a quotaMetric
// ("generativelanguage.googleapis.com/generate_content_free_tier_requests"
// → "requests"), "" when it names none.
func metricResource(metric string) string {
	if i := strings.LastIndexByte(metric, '/'); i >= 0 {
		metric = metric[i+1:]
	}
	return dimensionOf(strings.Split(metric, "_"))
}

// withModel appends ":" and the model to a resource, when both are usable.
func withModel(resource, model string) string {
	if resource == "" {
		return ""
	}
	model = strings.TrimPrefix(strings.TrimSpace(model), "models/")
	if m, ok := llm.CleanName(model); ok {
		return resource + ":" + m
	}
	return resource
}

// violationResource names the quota of a violation:
// "requests-per-minute:gemini-2.5-pro".
func violationResource(v violation) string {
	res := idResource(v.id)
	if res == "" {
		res = metricResource(v.metric)
	}
	return withModel(res, v.model)
}

// limitNameResource names the quota of Code Assist's limit text ("Gemini
// 2.5 Pro Requests per day per user per tier" →
// "requests-per-day:gemini-2.5-pro").
func limitNameResource(msg string) string {
	m := reLimitName().FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	words := strings.Fields(m[1])
	dim := dimensionOf(words)
	if dim == "" {
		return ""
	}
	res := dim
	if w := reWindowWords().FindStringSubmatch(m[1]); w != nil {
		res += "-per-" + strings.ToLower(w[1])
	}
	// The model is the words before the dimension.
	var model []string
	for _, w := range words {
		lw := strings.ToLower(w)
		if strings.HasPrefix(lw, "request") || strings.HasPrefix(lw, "token") || lw == "input" || lw == "output" {
			break
		}
		model = append(model, lw)
	}
	return withModel(res, strings.Join(model, "-"))
}

// daily reports whether a quota name is a per-day one.
func daily(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "perday") || strings.Contains(l, "daily") || strings.Contains(l, "per day")
}
