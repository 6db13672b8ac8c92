package transport

import (
	"net/http"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/anthropic"
	"github.com/layoverhq/layover/provider/gemini"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/openai"
	"github.com/layoverhq/layover/quota"
)

// DefaultResource is the resource a rejection is recorded under when
// neither the response nor Provider.Resource names one.
const DefaultResource = "requests"

// Provider tells a Transport how to read one provider's responses and how
// its requests map to quota keys. The ready-made ones are [GitHub],
// [Anthropic], [OpenAI] and [Gemini]; a Provider is read-only once passed
// to New, and its functions must be safe for concurrent use.
type Provider struct {
	// Name is the provider's name ("github", "anthropic", ...).
	Name string

	// Classify classifies a response received at now. The Transport calls
	// it for every response that is not 2xx or 304: for a 4xx or 5xx with
	// up to 1 MiB of its body (the caller still reads the whole body),
	// else with a nil body. Required.
	Classify func(resp *http.Response, body []byte, now time.Time) provider.Outcome

	// Observations returns the quota states a response's headers describe,
	// with only Key.Resource set. The Transport calls it for 2xx and 304
	// responses whose bodies it does not read (see RejectsIn2xx). nil means
	// the Observations of Classify(resp, nil, now).
	Observations func(h http.Header, now time.Time) []quota.State

	// RejectsIn2xx reports whether a 2xx response to req may carry a
	// rejection in its body, as GitHub GraphQL's errors[] under a 200
	// does. For those the Transport reads up to 1 MiB of the body before
	// returning (the caller still reads it whole) and classifies it with
	// Classify; a rejection it finds is handled like any other. nil means
	// never: a 2xx body is the caller's alone (a stream stays a stream).
	RejectsIn2xx func(req *http.Request, resp *http.Response) bool

	// Principal returns the principal a response names in its headers (an
	// organisation id), or false. nil means none ever does.
	Principal func(h http.Header) (string, bool)

	// Resource names the resource a request is charged to, used when a
	// rejection names none and to key transient waits. "" means the
	// request is charged to no quota (GitHub's GET /rate_limit): nothing
	// holds it back. nil means DefaultResource for every request.
	Resource func(req *http.Request) string

	// Applies reports whether a quota of resource, on the request's host
	// and principal, holds the request back. nil means every resource
	// does, unless Resource gives "".
	Applies func(req *http.Request, resource string) bool
}

// resource returns the resource req is charged to.
func (p *Provider) resource(req *http.Request) string {
	if p.Resource == nil {
		return DefaultResource
	}
	return p.Resource(req)
}

// applies reports whether a state of resource holds req back.
func (p *Provider) applies(req *http.Request, charged, resource string) bool {
	if charged == "" {
		return false
	}
	if p.Applies == nil {
		return true
	}
	return p.Applies(req, resource)
}

// observations returns the quota states of a 2xx or 304 response.
func (p *Provider) observations(resp *http.Response, now time.Time) []quota.State {
	if p.Observations != nil {
		return p.Observations(resp.Header, now)
	}
	return p.Classify(resp, nil, now).Observations
}

// GitHub reads GitHub REST and GraphQL responses (provider/github). A
// request is charged to one resource, named from its path as GitHub does:
// "graphql" for POST …/graphql, "code_search" for …/search/code, "search"
// for other …/search/ paths, else "core"; GET …/rate_limit is free. Only
// the state of that resource holds the request back. The JSON body of a
// GraphQL 200 is read for the rate-limit errors GitHub sends under it.
func GitHub() *Provider {
	return &Provider{
		Name:         github.Provider,
		Classify:     github.ClassifyHTTP,
		Observations: github.Observations,
		Resource:     githubResource,
		Applies: func(req *http.Request, resource string) bool {
			return resource == githubResource(req)
		},
		RejectsIn2xx: func(req *http.Request, resp *http.Response) bool {
			return githubResource(req) == "graphql" && isJSON(resp.Header)
		},
	}
}

// isJSON reports whether h declares a JSON body (application/json, or a
// +json media type such as GitHub's application/vnd.github+json).
func isJSON(h http.Header) bool {
	mt, _, _ := strings.Cut(strings.ToLower(h.Get("Content-Type")), ";")
	mt = strings.TrimSpace(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// githubResource names the GitHub resource req is charged to.
func githubResource(req *http.Request) string {
	p := strings.ToLower(req.URL.Path)
	switch {
	case strings.HasSuffix(p, "/rate_limit"):
		return ""
	case req.Method == http.MethodPost && strings.HasSuffix(p, "/graphql"):
		return "graphql"
	case strings.HasSuffix(p, "/search/code") || strings.Contains(p, "/search/code/"):
		return "code_search"
	case strings.Contains(p, "/search/"):
		return "search"
	}
	return "core"
}

// Anthropic reads Anthropic API responses (provider/anthropic); the
// principal is the anthropic-organization-id once a response has named
// it. Every resource of the key's host and principal (requests, tokens,
// input-tokens, output-tokens, unified-5h, unified-7d, spend, billing)
// holds every request back.
func Anthropic() *Provider {
	return &Provider{
		Name:         anthropic.Provider,
		Classify:     anthropic.ClassifyHTTP,
		Observations: anthropic.Observations,
		Principal:    anthropic.Principal,
	}
}

// OpenAI reads OpenAI API responses (provider/openai); the principal is
// the openai-organization once a response has named it. Every resource
// holds every request back.
func OpenAI() *Provider {
	return &Provider{
		Name:         openai.Provider,
		Classify:     openai.ClassifyHTTP,
		Observations: openai.Observations,
		Principal:    openai.Principal,
	}
}

// Gemini reads Gemini API responses (provider/gemini). Gemini sends no
// rate-limit headers, so only rejections are observed. A resource scoped
// to a model ("requests-per-day:gemini-2.5-pro") holds back only requests
// to that model (…/models/gemini-2.5-pro:generateContent); any other
// resource holds back every request.
func Gemini() *Provider {
	return &Provider{
		Name:         gemini.Provider,
		Classify:     gemini.ClassifyHTTP,
		Observations: gemini.Observations,
		Principal:    gemini.Principal,
		Applies:      geminiApplies,
	}
}

// geminiApplies reports whether a Gemini resource holds req back.
func geminiApplies(req *http.Request, resource string) bool {
	_, model, scoped := strings.Cut(resource, ":")
	if !scoped {
		return true
	}
	return strings.EqualFold(geminiModel(req.URL.Path), model)
}

// geminiModel returns the model a Gemini request path names
// (".../models/gemini-2.5-pro:generateContent" → "gemini-2.5-pro"), or "".
func geminiModel(path string) string {
	_, rest, ok := strings.Cut(path, "/models/")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, ":/"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// Hosts chosen by providerFor when Options.Provider is nil.
const (
	hostGitHub    = "api.github.com"
	hostAnthropic = "api.anthropic.com"
	hostOpenAI    = "api.openai.com"
	hostGemini    = "generativelanguage.googleapis.com"
)

// byHost holds the ready-made providers chosen by host.
type byHost struct {
	github, anthropic, openai, gemini *Provider
	// githubAPIHost is the key host of GITHUB_API_URL, "" when unset or
	// unusable.
	githubAPIHost string
}

func newByHost(githubAPIHost string) *byHost {
	if githubAPIHost == hostGitHub {
		githubAPIHost = ""
	}
	return &byHost{github: GitHub(), anthropic: Anthropic(), openai: OpenAI(), gemini: Gemini(), githubAPIHost: githubAPIHost}
}

// choose returns the provider of a request to the key host host (see
// keyHost), or nil for a host it does not know.
func (b *byHost) choose(host string) *Provider {
	switch host {
	case hostGitHub:
		return b.github
	case hostAnthropic:
		return b.anthropic
	case hostOpenAI:
		return b.openai
	case hostGemini:
		return b.gemini
	case "":
		return nil
	case b.githubAPIHost:
		return b.github
	}
	if strings.HasSuffix(host, ".ghe.com") {
		return b.github
	}
	return nil
}
