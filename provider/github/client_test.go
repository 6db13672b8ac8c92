package github

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

// rateLimitBody is a GET /rate_limit answer in GitHub's shape; resets are
// relative to serverNow.
func rateLimitBody(serverNow time.Time) string {
	r := func(d time.Duration) string { return epoch(serverNow.Add(d)) }
	return `{
  "resources": {
    "core": {"limit": 5000, "used": 5000, "remaining": 0, "reset": ` + r(20*time.Minute) + `},
    "search": {"limit": 30, "used": 12, "remaining": 18, "reset": ` + r(time.Minute) + `},
    "graphql": {"limit": 5000, "used": 7, "remaining": 4993, "reset": ` + r(45*time.Minute) + `},
    "integration_manifest": {"limit": 5000, "used": 0, "remaining": 5000, "reset": ` + r(time.Hour) + `},
    "code_search": {"limit": 10, "used": 0, "remaining": 10, "reset": ` + r(time.Minute) + `},
    "audit_log": {"limit": 1750, "used": 0, "remaining": 1750, "reset": ` + r(time.Hour) + `}
  },
  "rate": {"limit": 5000, "used": 5000, "remaining": 0, "reset": ` + r(20*time.Minute) + `}
}`
}

type seenRequest struct {
	path    string
	headers http.Header
}

// server answers like GitHub with a clock 1 h behind the test's.
func server(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() []seenRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, seenRequest{path: r.URL.Path, headers: r.Header.Clone()})
		mu.Unlock()
		w.Header().Set("Date", httpDate(now.Add(-time.Hour)))
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

func TestClientRateLimit(t *testing.T) {
	t.Parallel()
	srv, seen := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v3/rate_limit" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(rateLimitBody(now.Add(-time.Hour))))
	})
	c := &Client{BaseURL: srv.URL + "/api/v3/", Token: "ghp_secret", HTTP: srv.Client(), UserAgent: "layover-test", Now: func() time.Time { return now }}
	states, err := c.RateLimit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range states {
		names = append(names, s.Resource)
		if s.Source != quota.SourceRateLimit || !s.ObservedAt.Equal(now) || !s.ResetKnown {
			t.Errorf("%s: %+v", s.Resource, s)
		}
		// The server is 1 h behind: every reset is 1 h later on our clock.
		if d := s.ResetAt.Sub(time.Unix(s.RawReset, 0)); d != time.Hour {
			t.Errorf("%s: ResetAt − raw = %v, want 1h", s.Resource, d)
		}
	}
	if got := strings.Join(names, ","); got != "audit_log,code_search,core,graphql,integration_manifest,search" {
		t.Errorf("resources = %s", got)
	}
	core := states[2]
	if core.Limit != 5000 || core.Remaining != 0 || core.Cause != quota.CauseExhausted || !core.ResetAt.Equal(now.Add(20*time.Minute)) {
		t.Errorf("core = %+v", core)
	}
	if s := states[5]; s.Limit != 30 || s.Remaining != 18 || s.Cause != quota.CauseNone {
		t.Errorf("search = %+v", s)
	}
	reqs := seen()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	h := reqs[0].headers
	for k, want := range map[string]string{
		"Authorization":        "Bearer ghp_secret",
		"Accept":               "application/vnd.github+json",
		"X-Github-Api-Version": "2022-11-28",
		"User-Agent":           "layover-test",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("request %s = %q, want %q", k, got, want)
		}
	}
}

func TestClientNoToken(t *testing.T) {
	t.Parallel()
	srv, seen := server(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"resources":{"core":{"limit":60,"used":1,"remaining":59,"reset":1785931200}}}`))
	})
	c := &Client{BaseURL: srv.URL} // HTTP nil: default client with timeout
	states, err := c.RateLimit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || states[0].Limit != 60 {
		t.Fatalf("states = %+v", states)
	}
	h := seen()[0].headers
	if _, ok := h["Authorization"]; ok {
		t.Errorf("Authorization sent without a token: %q", h.Get("Authorization"))
	}
	if h.Get("User-Agent") != DefaultUserAgent {
		t.Errorf("User-Agent = %q", h.Get("User-Agent"))
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		status  int    // want a *StatusError with this code, or 0
		msg     string // substring of the error
	}{
		{
			name: "401 message",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(401)
				_, _ = w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
			},
			status: 401, msg: "GitHub API answered 401: Bad credentials",
		},
		{
			name: "404 GHES without rate limiting",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(404)
				_, _ = w.Write([]byte(`{"message":"Rate limiting is not enabled.","documentation_url":"https://docs.github.com/enterprise-server/rest"}`))
			},
			status: 404, msg: "Rate limiting is not enabled.",
		},
		{
			name: "502 HTML",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(502)
				_, _ = w.Write([]byte(`<html>unicorn</html>`))
			},
			status: 502, msg: "Bad Gateway",
		},
		{
			name: "malformed JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"resources":`))
			},
			msg: "parse rate_limit response",
		},
		{
			name: "body over 1 MiB",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"resources":{},"pad":"`))
				_, _ = w.Write([]byte(strings.Repeat("x", MaxBodySize)))
				_, _ = w.Write([]byte(`"}`))
			},
			msg: "response body is over 1048576 bytes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := server(t, tt.handler)
			c := &Client{BaseURL: srv.URL, Token: "ghp_secret", HTTP: srv.Client()}
			_, err := c.RateLimit(context.Background())
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if strings.Contains(err.Error(), "ghp_secret") {
				t.Errorf("error leaks the token: %q", err)
			}
			var se *StatusError
			if tt.status != 0 {
				if !errors.As(err, &se) || se.StatusCode != tt.status {
					t.Errorf("error %v is not a *StatusError with %d", err, tt.status)
				}
			} else if errors.As(err, &se) {
				t.Errorf("error %v is a *StatusError", err)
			}
		})
	}
}

func TestClientLogin(t *testing.T) {
	t.Parallel()
	srv, seen := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			_, _ = w.Write([]byte(`{"login":"octocat","id":1}`))
		case "Bearer empty":
			_, _ = w.Write([]byte(`{"id":1}`))
		default:
			w.WriteHeader(401)
			_, _ = w.Write([]byte(`{"message":"Requires authentication"}`))
		}
	})
	c := &Client{BaseURL: srv.URL, Token: "good", HTTP: srv.Client()}
	login, err := c.Login(context.Background())
	if err != nil || login != "octocat" {
		t.Fatalf("Login = %q, %v", login, err)
	}
	if p := seen()[0].path; p != "/user" {
		t.Errorf("path = %q", p)
	}
	c.Token = "empty"
	if _, err := c.Login(context.Background()); err == nil || !strings.Contains(err.Error(), "no login") {
		t.Errorf("Login without login: %v", err)
	}
	c.Token = "bad"
	_, err = c.Login(context.Background())
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 401 || se.Message != "Requires authentication" {
		t.Errorf("Login with a bad token: %v", err)
	}
}

func TestClientContextCancelled(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &Client{BaseURL: srv.URL, HTTP: srv.Client()}
	if _, err := c.RateLimit(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	date := now.Add(-time.Hour)
	tests := []struct {
		name    string
		body    string
		date    time.Time
		want    []quota.State
		errText string
	}{
		{
			name: "skew corrected",
			body: `{"resources":{"core":{"limit":5000,"used":1,"remaining":4999,"reset":` + epoch(date.Add(10*time.Minute)) + `}}}`,
			date: date,
			want: []quota.State{{Key: quota.Key{Resource: "core"}, Limit: 5000, Remaining: 4999, ResetAt: now.Add(10 * time.Minute), ResetKnown: true, RawReset: date.Add(10 * time.Minute).Unix(), ObservedAt: now, Source: quota.SourceRateLimit}},
		},
		{
			name: "no date: raw epoch",
			body: `{"resources":{"graphql":{"limit":5000,"used":5000,"remaining":0,"reset":1785931200}}}`,
			want: []quota.State{{Key: quota.Key{Resource: "graphql"}, Limit: 5000, Remaining: 0, ResetAt: time.Unix(1785931200, 0), ResetKnown: true, RawReset: 1785931200, ObservedAt: now, Source: quota.SourceRateLimit, Cause: quota.CauseExhausted}},
		},
		{
			name: "deprecated rate only",
			body: `{"rate":{"limit":60,"used":60,"remaining":0,"reset":1785931200}}`,
			want: []quota.State{{Key: quota.Key{Resource: "core"}, Limit: 60, Remaining: 0, ResetAt: time.Unix(1785931200, 0), ResetKnown: true, RawReset: 1785931200, ObservedAt: now, Source: quota.SourceRateLimit, Cause: quota.CauseExhausted}},
		},
		{
			name: "absurd entries are dropped",
			body: `{"resources":{
				"ms":{"limit":10,"used":0,"remaining":10,"reset":1785931200000},
				"neg":{"limit":10,"used":0,"remaining":-1,"reset":1785931200},
				"float":{"limit":10.5,"used":0,"remaining":10,"reset":1785931200},
				"str":{"limit":"10","used":0,"remaining":10,"reset":1785931200},
				"missing":{"limit":10},
				"null":null,
				"bad name!":{"limit":10,"used":0,"remaining":10,"reset":1785931200},
				"ok":{"limit":10,"used":0,"remaining":10,"reset":1785931200}}}`,
			want: []quota.State{{Key: quota.Key{Resource: "ok"}, Limit: 10, Remaining: 10, ResetAt: time.Unix(1785931200, 0), ResetKnown: true, RawReset: 1785931200, ObservedAt: now, Source: quota.SourceRateLimit}},
		},
		{name: "empty resources", body: `{"resources":{}}`, want: []quota.State{}},
		{name: "malformed", body: `{"resources":{"core":`, errText: "not the JSON object expected"},
		{name: "not JSON", body: `<html>`, errText: "not the JSON object expected"},
		{name: "array", body: `[]`, errText: "not the JSON object expected"},
		{name: "resources not an object", body: `{"resources":[1]}`, errText: "not the JSON object expected"},
		{name: "no resources", body: `{"message":"Rate limiting is not enabled."}`, errText: `no "resources" object`},
		{name: "trailing data", body: `{"resources":{}} {}`, errText: "trailing data"},
		{name: "empty", body: ``, errText: "not the JSON object expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRateLimit([]byte(tt.body), tt.date, now)
			if tt.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errText)
				}
				if strings.ContainsAny(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if !g.ResetAt.Equal(w.ResetAt) {
					t.Errorf("ResetAt = %v, want %v", g.ResetAt, w.ResetAt)
				}
				g.ResetAt, w.ResetAt = time.Time{}, time.Time{}
				if g != w {
					t.Errorf("got %+v\nwant %+v", g, w)
				}
			}
		})
	}
}
