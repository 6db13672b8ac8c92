package github

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// Client defaults.
const (
	// DefaultBaseURL is the API of github.com.
	DefaultBaseURL = "https://api.github.com"
	// DefaultTimeout bounds each request when Client.HTTP is nil.
	DefaultTimeout = 10 * time.Second
	// DefaultUserAgent is sent when Client.UserAgent is empty.
	DefaultUserAgent = "layover"
	// APIVersion is the REST API version asked for.
	APIVersion = "2022-11-28"
	// MaxBodySize caps how much of a response body the client reads.
	MaxBodySize = 1 << 20
)

// Client calls the few GitHub endpoints layover needs. The zero value talks
// to api.github.com unauthenticated. A Client is safe for concurrent use if
// its HTTP client is; the token never appears in errors.
type Client struct {
	// BaseURL is the API root, e.g. "https://api.github.com" or
	// "https://ghes.example.com/api/v3"; "" means DefaultBaseURL. A
	// trailing slash is ignored.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>" when not empty.
	Token string
	// HTTP sends the requests; nil means a client with DefaultTimeout.
	HTTP *http.Client
	// UserAgent is sent as User-Agent; "" means DefaultUserAgent.
	UserAgent string
	// Now is the clock observations are stamped with; nil means time.Now.
	Now func() time.Time
}

// StatusError is a non-2xx answer from the API.
type StatusError struct {
	StatusCode int
	// Message is the "message" of GitHub's JSON error body, else the
	// status text; at most a short single line.
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GitHub API answered %d: %s", e.StatusCode, e.Message)
}

// RateLimit reads GET {BaseURL}/rate_limit, which does not count against
// the primary limit, and returns one state per resource it lists, sorted by
// resource (see [ParseRateLimit]). A non-2xx answer is a *StatusError.
func (c *Client) RateLimit(ctx context.Context) ([]quota.State, error) {
	body, date, err := c.get(ctx, "/rate_limit")
	if err != nil {
		return nil, err
	}
	return ParseRateLimit(body, date, c.now())
}

// Login returns the login of the token's user from GET {BaseURL}/user. A
// non-2xx answer (401 for a bad token, 403 when rate limited) is a
// *StatusError.
func (c *Client) Login(ctx context.Context) (string, error) {
	body, _, err := c.get(ctx, "/user")
	if err != nil {
		return "", err
	}
	var u struct {
		Login string `json:"login"`
	}
	if err := json.Unmarshal(body, &u); err != nil {
		return "", fmt.Errorf("parse GET /user response: %w", err)
	}
	login := strings.TrimSpace(u.Login)
	if login == "" {
		return "", errors.New("GET /user response has no login")
	}
	if !ValidLogin(login) {
		return "", fmt.Errorf("GET /user response: a login of %d bytes is not a GitHub login (1 to %d letters, digits, '-', '_' or '.')",
			len(login), MaxLoginLen)
	}
	return login, nil
}

// MaxLoginLen bounds, in bytes, a login layover accepts (from GET /user or
// gh's configuration) and keeps as a principal. github.com's logins are at
// most 39 characters; the bound leaves room for longer ones of GitHub
// Enterprise Server and of Enterprise Managed Users (their "_shortcode"
// suffix).
const MaxLoginLen = 64

// ValidLogin reports whether s can be a login layover keeps: 1 to
// MaxLoginLen ASCII letters, digits, '-', '_' and '.'. Anything else (a
// huge value, control characters, a '/' or ':' that would read as part of
// a quota key or a "tok:" principal) is refused, and the token's
// fingerprint stays its principal.
func ValidLogin(s string) bool {
	if s == "" || len(s) > MaxLoginLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// get sends GET {BaseURL}{path} and returns the body (at most MaxBodySize)
// and the response's Date (zero when missing).
func (c *Client) get(ctx context.Context, path string) ([]byte, time.Time, error) {
	base := strings.TrimRight(c.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("GET %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	req.Header.Set("User-Agent", cmp.Or(c.UserAgent, DefaultUserAgent))
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodySize+1))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("GET %s: read body: %w", path, err)
	}
	if len(body) > MaxBodySize {
		return nil, time.Time{}, fmt.Errorf("GET %s: response body is over %d bytes", path, MaxBodySize)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, time.Time{}, &StatusError{StatusCode: resp.StatusCode, Message: errorMessage(resp.StatusCode, body)}
	}
	date, _ := resetparse.HTTPDate(resp.Header.Get("Date"))
	return body, date, nil
}

// errorMessage is GitHub's error "message", else the status text.
func errorMessage(code int, body []byte) string {
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &m) == nil && strings.TrimSpace(m.Message) != "" {
		return provider.CleanText(m.Message, 200)
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "HTTP " + strconv.Itoa(code)
}

// ParseRateLimit parses the body of GET /rate_limit: one state per entry of
// "resources" ({limit, used, remaining, reset}), sorted by resource, with
// Source quota.SourceRateLimit, ObservedAt now and Cause exhausted when
// remaining is 0. Only Key.Resource is set. reset is UTC epoch seconds
// (kept as RawReset); ResetAt is now + (reset − date), date being the
// response's Date header, or time.Unix(reset) when date is zero.
//
// A body without "resources" falls back to the deprecated "rate" (= core).
// An entry with a missing, negative or non-integer count, or a reset that
// is not plausible epoch seconds (e.g. milliseconds), is dropped, not
// guessed. Malformed JSON, or a body with neither field, is an error.
func ParseRateLimit(body []byte, date, now time.Time) ([]quota.State, error) {
	var doc struct {
		Resources map[string]json.RawMessage `json:"resources"`
		Rate      json.RawMessage            `json:"rate"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse rate_limit response: not the JSON object expected: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parse rate_limit response: trailing data after the JSON object")
	}
	if doc.Resources == nil {
		if len(doc.Rate) == 0 || string(doc.Rate) == "null" {
			return nil, errors.New(`parse rate_limit response: no "resources" object`)
		}
		doc.Resources = map[string]json.RawMessage{"core": doc.Rate}
	}
	names := make([]string, 0, len(doc.Resources))
	for name := range doc.Resources {
		names = append(names, name)
	}
	sort.Strings(names)
	states := make([]quota.State, 0, len(names))
	for _, name := range names {
		s, ok := parseRateResource(name, doc.Resources[name], date, now)
		if ok {
			states = append(states, s)
		}
	}
	return states, nil
}

// parseRateResource parses one {limit, used, remaining, reset} entry.
func parseRateResource(name string, raw json.RawMessage, date, now time.Time) (quota.State, bool) {
	res, ok := cleanResource(name)
	if !ok {
		return quota.State{}, false
	}
	var r struct {
		Limit     json.RawMessage `json:"limit"`
		Remaining json.RawMessage `json:"remaining"`
		Reset     json.RawMessage `json:"reset"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return quota.State{}, false
	}
	// Each must be a bare non-negative integer literal: parseCount accepts
	// digits only, so strings, fractions, exponents and negatives fail.
	limit, ok1 := parseCount(string(r.Limit))
	remaining, ok2 := parseCount(string(r.Remaining))
	resetAt, ok3 := resetparse.EpochSeconds(string(r.Reset))
	if !ok1 || !ok2 || !ok3 {
		return quota.State{}, false
	}
	reset := resetAt.Unix()
	s := llm.HeaderState(res, limit, remaining, resetOnOurClock(reset, date, now), reset, now)
	s.Source = quota.SourceRateLimit // read from GET /rate_limit, not a response's headers
	return s, true
}
