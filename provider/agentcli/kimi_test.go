package agentcli

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// Verbatim texts of docs/provider-signals.md §5 (Kimi), as Kimi prints them:
// the openai SDK's "Error code: <status> - <dict repr>".
const (
	kmBusy     = `LLM provider error: Error code: 429 - {'error': {'message': "We're receiving too many requests at the moment. Please wait a moment and try again.", 'type': 'rate_limit_reached_error'}}`
	kmRPM      = `LLM provider error: Error code: 429 - {'error': {'message': 'Your account org-cn1x request reached organization max RPM: 20, please try again after 1 seconds', 'type': 'rate_limit_reached_error'}}`
	kmTPD      = `Error code: 429 - {'error': {'message': 'Your account org-cn1x request reached organization TPD rate limit, current: 1526210, limit: 1500000', 'type': 'rate_limit_reached_error'}}`
	kmOverload = `Error code: 429 - {'error': {'message': 'The engine is currently overloaded, please try again later', 'type': 'engine_overloaded_error'}}`
	kmPlan     = `Error code: 429 - {'error': {'message': 'The engine is currently overloaded, please try again later', 'type': 'rate_limit_error'}}`
	kmAuth     = `Error code: 401 - {'error': {'message': 'Authorization failed. Your session may have expired.', 'type': 'invalid_authentication_error'}}`
	kmExpired  = `Error code: 402 - {'error': {'message': 'Membership expired, please renew your plan', 'type': 'exceeded_current_quota_error'}}`
	kmForbid   = `Error code: 403 - {'error': {'message': 'Your account org-cn1x quota exceeded, please check your plan and billing details', 'type': 'exceeded_current_quota_error'}}`
)

func TestClassifyKimi(t *testing.T) {
	t.Parallel()
	tests := []cliCase{
		{
			name:   "exit 0 is ok",
			exit:   0,
			stdout: kmRPM + "\n",
			want:   want{class: provider.ClassOK, retryAfter: -1, reason: "exit 0"},
		},
		{
			name:   "RPM limit: please try again after 1 seconds",
			exit:   75,
			stdout: kmRPM + "\n",
			want:   want{class: provider.ClassSecondary, resource: "requests", retryAfter: time.Second, reason: "Error code: 429 with error dict: 429 rate_limit_reached_error (requests); the message says wait 1s"},
		},
		{
			name:   "too many requests, no wait",
			exit:   75,
			stdout: kmBusy + "\n",
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "rate_limit_reached_error; no retry-after"},
		},
		{
			name:   "TPD limit: quota, reset unknown",
			exit:   75,
			stdout: kmTPD + "\n",
			want:   want{class: provider.ClassQuota, resource: "tokens-per-day", retryAfter: -1, reason: "(daily limit), reset unknown"},
		},
		{
			name:   "engine_overloaded_error on a 429 is transient",
			exit:   75,
			stdout: kmOverload + "\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "engine_overloaded_error (overload, not a quota)"},
		},
		{
			name:   "coding plan: rate_limit_error with the overloaded text is a limit",
			exit:   75,
			stdout: kmPlan + "\n",
			want:   want{class: provider.ClassSecondary, retryAfter: -1, reason: "rate_limit_error"},
		},
		{
			name:   "401 is auth",
			exit:   1,
			stdout: kmAuth + "\n",
			want:   want{class: provider.ClassAuth, retryAfter: -1, reason: "Authorization failed"},
		},
		{
			name:   "402 membership expired: quota, reset unknown",
			exit:   1,
			stdout: kmExpired + "\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "reset unknown"},
		},
		{
			name:   "403 quota text: quota",
			exit:   1,
			stdout: kmForbid + "\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "403"},
		},
		{
			name:   "a dict the terminal wrapped at 80 columns",
			exit:   75,
			stdout: wrap80(kmRPM) + "\n",
			want:   want{class: provider.ClassSecondary, resource: "requests", retryAfter: time.Second, reason: "with error dict"},
		},
		{
			name:   "True, False and None in the dict",
			exit:   75,
			stdout: `Error code: 429 - {'error': {'message': 'please try again after 3 seconds', 'type': 'rate_limit_reached_error', 'param': None, 'retryable': True, 'fatal': False, 'codes': (1, 2.5, -3)}}` + "\n",
			want:   want{class: provider.ClassSecondary, retryAfter: 3 * time.Second, reason: "with error dict"},
		},
		{
			name:   "a repr that does not parse: the status and the text",
			exit:   75,
			stdout: `Error code: 429 - {'error': <APIError object at 0x7f00>} please try again after 2 seconds` + "\n",
			want:   want{class: provider.ClassSecondary, retryAfter: 2 * time.Second, reason: "Error code: 429:"},
		},
		{
			name:   "membership text without a status",
			exit:   1,
			stdout: "Membership expired, please renew your plan\n",
			want:   want{class: provider.ClassQuota, resource: "billing", retryAfter: -1, reason: "membership expired"},
		},
		{
			name:   "connection error is transient",
			exit:   75,
			stdout: "Connection error.\n",
			want:   want{class: provider.ClassTransient, retryAfter: -1, reason: "network"},
		},
		{
			name: "exit 75 alone is transient",
			exit: 75,
			want: want{class: provider.ClassTransient, retryAfter: -1, reason: "exit 75"},
		},
		{
			name:   "max steps reached is permanent",
			exit:   1,
			stdout: "Max steps reached: 100\n",
			want:   want{class: provider.ClassPermanent, retryAfter: -1, reason: "max steps reached"},
		},
		{
			name: "exit 1 alone is permanent",
			exit: 1,
			want: want{class: provider.ClassPermanent, retryAfter: -1, reason: "exit 1"},
		},
	}
	runCases(t, tests, ClassifyKimi, ProviderKimi, time.UTC)
}

// wrap80 wraps s at spaces to lines of at most 80 bytes, as rich does
// off a terminal.
func wrap80(s string) string {
	var b strings.Builder
	col := 0
	for i, w := range strings.Split(s, " ") {
		if i > 0 {
			if col+1+len(w) > 80 {
				b.WriteByte('\n')
				col = 0
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

func TestPyLiteral(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{`{'a': 'b'}`, `{"a":"b"}`},
		{`{'a': "it's"}`, `{"a":"it's"}`},
		{`{'a': 'x\'y\\z\n\x41\u00e9'}`, `{"a":"x'y\\z\nAé"}`},
		{`{1: True, 'n': None, 'f': False, 'l': [1, -2.5, (3,)]}`, `{"1":true,"f":false,"l":[1,-2.5,[3]],"n":null}`},
		{`{'a': {'b': {}}} trailing`, `{"a":{"b":{}}}`},
	} {
		got, _, err := pyLiteral(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("pyLiteral(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{``, `{`, `{'a' 'b'}`, `{'a': <obj>}`, `{'a': 'b'`, `{{}: 1}`, `{'a': 1e999}`, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		if got, _, err := pyLiteral(in); err == nil {
			t.Errorf("pyLiteral(%q) = %s, want an error", in, got)
		}
	}
}
