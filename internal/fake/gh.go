package fake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// GHVersion is what the fake gh reports for `gh --version`.
const GHVersion = "0.0.0-layover-fake"

// Exit codes of gh (cli/cli internal/ghcmd/cmd.go).
const (
	ghExitOK    = 0
	ghExitError = 1 // any failure, rate limits and HTTP 401 included
	ghExitAuth  = 4 // no credentials at all
)

// ghAuthHelp is what gh prints, with exit 4, when it has no token at all.
const ghAuthHelp = "To get started with GitHub CLI, please run:  gh auth login\n" +
	"Alternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token.\n"

// GH runs the fake GitHub CLI with args (without the program name) and
// returns its exit code. It imitates, byte for byte where it matters to
// layover, what gh 2.x prints for the commands it knows:
//
//	gh api [-i] [-X METHOD] [-f k=v]... [-F k=v]... [-H 'K: V']... [--paginate] [--silent] [-q EXPR] ENDPOINT
//	gh pr create --title T [--body B] [--base B] [--head H] [--draft] [-R OWNER/REPO]
//	gh pr list [-R OWNER/REPO] [-L N] [-s STATE]
//	gh auth token
//	gh --version
//
// Environment (read through getenv; nil means os.Getenv):
//   - GITHUB_API_URL: the API base URL (a fake-only convention; real gh
//     derives it from GH_HOST). Default https://api.github.com.
//   - GH_TOKEN, then GITHUB_TOKEN, then FAKE_GH_AUTH_TOKEN (standing in for
//     the token gh keeps in its own config): the token sent.
//   - GH_REPO: OWNER/REPO (or HOST/OWNER/REPO) for pr commands and the
//     :owner/:repo placeholders of gh api.
//   - FAKE_GH_LOG: a file to which every invocation appends one line, its
//     arguments joined by spaces.
//
// Errors are printed as gh prints them: `gh api` relays the server's
// message as "gh: <message> (HTTP <status>)" (or the GraphQL error messages,
// one per line); other commands print go-gh's "HTTP <status>: <message>
// (<URL>)" or "GraphQL: <message> (<path>), ..."; a missing token prints
// gh's "gh auth login" help and exits 4; every other failure exits 1.
//
// Deliberate differences from gh:
//   - gh pr create posts to the REST endpoint POST /repos/{owner}/{repo}/pulls
//     (real gh uses a GraphQL mutation and would print "pull request create
//     failed: GraphQL: ..."), and never runs git: the head branch comes from
//     --head (default "fake-branch"), the repository from -R or GH_REPO;
//   - gh auth token prints FAKE_GH_AUTH_TOKEN when it is set, even if
//     GH_TOKEN is set too (real gh prefers the environment);
//   - output is always what gh prints when stdout is not a terminal: no
//     colour, no pager, no progress text, tab-separated pr list rows;
//   - the no-token help text is always the interactive one, even under CI or
//     GitHub Actions, where real gh prints shorter variants;
//   - --paginate fetches one page; --jq knows only paths like .a.b[0] and
//     .items[].name;
//   - unknown subcommands of "gh pr" and "gh auth" are errors (exit 1).
func GH(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv("FAKE_GH_LOG"); p != "" {
		appendLine(p, strings.Join(args, " "))
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &ghCLI{
		getenv: getenv,
		stdout: stdout,
		stderr: stderr,
		client: &http.Client{Transport: tr, Timeout: 60 * time.Second},
	}
	return c.run(args)
}

type ghCLI struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	client *http.Client
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write([]byte(line + "\n"))
}

const ghRootUsage = `Work seamlessly with GitHub from the command line.

USAGE
  gh <command> <subcommand> [flags]

CORE COMMANDS
  auth:        Authenticate gh and git with GitHub
  pr:          Manage pull requests

ADDITIONAL COMMANDS
  api:         Make an authenticated GitHub API request

FLAGS
  --help      Show help for command
  --version   Show gh version
`

func (c *ghCLI) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, ghRootUsage)
		return ghExitOK
	}
	switch args[0] {
	case "--help", "-h", "help":
		fmt.Fprint(c.stdout, ghRootUsage)
		return ghExitOK
	case "--version", "version":
		fmt.Fprintf(c.stdout, "gh version %s\nhttps://github.com/cli/cli/releases/latest\n", GHVersion)
		return ghExitOK
	case "api":
		return c.api(args[1:])
	case "auth":
		if len(args) > 1 && args[1] == "token" {
			return c.authToken(args[2:])
		}
		return c.unknownSub("gh auth", args[1:], "Usage:  gh auth <command> [flags]\n")
	case "pr":
		if len(args) > 1 {
			switch args[1] {
			case "create":
				return c.prCreate(args[2:])
			case "list", "ls":
				return c.prList(args[2:])
			}
		}
		return c.unknownSub("gh pr", args[1:], "Usage:  gh pr <command> [flags]\n")
	}
	return c.usageError(fmt.Sprintf("unknown command %q for %q", args[0], "gh"), "Usage:  gh <command> <subcommand> [flags]\n")
}

func (c *ghCLI) unknownSub(path string, args []string, usage string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, usage)
		return ghExitOK
	}
	return c.usageError(fmt.Sprintf("unknown command %q for %q", args[0], path), usage)
}

// usageError prints an error followed by a blank line and the usage, as gh
// does for flag errors and unknown commands.
func (c *ghCLI) usageError(msg, usage string) int {
	fmt.Fprintf(c.stderr, "%s\n\n%s", msg, usage)
	return ghExitError
}

// token is the token gh would send: the environment first, then the token
// "stored" in gh's config.
func (c *ghCLI) token() string {
	for _, name := range []string{"GH_TOKEN", "GITHUB_TOKEN", "FAKE_GH_AUTH_TOKEN"} {
		if v := c.getenv(name); v != "" {
			return v
		}
	}
	return ""
}

func (c *ghCLI) apiBase() string {
	base := c.getenv("GITHUB_API_URL")
	if base == "" {
		base = "https://api.github.com"
	}
	return strings.TrimRight(base, "/")
}

// requireAuth prints gh's help and reports false when there is no token.
func (c *ghCLI) requireAuth() (string, bool) {
	t := c.token()
	if t == "" {
		fmt.Fprint(c.stderr, ghAuthHelp)
		return "", false
	}
	return t, true
}

func (c *ghCLI) authToken(args []string) int {
	fs := newFlagSet("Usage:  gh auth token [flags]\n",
		flagSpec{long: "hostname", short: 'h', value: true},
		flagSpec{long: "user", short: 'u', value: true})
	pos, err := fs.parse(args)
	if err != nil {
		return c.usageError(err.Error(), fs.usage)
	}
	if len(pos) > 0 {
		return c.usageError(fmt.Sprintf("unknown command %q for %q", pos[0], "gh auth token"), fs.usage)
	}
	host := fs.last("hostname")
	if host == "" {
		host = "github.com"
	}
	t := c.getenv("FAKE_GH_AUTH_TOKEN")
	if t == "" {
		t = c.getenv("GH_TOKEN")
	}
	if t == "" {
		t = c.getenv("GITHUB_TOKEN")
	}
	if t == "" {
		fmt.Fprintf(c.stderr, "no oauth token found for %s\n", host)
		return ghExitError
	}
	fmt.Fprintln(c.stdout, t)
	return ghExitOK
}

// repo is the OWNER/REPO of -R or GH_REPO.
func (c *ghCLI) repo(flag string) (owner, name string, err error) {
	v := flag
	if v == "" {
		v = c.getenv("GH_REPO")
	}
	if v == "" {
		return "", "", errors.New("failed to run git: fatal: not a git repository (or any of the parent directories): .git")
	}
	parts := strings.Split(v, "/")
	if len(parts) == 3 {
		parts = parts[1:]
	}
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf(`expected the "[HOST/]OWNER/REPO" format, got %q`, v)
	}
	return parts[0], parts[1], nil
}

// newRequest builds an authenticated request like gh's HTTP client.
func (c *ghCLI) newRequest(method, u string, body []byte, token string) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("User-Agent", "GitHub CLI "+GHVersion)
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	return req, nil
}

// printRequestError prints a failure to reach the server as gh does.
func (c *ghCLI) printRequestError(err error) int {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		fmt.Fprintf(c.stderr, "error connecting to %s\n", dnsErr.Name)
		fmt.Fprintln(c.stderr, "check your internet connection or https://githubstatus.com")
		return ghExitError
	}
	fmt.Fprintln(c.stderr, err)
	return ghExitError
}

var jsonContentRE = lazyRegexp{expr: `[/+]json(;|$)`}

// ---- gh api ----

const ghAPIUsage = `Usage:  gh api <endpoint> [flags]

Flags:
  -F, --field key=value       Add a typed parameter in key=value format
  -H, --header key:value      Add a HTTP request header in key:value format
      --hostname string       The GitHub hostname for the request (default "github.com")
  -i, --include               Include HTTP response status line and headers in the output
      --input file            The file to use as body for the HTTP request
  -q, --jq string             Query to select values from the response using jq syntax
  -X, --method string         The HTTP method for the request (default "GET")
      --paginate              Make additional HTTP requests to fetch all pages of results
  -f, --raw-field key=value   Add a string parameter in key=value format
      --silent                Do not print the response body
      --slurp                 Use with "--paginate" to return an array of all pages
`

func (c *ghCLI) api(args []string) int {
	fs := newFlagSet(ghAPIUsage,
		flagSpec{long: "field", short: 'F', value: true},
		flagSpec{long: "raw-field", short: 'f', value: true},
		flagSpec{long: "header", short: 'H', value: true},
		flagSpec{long: "hostname", value: true},
		flagSpec{long: "include", short: 'i'},
		flagSpec{long: "input", value: true},
		flagSpec{long: "jq", short: 'q', value: true},
		flagSpec{long: "method", short: 'X', value: true},
		flagSpec{long: "paginate"},
		flagSpec{long: "silent"},
		flagSpec{long: "slurp"},
	)
	pos, err := fs.parse(args)
	if err != nil {
		return c.usageError(err.Error(), fs.usage)
	}
	if len(pos) != 1 {
		fmt.Fprintf(c.stderr, "accepts 1 arg(s), received %d\n", len(pos))
		return ghExitError
	}
	token, ok := c.requireAuth()
	if !ok {
		return ghExitAuth
	}

	endpoint := pos[0]
	isGraphQL := endpoint == "graphql"
	method := "GET"
	methodPassed := fs.has("method")
	if methodPassed {
		method = strings.ToUpper(fs.last("method"))
	}

	params := map[string]any{}
	for _, f := range fs.values("raw-field") {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			fmt.Fprintf(c.stderr, "field %q requires a value separated by an '=' sign\n", f)
			return ghExitError
		}
		params[k] = v
	}
	for _, f := range fs.values("field") {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			fmt.Fprintf(c.stderr, "field %q requires a value separated by an '=' sign\n", f)
			return ghExitError
		}
		val, err := c.magicValue(v)
		if err != nil {
			fmt.Fprintf(c.stderr, "error parsing %q value: %v\n", k, err)
			return ghExitError
		}
		params[k] = val
	}

	path, err := c.fillPlaceholders(endpoint)
	if err != nil {
		fmt.Fprintf(c.stderr, "unable to expand placeholder in path: %v\n", err)
		return ghExitError
	}
	var input []byte
	if in := fs.last("input"); in != "" {
		if in == "-" {
			fmt.Fprintln(c.stderr, "fake gh: --input - (standard input) is not supported")
			return ghExitError
		}
		if input, err = os.ReadFile(in); err != nil {
			fmt.Fprintln(c.stderr, err)
			return ghExitError
		}
	}
	if !methodPassed && (len(params) > 0 || input != nil) {
		method = "POST"
	}

	var u string
	switch {
	case isGraphQL:
		u = c.apiBase() + "/graphql"
	case strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://"):
		u = path
	default:
		u = c.apiBase() + "/" + strings.TrimPrefix(path, "/")
	}

	var body []byte
	switch {
	case input != nil:
		u = addQuery(u, params)
		body = input
	case method == "GET" || method == "HEAD":
		u = addQuery(u, params)
	case isGraphQL:
		body = mustJSON(groupGraphQLVariables(params))
	default:
		body = mustJSON(params)
	}

	req, err := c.newRequest(method, u, body, token)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	req.Header.Set("Accept", "*/*")
	for _, h := range fs.values("header") {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			fmt.Fprintf(c.stderr, "header %q requires a value separated by ':'\n", h)
			return ghExitError
		}
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return c.printRequestError(err)
	}
	defer resp.Body.Close()

	if fs.has("include") {
		fmt.Fprintln(c.stdout, resp.Proto, resp.Status)
		printHeaders(c.stdout, resp.Header)
		fmt.Fprint(c.stdout, "\r\n")
	}
	if resp.StatusCode == http.StatusNoContent {
		return ghExitOK
	}
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	isJSON := jsonContentRE.get().MatchString(resp.Header.Get("Content-Type"))
	var serverError string
	if isJSON && (isGraphQL || resp.StatusCode >= 400) {
		serverError, err = parseAPIError(respBody, resp.StatusCode)
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			return ghExitError
		}
	}
	if !fs.has("silent") {
		if expr := fs.last("jq"); expr != "" {
			if err := jqPaths(c.stdout, respBody, expr); err != nil {
				fmt.Fprintln(c.stderr, err)
				return ghExitError
			}
		} else {
			_, _ = c.stdout.Write(respBody)
		}
	}
	if serverError != "" {
		fmt.Fprintf(c.stderr, "gh: %s\n", serverError)
		if u := ssoURL(resp.Header); u != "" {
			fmt.Fprintf(c.stderr, "Authorize in your web browser:  %s\n", u)
		}
		return ghExitError
	}
	if resp.StatusCode > 299 {
		fmt.Fprintf(c.stderr, "gh: HTTP %d\n", resp.StatusCode)
		return ghExitError
	}
	return ghExitOK
}

// magicValue converts a -F value as gh does: integers, true, false, null,
// @file and the :owner/:repo placeholders.
func (c *ghCLI) magicValue(v string) (any, error) {
	if strings.HasPrefix(v, "@") {
		if v == "@-" {
			return nil, errors.New("reading standard input is not supported by the fake gh")
		}
		b, err := os.ReadFile(v[1:])
		if err != nil {
			return nil, err
		}
		return string(b), nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n, nil
	}
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	return c.fillPlaceholders(v)
}

var placeholderRE = lazyRegexp{expr: `[:{](owner|repo)\b}?`}

func (c *ghCLI) fillPlaceholders(v string) (string, error) {
	if !placeholderRE.get().MatchString(v) {
		return v, nil
	}
	owner, name, err := c.repo("")
	if err != nil {
		return v, err
	}
	return placeholderRE.get().ReplaceAllStringFunc(v, func(m string) string {
		if strings.Contains(m, "owner") {
			return owner
		}
		return name
	}), nil
}

func addQuery(u string, params map[string]any) string {
	if len(params) == 0 {
		return u
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	q := url.Values{}
	for _, k := range keys {
		switch v := params[k].(type) {
		case nil:
			q.Add(k, "")
		case string:
			q.Add(k, v)
		default:
			q.Add(k, fmt.Sprint(v))
		}
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + q.Encode()
}

// groupGraphQLVariables moves every parameter but query and operationName
// under "variables", as gh does.
func groupGraphQLVariables(params map[string]any) map[string]any {
	top := map[string]any{}
	vars := map[string]any{}
	for k, v := range params {
		switch k {
		case "query", "operationName":
			top[k] = v
		default:
			vars[k] = v
		}
	}
	if len(vars) > 0 {
		top["variables"] = vars
	}
	return top
}

// printHeaders prints response headers as `gh api -i` does: sorted,
// canonical names, values joined by ", ", CRLF line ends.
func printHeaders(w io.Writer, h http.Header) {
	names := make([]string, 0, len(h))
	for name := range h {
		if name != "Status" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "%s: %s\r\n", name, strings.Join(h[name], ", "))
	}
}

// parseAPIError extracts the message `gh api` prints from a JSON body: a
// top-level message with " (HTTP <status>)", else the messages of errors[]
// joined by newlines, else "".
func parseAPIError(body []byte, status int) (string, error) {
	var parsed struct {
		Message string            `json:"message"`
		Errors  []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		return "", err
	}
	if parsed.Message != "" {
		return fmt.Sprintf("%s (HTTP %d)", parsed.Message, status), nil
	}
	var msgs []string
	for _, raw := range parsed.Errors {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '{':
			var e struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				return "", err
			}
			msgs = append(msgs, e.Message)
		case '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", err
			}
			msgs = append(msgs, s)
		}
	}
	return strings.Join(msgs, "\n"), nil
}

var ssoHeaderRE = lazyRegexp{expr: `\burl=([^;]+)`}

// ssoURL is the authorization URL of an X-GitHub-SSO "required" header.
func ssoURL(h http.Header) string {
	v := h.Get("X-Github-Sso")
	if !strings.HasPrefix(v, "required;") {
		return ""
	}
	if m := ssoHeaderRE.get().FindStringSubmatch(v); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// ---- errors as go-gh formats them ----

// httpError formats a non-2xx answer as go-gh's api.HTTPError does:
// "HTTP <status>: <message> (<URL>)", further messages on their own lines.
func httpError(resp *http.Response, body []byte) string {
	msg := resp.Status
	if jsonContentRE.get().MatchString(resp.Header.Get("Content-Type")) {
		msg = ""
		var parsed struct {
			Message string            `json:"message"`
			Errors  []json.RawMessage `json:"errors"`
		}
		if err := json.Unmarshal(body, &parsed); err == nil {
			var msgs []string
			if parsed.Message != "" {
				msgs = append(msgs, parsed.Message)
			}
			for _, raw := range parsed.Errors {
				raw = bytes.TrimSpace(raw)
				if len(raw) == 0 {
					continue
				}
				switch raw[0] {
				case '"':
					var s string
					_ = json.Unmarshal(raw, &s)
					msgs = append(msgs, s)
				case '{':
					var e struct {
						Code, Field, Message, Resource string
					}
					_ = json.Unmarshal(raw, &e)
					m := e.Message
					if e.Code != "" && e.Code != "custom" {
						m = fmt.Sprintf("%s.%s %s", e.Resource, e.Field, errorCodeText(e.Code))
					}
					if m != "" {
						msgs = append(msgs, m)
					}
				}
			}
			msg = strings.Join(msgs, "\n")
		}
	}
	u := resp.Request.URL.String()
	if first, rest, ok := strings.Cut(msg, "\n"); ok {
		return fmt.Sprintf("HTTP %d: %s (%s)\n%s", resp.StatusCode, first, u, rest)
	}
	if msg != "" {
		return fmt.Sprintf("HTTP %d: %s (%s)", resp.StatusCode, msg, u)
	}
	return fmt.Sprintf("HTTP %d (%s)", resp.StatusCode, u)
}

func errorCodeText(code string) string {
	switch code {
	case "missing", "missing_field":
		return "is missing"
	case "invalid", "unprocessable":
		return "is invalid"
	case "already_exists":
		return "already exists"
	}
	return code
}

type gqlErrorItem struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Path    []any  `json:"path"`
}

// graphQLError formats GraphQL errors as go-gh's GQLError does:
// "GraphQL: <message> (<path>), <message>".
func graphQLError(errs []gqlErrorItem) string {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		m := e.Message
		if len(e.Path) > 0 {
			parts := make([]string, len(e.Path))
			for i, p := range e.Path {
				parts[i] = fmt.Sprint(p)
			}
			m = fmt.Sprintf("%s (%s)", m, strings.Join(parts, "."))
		}
		msgs = append(msgs, m)
	}
	return "GraphQL: " + strings.Join(msgs, ", ")
}

// printCommandError prints the error of a non-api command and gh's hint
// after it: "Try authenticating" for a 401, the SSO URL for a SAML 403.
func (c *ghCLI) printCommandError(msg string, resp *http.Response) int {
	fmt.Fprintln(c.stderr, msg)
	if resp != nil {
		if resp.StatusCode == http.StatusUnauthorized {
			fmt.Fprintln(c.stderr, "Try authenticating with:  gh auth login")
		} else if u := ssoURL(resp.Header); u != "" {
			fmt.Fprintf(c.stderr, "Authorize in your web browser:  %s\n", u)
		}
	}
	return ghExitError
}

// ---- gh pr ----

const ghPRCreateUsage = `Usage:  gh pr create [flags]

Flags:
  -B, --base branch    The branch into which you want your code merged
  -b, --body string    Body for the pull request
  -d, --draft          Mark pull request as a draft
  -H, --head branch    The branch that contains commits for your pull request (default "fake-branch")
  -R, --repo string    Select another repository using the [HOST/]OWNER/REPO format
  -t, --title string   Title for the pull request
`

func (c *ghCLI) prCreate(args []string) int {
	fs := newFlagSet(ghPRCreateUsage,
		flagSpec{long: "title", short: 't', value: true},
		flagSpec{long: "body", short: 'b', value: true},
		flagSpec{long: "base", short: 'B', value: true},
		flagSpec{long: "head", short: 'H', value: true},
		flagSpec{long: "draft", short: 'd'},
		flagSpec{long: "repo", short: 'R', value: true},
	)
	pos, err := fs.parse(args)
	if err != nil {
		return c.usageError(err.Error(), fs.usage)
	}
	if len(pos) > 0 {
		return c.usageError(fmt.Sprintf("unknown command %q for %q", pos[0], "gh pr create"), fs.usage)
	}
	token, ok := c.requireAuth()
	if !ok {
		return ghExitAuth
	}
	owner, name, err := c.repo(fs.last("repo"))
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	if !fs.has("title") {
		fmt.Fprintln(c.stderr, "must provide `--title` and `--body` (or `--fill` or `fill-first` or `--fillverbose`) when not running interactively")
		return ghExitError
	}
	head := fs.last("head")
	if head == "" {
		head = "fake-branch"
	}
	base := fs.last("base")
	if base == "" {
		base = "main"
	}
	body := mustJSON(map[string]any{
		"title": fs.last("title"),
		"body":  fs.last("body"),
		"head":  head,
		"base":  base,
		"draft": fs.has("draft"),
	})
	u := fmt.Sprintf("%s/repos/%s/%s/pulls", c.apiBase(), owner, name)
	req, err := c.newRequest(http.MethodPost, u, body, token)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := c.client.Do(req)
	if err != nil {
		return c.printRequestError(err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.printCommandError(httpError(resp, respBody), resp)
	}
	var created struct {
		Number  int    `json:"number"`
		HTMLURL string `json:"html_url"`
	}
	_ = json.Unmarshal(respBody, &created)
	if created.HTMLURL == "" {
		created.HTMLURL = fmt.Sprintf("https://github.com/%s/%s/pull/%d", owner, name, created.Number)
	}
	fmt.Fprintln(c.stdout, created.HTMLURL)
	return ghExitOK
}

const ghPRListUsage = `Usage:  gh pr list [flags]

Flags:
  -L, --limit int      Maximum number of items to fetch (default 30)
  -R, --repo string    Select another repository using the [HOST/]OWNER/REPO format
  -s, --state string   Filter by state: {open|closed|merged|all} (default "open")
`

const prListQuery = `query PullRequestList($owner: String!, $repo: String!, $limit: Int!, $state: [PullRequestState!]) {
  repository(owner: $owner, name: $repo) {
    pullRequests(states: $state, first: $limit, orderBy: {field: CREATED_AT, direction: DESC}) {
      totalCount
      nodes { number title state url headRefName isDraft createdAt }
    }
  }
}`

func (c *ghCLI) prList(args []string) int {
	fs := newFlagSet(ghPRListUsage,
		flagSpec{long: "limit", short: 'L', value: true},
		flagSpec{long: "repo", short: 'R', value: true},
		flagSpec{long: "state", short: 's', value: true},
	)
	pos, err := fs.parse(args)
	if err != nil {
		return c.usageError(err.Error(), fs.usage)
	}
	if len(pos) > 0 {
		return c.usageError(fmt.Sprintf("unknown command %q for %q", pos[0], "gh pr list"), fs.usage)
	}
	limit := 30
	if v := fs.last("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c.usageError(fmt.Sprintf("invalid argument %q for \"-L, --limit\" flag: %v", v, err), fs.usage)
		}
		if n <= 0 {
			return c.usageError(fmt.Sprintf("invalid value for --limit: %d", n), fs.usage)
		}
		limit = n
	}
	var states []string
	switch s := fs.last("state"); s {
	case "", "open":
		states = []string{"OPEN"}
	case "closed":
		states = []string{"CLOSED", "MERGED"}
	case "merged":
		states = []string{"MERGED"}
	case "all":
		states = []string{"OPEN", "CLOSED", "MERGED"}
	default:
		return c.usageError(fmt.Sprintf("invalid argument %q for \"-s, --state\" flag: valid values are {open|closed|merged|all}", s), fs.usage)
	}
	token, ok := c.requireAuth()
	if !ok {
		return ghExitAuth
	}
	owner, name, err := c.repo(fs.last("repo"))
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	body := mustJSON(map[string]any{
		"query":     prListQuery,
		"variables": map[string]any{"owner": owner, "repo": name, "limit": limit, "state": states},
	})
	req, err := c.newRequest(http.MethodPost, c.apiBase()+"/graphql", body, token)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return c.printRequestError(err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.printCommandError(httpError(resp, respBody), resp)
	}
	var out struct {
		Data struct {
			Repository *struct {
				PullRequests struct {
					Nodes []struct {
						Number      int    `json:"number"`
						Title       string `json:"title"`
						State       string `json:"state"`
						HeadRefName string `json:"headRefName"`
						IsDraft     bool   `json:"isDraft"`
						CreatedAt   string `json:"createdAt"`
					} `json:"nodes"`
				} `json:"pullRequests"`
			} `json:"repository"`
		} `json:"data"`
		Errors []gqlErrorItem `json:"errors"`
	}
	if err := json.Unmarshal(respBody, &out); err != nil {
		fmt.Fprintln(c.stderr, err)
		return ghExitError
	}
	if len(out.Errors) > 0 {
		return c.printCommandError(graphQLError(out.Errors), nil)
	}
	if out.Data.Repository == nil {
		// No results: gh exits 0 and, off a terminal, prints nothing.
		return ghExitOK
	}
	for i, n := range out.Data.Repository.PullRequests.Nodes {
		if i >= limit {
			break
		}
		state := n.State
		if n.IsDraft && state == "OPEN" {
			state = "DRAFT"
		}
		fmt.Fprintf(c.stdout, "%d\t%s\t%s\t%s\t%s\n", n.Number, n.Title, n.HeadRefName, state, n.CreatedAt)
	}
	return ghExitOK
}

// ---- flags, the way pflag parses them ----

type flagSpec struct {
	long  string
	short byte
	value bool // takes a value; otherwise a boolean
}

type flagSet struct {
	usage string
	specs []flagSpec
	vals  map[string][]string
}

func newFlagSet(usage string, specs ...flagSpec) *flagSet {
	return &flagSet{usage: usage, specs: specs, vals: map[string][]string{}}
}

func (fs *flagSet) has(long string) bool {
	v, ok := fs.vals[long]
	if !ok {
		return false
	}
	// A boolean set to false (--draft=false) is not set.
	return len(v) == 0 || v[len(v)-1] != "\x00false"
}

func (fs *flagSet) values(long string) []string { return fs.vals[long] }

func (fs *flagSet) last(long string) string {
	v := fs.vals[long]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func (fs *flagSet) byLong(name string) (flagSpec, bool) {
	for _, s := range fs.specs {
		if s.long == name {
			return s, true
		}
	}
	return flagSpec{}, false
}

func (fs *flagSet) byShort(c byte) (flagSpec, bool) {
	for _, s := range fs.specs {
		if s.short != 0 && s.short == c {
			return s, true
		}
	}
	return flagSpec{}, false
}

// parse sets flags from args and returns the positional arguments, with
// pflag's error texts.
func (fs *flagSet) parse(args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(pos, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			s, ok := fs.byLong(name)
			if !ok {
				return nil, fmt.Errorf("unknown flag: --%s", name)
			}
			if !s.value {
				if hasVal {
					b, err := strconv.ParseBool(val)
					if err != nil {
						return nil, fmt.Errorf("invalid argument %q for \"--%s\" flag: %v", val, name, err)
					}
					if !b {
						fs.vals[name] = append(fs.vals[name], "\x00false")
						continue
					}
				}
				fs.vals[name] = append(fs.vals[name], "true")
				continue
			}
			if !hasVal {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag needs an argument: --%s", name)
				}
				i++
				val = args[i]
			}
			fs.vals[name] = append(fs.vals[name], val)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				s, ok := fs.byShort(a[j])
				if !ok {
					return nil, fmt.Errorf("unknown shorthand flag: %q in %s", a[j], a)
				}
				if !s.value {
					fs.vals[s.long] = append(fs.vals[s.long], "true")
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("flag needs an argument: %q in %s", a[j], a)
					}
					i++
					val = args[i]
				}
				val = strings.TrimPrefix(val, "=")
				fs.vals[s.long] = append(fs.vals[s.long], val)
				break
			}
		default:
			pos = append(pos, a)
		}
	}
	return pos, nil
}

// ---- --jq, paths only ----

// jqPaths evaluates a jq path expression (".", ".a.b", ".a[0]", ".a[].b")
// against body and prints each result as gh does: strings raw, anything
// else as compact JSON, one per line.
func jqPaths(w io.Writer, body []byte, expr string) error {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return err
	}
	steps, err := parseJQPath(expr)
	if err != nil {
		return err
	}
	vals := []any{doc}
	for _, st := range steps {
		var next []any
		for _, v := range vals {
			switch {
			case st.iterate:
				switch x := v.(type) {
				case []any:
					next = append(next, x...)
				case map[string]any:
					keys := make([]string, 0, len(x))
					for k := range x {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						next = append(next, x[k])
					}
				case nil:
				default:
					return fmt.Errorf("Cannot iterate over %s", jqType(v)) //nolint:staticcheck // jq's own message
				}
			case st.key != "":
				switch x := v.(type) {
				case map[string]any:
					next = append(next, x[st.key])
				case nil:
					next = append(next, nil)
				default:
					return fmt.Errorf("Cannot index %s with %q", jqType(v), st.key) //nolint:staticcheck // jq's own message
				}
			default:
				switch x := v.(type) {
				case []any:
					idx := st.index
					if idx < 0 {
						idx += len(x)
					}
					if idx >= 0 && idx < len(x) {
						next = append(next, x[idx])
					} else {
						next = append(next, nil)
					}
				case nil:
					next = append(next, nil)
				default:
					return fmt.Errorf("Cannot index %s with number", jqType(v)) //nolint:staticcheck // jq's own message
				}
			}
		}
		vals = next
	}
	for _, v := range vals {
		if s, ok := v.(string); ok {
			fmt.Fprintln(w, s)
			continue
		}
		fmt.Fprintf(w, "%s\n", mustJSON(v))
	}
	return nil
}

type jqStep struct {
	key     string
	index   int
	iterate bool
}

var jqStepRE = lazyRegexp{expr: `^(?:\.([A-Za-z_][A-Za-z0-9_]*)|\.?\[(-?\d+)\]|\.?\[\])`}

func parseJQPath(expr string) ([]jqStep, error) {
	e := strings.TrimSpace(expr)
	if e == "." {
		return nil, nil
	}
	if !strings.HasPrefix(e, ".") {
		return nil, fmt.Errorf("fake gh: unsupported --jq expression %q (only paths like .a.b[0] are)", expr)
	}
	var steps []jqStep
	for e != "" {
		m := jqStepRE.get().FindStringSubmatch(e)
		if m == nil {
			return nil, fmt.Errorf("fake gh: unsupported --jq expression %q (only paths like .a.b[0] are)", expr)
		}
		switch {
		case m[1] != "":
			steps = append(steps, jqStep{key: m[1]})
		case m[2] != "":
			n, _ := strconv.Atoi(m[2])
			steps = append(steps, jqStep{index: n})
		default:
			steps = append(steps, jqStep{iterate: true})
		}
		e = e[len(m[0]):]
	}
	return steps, nil
}

func jqType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}
