package fake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GitHub resource names, as GitHub spells them in x-ratelimit-resource and in
// the resources of GET /rate_limit.
const (
	ResourceCore                = "core"
	ResourceGraphQL             = "graphql"
	ResourceSearch              = "search"
	ResourceCodeSearch          = "code_search"
	ResourceIntegrationManifest = "integration_manifest"
)

// Documentation URLs GitHub puts in its error bodies.
const (
	restRateLimitDocURL  = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
	secondaryLimitDocURL = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// Texts GitHub sends, verbatim.
const (
	// SecondaryLimitMessage is the message of GitHub's usual secondary-limit
	// rejection.
	SecondaryLimitMessage = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
	// PermissionDeniedMessage is the 403 a token without the needed
	// permission gets: not a rate limit.
	PermissionDeniedMessage = "Resource not accessible by integration"
	// SAMLEnforcedMessage is the 403 a token not authorized for an
	// organization's SAML single sign-on gets: not a rate limit.
	SAMLEnforcedMessage = "Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization."
	// SAMLEnforcedSSOURL is the authorization URL SAMLEnforced's
	// X-GitHub-SSO header names.
	SAMLEnforcedSSOURL = "https://github.com/orgs/octo-org/sso?authorization_request=AZ1fakeSSOrequest"
)

// anonymousLimit is GitHub's limit of resource for unauthenticated callers,
// shared by every caller without a token (GitHub keys them by IP address).
func anonymousLimit(resource string) int64 {
	switch resource {
	case ResourceCore:
		return 60
	case ResourceSearch, ResourceCodeSearch:
		return 10
	case ResourceIntegrationManifest:
		return 5000
	}
	return 0
}

// defaultLimits are a user token's limits. A function, not a map variable:
// the package does no work at initialisation (see internal/fake's doc).
func defaultLimits() map[string]int64 {
	return map[string]int64{
		ResourceCore:                5000,
		ResourceSearch:              30,
		ResourceGraphQL:             5000,
		ResourceCodeSearch:          10,
		ResourceIntegrationManifest: 5000,
	}
}

// rateLimitOrder is the order of the first resources in GET /rate_limit;
// any other configured resource follows in name order.
var rateLimitOrder = []string{ResourceCore, ResourceSearch, ResourceGraphQL, ResourceIntegrationManifest, ResourceCodeSearch}

// GitHubConfig configures a fake GitHub. The zero value is usable.
type GitHubConfig struct {
	// Now is the clock every time the fake reports comes from
	// (default time.Now).
	Now func() time.Time
	// Window is the length of every quota window (default one hour).
	Window time.Duration
	// Limits overrides or extends the per-resource limits of an
	// authenticated token. Defaults: core 5000, graphql 5000, search 30,
	// code_search 10, integration_manifest 5000.
	Limits map[string]int64
	// Login is the authenticated user's login (default "octocat").
	Login string
	// UserID is the authenticated user's numeric id (default 1), named in
	// GitHub's rate-limit messages.
	UserID int64
	// Tokens, when not empty, are the only tokens accepted; any other token
	// gets GitHub's 401 "Bad credentials". When empty every token is
	// accepted and each has buckets of its own.
	Tokens []string
}

// Response is a canned answer queued with [GitHub.Script].
//
// A zero Status means 200. Header values are added to (and override) the
// headers the fake would send anyway: Content-Type, Date,
// X-GitHub-Request-Id and the x-ratelimit-* headers of the bucket the path
// belongs to, read without charging it. A key mapped to an empty slice
// removes that default header.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// RecordedRequest is one request the fake GitHub answered.
type RecordedRequest struct {
	Method string
	Path   string
	// Token is the token the request carried, "" when none.
	Token string
	// Resource is the resource charged for the request, "" when it cost
	// nothing (GET /rate_limit, a scripted answer, a malformed query).
	Resource string
	// Reset is the epoch second the charged bucket's window ends at (0
	// when nothing was charged): rejections grouped by it are per reset.
	Reset    int64
	Status   int
	Scripted bool
}

// GitHub is an http.Handler that imitates the GitHub REST and GraphQL APIs'
// primary rate limits: per-resource buckets with GitHub's headers, GitHub's
// exhausted-quota answers (403 for REST, 200 with errors for GraphQL), a free
// GET /rate_limit, GET /user, 401 for bad credentials, and scripted answers
// for everything else a test needs (secondary limits, 5xx, permission and
// SAML 403s).
//
// Deliberate differences from GitHub:
//   - buckets are per token, not per user: two tokens of one login do not
//     share a quota here unless the test gives them the same token;
//   - every resource shares one window length (GitHub's search and
//     code_search windows are one minute);
//   - a bucket refills only when a request or a control method touches it
//     after its reset, never in the background;
//   - x-ratelimit-* headers are sent in Go's canonical case
//     (X-Ratelimit-Remaining), where GitHub sends them lower-case; HTTP
//     header names are case-insensitive, and Go clients canonicalize them;
//   - secondary limits are never triggered by traffic, only by
//     [GitHub.Script];
//   - other than GET /user, GET /rate_limit, POST /graphql and creating a
//     pull request, every endpoint answers {"method":…,"path":…}: there are
//     no repositories, issues or 404s;
//   - GraphQL queries are not parsed: a query naming pullRequests with owner
//     and repo variables gets the pull requests created through this fake,
//     any other query gets {"data":{"viewer":{"login":…}}}; every query
//     costs one point.
type GitHub struct {
	now    func() time.Time
	window time.Duration
	limits map[string]int64
	login  string
	userID int64
	tokens []string

	mu        sync.Mutex
	buckets   map[bucketKey]*bucket
	scripts   map[string][]Response
	calls     map[string]int
	requests  []RecordedRequest
	pulls     map[string][]pullRequest // by "owner/repo"
	requestID int64

	srv *http.Server
	ln  net.Listener
}

type bucketKey struct {
	token    string // "" for the anonymous bucket
	resource string
}

type bucket struct {
	limit, used, remaining int64
	reset                  int64 // epoch seconds
}

type pullRequest struct {
	Number    int
	Title     string
	Body      string
	Head      string
	Base      string
	Draft     bool
	URL       string
	CreatedAt time.Time
}

// NewGitHub returns a fake GitHub configured by cfg.
func NewGitHub(cfg GitHubConfig) *GitHub {
	g := &GitHub{
		now:     cfg.Now,
		window:  cfg.Window,
		login:   cfg.Login,
		userID:  cfg.UserID,
		tokens:  slices.Clone(cfg.Tokens),
		limits:  make(map[string]int64),
		buckets: make(map[bucketKey]*bucket),
		scripts: make(map[string][]Response),
		calls:   make(map[string]int),
		pulls:   make(map[string][]pullRequest),
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.window <= 0 {
		g.window = time.Hour
	}
	if g.login == "" {
		g.login = "octocat"
	}
	if g.userID == 0 {
		g.userID = 1
	}
	for r, n := range defaultLimits() {
		g.limits[r] = n
	}
	for r, n := range cfg.Limits {
		g.limits[r] = n
	}
	return g
}

// Start serves the fake on a new listener at addr (e.g. "127.0.0.1:0") and
// returns its base URL, e.g. "http://127.0.0.1:41234". A fake can be
// started once.
func (g *GitHub) Start(addr string) (baseURL string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.srv != nil {
		return "", errors.New("fake github: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("fake github: %w", err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	g.srv, g.ln = srv, ln
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// Close stops a server started with Start. Closing a fake that was not
// started does nothing.
func (g *GitHub) Close() error {
	g.mu.Lock()
	srv := g.srv
	g.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Script queues canned answers for requests to exactly path (e.g.
// "/repos/o/r/pulls"), consumed one per request, in order, before any normal
// handling (authentication included). A scripted answer costs no quota.
func (g *GitHub) Script(path string, rs ...Response) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scripts[path] = append(g.scripts[path], rs...)
}

// SetQuota sets the bucket of (token, resource) to remaining units with the
// given reset; used becomes limit - remaining (the limit grows to remaining
// if needed). Token "" is the anonymous bucket. A reset in the past makes the
// next request refill the bucket.
func (g *GitHub) SetQuota(token, resource string, remaining int64, reset time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.bucketLocked(token, resource, g.now())
	if remaining < 0 {
		remaining = 0
	}
	if remaining > b.limit {
		b.limit = remaining
	}
	b.remaining = remaining
	b.used = b.limit - remaining
	b.reset = reset.Unix()
}

// Exhaust empties the bucket of (token, resource) and keeps its reset (a
// bucket whose reset has passed is refilled first, so the reset is always a
// window ahead). Token "" is the anonymous bucket.
func (g *GitHub) Exhaust(token, resource string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.bucketLocked(token, resource, g.now())
	b.remaining = 0
	b.used = b.limit
}

// AcceptTokens makes tokens the only ones accepted from now on (none: every
// token), as when a user renews a credential the fake refused.
func (g *GitHub) AcceptTokens(tokens ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens = slices.Clone(tokens)
}

// Calls reports how many requests hit exactly path, scripted ones included.
func (g *GitHub) Calls(path string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[path]
}

// Requests returns every request answered so far, oldest first.
func (g *GitHub) Requests() []RecordedRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.requests)
}

// SecondaryLimit is GitHub's secondary-rate-limit rejection: 403 with the
// secondary message and documentation URL, and a retry-after header when
// retryAfterSeconds > 0. Its x-ratelimit-* headers are the bucket's, so
// remaining is usually well above zero, as on GitHub.
func SecondaryLimit(retryAfterSeconds int) Response {
	r := Response{
		Status: http.StatusForbidden,
		Header: http.Header{},
		Body:   string(errorBody(SecondaryLimitMessage, secondaryLimitDocURL, "")),
	}
	if retryAfterSeconds > 0 {
		r.Header.Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	return r
}

// ServerError is a GitHub 5xx (or any status) with a JSON message: "Server
// Error" for 500, the status text otherwise.
func ServerError(status int) Response {
	msg := http.StatusText(status)
	if status == http.StatusInternalServerError || msg == "" {
		msg = "Server Error"
	}
	return Response{Status: status, Body: string(errorBody(msg, "", ""))}
}

// PermissionDenied is the 403 GitHub gives a token that lacks a permission:
// not a rate limit. It carries the bucket's x-ratelimit-* headers, so
// remaining is above zero unless the test exhausted that bucket.
func PermissionDenied() Response {
	return Response{
		Status: http.StatusForbidden,
		Body:   string(errorBody(PermissionDeniedMessage, "https://docs.github.com/rest", "403")),
	}
}

// SAMLEnforced is the 403 GitHub gives a token not authorized for an
// organization's SAML single sign-on, with its X-GitHub-SSO header.
func SAMLEnforced() Response {
	return Response{
		Status: http.StatusForbidden,
		Header: http.Header{"X-Github-Sso": {"required; url=" + SAMLEnforcedSSOURL}},
		Body:   string(errorBody(SAMLEnforcedMessage, "https://docs.github.com/articles/authenticating-to-a-github-organization-with-saml-single-sign-on/", "")),
	}
}

// reply is an answer built under the lock and written after it.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// ServeHTTP answers one API request.
func (g *GitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqBody, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	token := requestToken(r)
	rep := g.answer(r, token, reqBody)
	h := w.Header()
	for k, v := range rep.header {
		h[k] = v
	}
	w.WriteHeader(rep.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(rep.body)
	}
}

func (g *GitHub) answer(r *http.Request, token string, reqBody []byte) reply {
	now := g.now()
	path := r.URL.Path

	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls[path]++
	g.requestID++

	rec := RecordedRequest{Method: r.Method, Path: path, Token: token}
	finish := func(rep reply) reply {
		rec.Status = rep.status
		g.requests = append(g.requests, rec)
		return rep
	}

	resource := routeResource(r.Method, path)
	valid := token == "" || len(g.tokens) == 0 || slices.Contains(g.tokens, token)
	principal := token
	if !valid {
		principal = ""
	}

	if q := g.scripts[path]; len(q) > 0 {
		canned := q[0]
		g.scripts[path] = q[1:]
		rec.Scripted = true
		return finish(g.scripted(canned, g.bucketLocked(principal, resource, now), resource, now))
	}

	if !valid {
		// GitHub counts a rejected token against the caller's
		// unauthenticated quota.
		b := g.bucketLocked("", ResourceCore, now)
		g.charge(b)
		rec.Resource = ResourceCore
		return finish(g.jsonReply(http.StatusUnauthorized, b, ResourceCore, now,
			errorBody("Bad credentials", "https://docs.github.com/rest", "401")))
	}

	switch {
	case path == "/rate_limit" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		return finish(g.rateLimit(principal, now))
	case path == "/graphql" && r.Method == http.MethodPost:
		rep, charged := g.graphql(principal, reqBody, now)
		if charged {
			rec.Resource = ResourceGraphQL
		}
		return finish(rep)
	}

	b := g.bucketLocked(principal, resource, now)
	rec.Resource, rec.Reset = resource, b.reset
	if !g.charge(b) {
		msg := fmt.Sprintf("API rate limit exceeded for user ID %d.", g.userID)
		if principal == "" {
			msg = fmt.Sprintf("API rate limit exceeded for %s. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)", remoteIP(r))
		}
		return finish(g.jsonReply(http.StatusForbidden, b, resource, now, errorBody(msg, restRateLimitDocURL, "")))
	}

	switch {
	case path == "/user" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		if principal == "" {
			return finish(g.jsonReply(http.StatusUnauthorized, b, resource, now,
				errorBody("Requires authentication", "https://docs.github.com/rest/users/users#get-the-authenticated-user", "401")))
		}
		return finish(g.jsonReply(http.StatusOK, b, resource, now, mustJSON(struct {
			Login string `json:"login"`
			ID    int64  `json:"id"`
		}{g.login, g.userID})))
	case r.Method == http.MethodPost && pullsPathRE.get().MatchString(path):
		m := pullsPathRE.get().FindStringSubmatch(path)
		status, body := g.createPull(m[1], m[2], path, reqBody, now)
		return finish(g.jsonReply(status, b, resource, now, body))
	case resource == ResourceSearch || resource == ResourceCodeSearch:
		return finish(g.jsonReply(http.StatusOK, b, resource, now, mustJSON(struct {
			Method            string     `json:"method"`
			Path              string     `json:"path"`
			TotalCount        int        `json:"total_count"`
			IncompleteResults bool       `json:"incomplete_results"`
			Items             []struct{} `json:"items"`
		}{r.Method, path, 0, false, []struct{}{}})))
	}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		status = http.StatusCreated
	}
	return finish(g.jsonReply(status, b, resource, now, mustJSON(struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	}{r.Method, path})))
}

var pullsPathRE = lazyRegexp{expr: `^/repos/([^/]+)/([^/]+)/pulls$`}

// routeResource names the resource a request to path is charged to.
func routeResource(method, path string) string {
	switch {
	case path == "/graphql" && method == http.MethodPost:
		return ResourceGraphQL
	case path == "/search/code" || strings.HasPrefix(path, "/search/code/"):
		return ResourceCodeSearch
	case strings.HasPrefix(path, "/search/"):
		return ResourceSearch
	}
	return ResourceCore
}

// bucketLocked returns the bucket of (token, resource), creating it full or
// refilling it when its reset has come. g.mu must be held.
func (g *GitHub) bucketLocked(token, resource string, now time.Time) *bucket {
	k := bucketKey{token, resource}
	b := g.buckets[k]
	if b == nil {
		limit := g.limits[resource]
		if token == "" {
			limit = anonymousLimit(resource)
		}
		b = &bucket{limit: limit}
		g.buckets[k] = b
		g.refill(b, now)
		return b
	}
	if now.Unix() >= b.reset {
		g.refill(b, now)
	}
	return b
}

func (g *GitHub) refill(b *bucket, now time.Time) {
	b.remaining = b.limit
	b.used = 0
	b.reset = now.Add(g.window).Truncate(time.Second).Unix()
}

// charge spends one unit of b. It reports false, spending nothing, when b is
// empty; the attempt still counts in used, as on GitHub (used can exceed the
// limit while remaining stays 0).
func (g *GitHub) charge(b *bucket) bool {
	b.used++
	if b.remaining <= 0 {
		return false
	}
	b.remaining--
	return true
}

// baseHeader is what every answer carries.
func (g *GitHub) baseHeader(now time.Time) http.Header {
	return http.Header{
		"Content-Type":        {"application/json; charset=utf-8"},
		"Date":                {now.UTC().Format(http.TimeFormat)},
		"X-Github-Media-Type": {"github.v3; format=json"},
		"X-Github-Request-Id": {fmt.Sprintf("FAKE:%08X", g.requestID)},
	}
}

func setRateHeaders(h http.Header, b *bucket, resource string) {
	h.Set("X-Ratelimit-Limit", strconv.FormatInt(b.limit, 10))
	h.Set("X-Ratelimit-Remaining", strconv.FormatInt(b.remaining, 10))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(b.reset, 10))
	h.Set("X-Ratelimit-Used", strconv.FormatInt(b.used, 10))
	h.Set("X-Ratelimit-Resource", resource)
}

func (g *GitHub) jsonReply(status int, b *bucket, resource string, now time.Time, body []byte) reply {
	h := g.baseHeader(now)
	setRateHeaders(h, b, resource)
	return reply{status: status, header: h, body: body}
}

func (g *GitHub) scripted(canned Response, b *bucket, resource string, now time.Time) reply {
	h := g.baseHeader(now)
	setRateHeaders(h, b, resource)
	for k, v := range canned.Header {
		k = http.CanonicalHeaderKey(k)
		if len(v) == 0 {
			delete(h, k)
			continue
		}
		h[k] = slices.Clone(v)
	}
	status := canned.Status
	if status == 0 {
		status = http.StatusOK
	}
	return reply{status: status, header: h, body: []byte(canned.Body)}
}

// rateLimit answers GET /rate_limit, which costs nothing.
func (g *GitHub) rateLimit(principal string, now time.Time) reply {
	names := slices.Clone(rateLimitOrder)
	var extra []string
	for r := range g.limits {
		if !slices.Contains(names, r) {
			extra = append(extra, r)
		}
	}
	sort.Strings(extra)
	names = append(names, extra...)

	type entry struct {
		Limit     int64 `json:"limit"`
		Used      int64 `json:"used"`
		Remaining int64 `json:"remaining"`
		Reset     int64 `json:"reset"`
	}
	var buf bytes.Buffer
	buf.WriteString(`{"resources":{`)
	for i, name := range names {
		b := g.bucketLocked(principal, name, now)
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(mustJSON(name))
		buf.WriteByte(':')
		buf.Write(mustJSON(entry{b.limit, b.used, b.remaining, b.reset}))
	}
	core := g.bucketLocked(principal, ResourceCore, now)
	buf.WriteString(`},"rate":`)
	buf.Write(mustJSON(entry{core.limit, core.used, core.remaining, core.reset}))
	buf.WriteByte('}')
	return g.jsonReply(http.StatusOK, core, ResourceCore, now, buf.Bytes())
}

// graphql answers POST /graphql. It reports whether a point was charged.
func (g *GitHub) graphql(principal string, reqBody []byte, now time.Time) (reply, bool) {
	if principal == "" {
		core := g.bucketLocked("", ResourceCore, now)
		return g.jsonReply(http.StatusUnauthorized, core, ResourceCore, now,
			errorBody("This endpoint requires you to be authenticated.", "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql", "")), false
	}
	b := g.bucketLocked(principal, ResourceGraphQL, now)
	var q struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(reqBody, &q); err != nil {
		return g.jsonReply(http.StatusBadRequest, b, ResourceGraphQL, now,
			errorBody("Problems parsing JSON", "https://docs.github.com/graphql", "")), false
	}
	if !g.charge(b) {
		type gqlError struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		return g.jsonReply(http.StatusOK, b, ResourceGraphQL, now, mustJSON(struct {
			Errors []gqlError `json:"errors"`
		}{[]gqlError{{"RATE_LIMITED", fmt.Sprintf("API rate limit exceeded for user ID %d.", g.userID)}}})), true
	}
	owner, _ := q.Variables["owner"].(string)
	repo, _ := q.Variables["repo"].(string)
	if repo == "" {
		repo, _ = q.Variables["name"].(string)
	}
	if strings.Contains(q.Query, "pullRequests") && owner != "" && repo != "" {
		return g.jsonReply(http.StatusOK, b, ResourceGraphQL, now, g.pullList(owner+"/"+repo)), true
	}
	return g.jsonReply(http.StatusOK, b, ResourceGraphQL, now, mustJSON(map[string]any{
		"data": map[string]any{"viewer": map[string]any{"login": g.login}},
	})), true
}

// createPull records a pull request and answers like POST
// /repos/{owner}/{repo}/pulls, plus the method and path every REST answer of
// this fake carries.
func (g *GitHub) createPull(owner, repo, path string, reqBody []byte, now time.Time) (int, []byte) {
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Draft bool   `json:"draft"`
	}
	if err := json.Unmarshal(reqBody, &in); err != nil {
		return http.StatusBadRequest, errorBody("Problems parsing JSON", "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "400")
	}
	if in.Title == "" {
		type item struct {
			Resource string `json:"resource"`
			Code     string `json:"code"`
			Field    string `json:"field"`
		}
		return http.StatusUnprocessableEntity, mustJSON(struct {
			Message          string `json:"message"`
			Errors           []item `json:"errors"`
			DocumentationURL string `json:"documentation_url"`
			Status           string `json:"status"`
		}{"Validation Failed", []item{{"PullRequest", "missing_field", "title"}}, "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "422"})
	}
	key := owner + "/" + repo
	pr := pullRequest{
		Number:    len(g.pulls[key]) + 1,
		Title:     in.Title,
		Body:      in.Body,
		Head:      in.Head,
		Base:      in.Base,
		Draft:     in.Draft,
		CreatedAt: now.UTC().Truncate(time.Second),
	}
	pr.URL = fmt.Sprintf("https://github.com/%s/pull/%d", key, pr.Number)
	g.pulls[key] = append(g.pulls[key], pr)
	type ref struct {
		Ref string `json:"ref"`
	}
	return http.StatusCreated, mustJSON(struct {
		Method    string `json:"method"`
		Path      string `json:"path"`
		Number    int    `json:"number"`
		HTMLURL   string `json:"html_url"`
		State     string `json:"state"`
		Title     string `json:"title"`
		Body      string `json:"body"`
		Draft     bool   `json:"draft"`
		Head      ref    `json:"head"`
		Base      ref    `json:"base"`
		CreatedAt string `json:"created_at"`
	}{http.MethodPost, path, pr.Number, pr.URL, "open", pr.Title, pr.Body, pr.Draft,
		ref{pr.Head}, ref{pr.Base}, pr.CreatedAt.Format(time.RFC3339)})
}

// pullList is the GraphQL data of a repository's open pull requests, newest
// first.
func (g *GitHub) pullList(key string) []byte {
	type node struct {
		Number      int    `json:"number"`
		Title       string `json:"title"`
		State       string `json:"state"`
		URL         string `json:"url"`
		HeadRefName string `json:"headRefName"`
		IsDraft     bool   `json:"isDraft"`
		CreatedAt   string `json:"createdAt"`
	}
	prs := g.pulls[key]
	nodes := make([]node, 0, len(prs))
	for i := len(prs) - 1; i >= 0; i-- {
		p := prs[i]
		nodes = append(nodes, node{p.Number, p.Title, "OPEN", p.URL, p.Head, p.Draft, p.CreatedAt.Format(time.RFC3339)})
	}
	type conn struct {
		TotalCount int    `json:"totalCount"`
		Nodes      []node `json:"nodes"`
	}
	type repository struct {
		PullRequests conn `json:"pullRequests"`
	}
	type data struct {
		Repository repository `json:"repository"`
	}
	return mustJSON(struct {
		Data data `json:"data"`
	}{data{repository{conn{len(nodes), nodes}}}})
}

// errorBody is GitHub's REST error object; empty fields are left out.
func errorBody(message, docURL, status string) []byte {
	type body struct {
		Message          string `json:"message"`
		DocumentationURL string `json:"documentation_url,omitempty"`
		Status           string `json:"status,omitempty"`
	}
	return mustJSON(body{message, docURL, status})
}

// mustJSON encodes v compactly, without HTML escaping and without a trailing
// newline, as GitHub does.
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fake github: encoding %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// requestToken is the token of an "Authorization: token X" or "Bearer X"
// header, "" when there is none.
func requestToken(r *http.Request) string {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	if auth == "" {
		return ""
	}
	scheme, rest, ok := strings.Cut(auth, " ")
	if !ok {
		return auth
	}
	switch strings.ToLower(scheme) {
	case "token", "bearer":
		return strings.TrimSpace(rest)
	}
	return auth
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
