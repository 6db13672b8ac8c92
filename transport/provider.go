package transport

import (
	"net/http"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/anthropic"
	"github.com/layoverhq/layover/provider/gemini"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/openai"
	"github.com/layoverhq/layover/provider/registry"
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

// fromRegistry is the Provider of the registry's entry name (docs:
// provider/registry).
func fromRegistry(name string) *Provider {
	p, ok := registry.Lookup(name)
	if !ok || p.API == nil {
		panic("transport: no API provider " + name + " in the registry")
	}
	a := p.API
	return &Provider{Name: p.Name, Classify: a.Classify, Observations: a.Observations, RejectsIn2xx: a.RejectsIn2xx,
		Principal: a.Principal, Resource: a.Resource, Applies: a.Applies}
}

// GitHub reads GitHub REST and GraphQL responses (provider/github). A
// request is charged to one resource, named from its path as GitHub does:
// "graphql" for POST …/graphql, "code_search" for …/search/code, "search"
// for other …/search/ paths, else "core"; GET …/rate_limit is free. Only
// the state of that resource holds the request back. The JSON body of a
// GraphQL 200 is read for the rate-limit errors GitHub sends under it.
func GitHub() *Provider { return fromRegistry(github.Provider) }

// Anthropic reads Anthropic API responses (provider/anthropic); the
// principal is the anthropic-organization-id once a response has named
// it. Every resource of the key's host and principal (requests, tokens,
// input-tokens, output-tokens, unified-5h, unified-7d, spend, billing)
// holds every request back.
func Anthropic() *Provider { return fromRegistry(anthropic.Provider) }

// OpenAI reads OpenAI API responses (provider/openai); the principal is
// the openai-organization once a response has named it. Every resource
// holds every request back.
func OpenAI() *Provider { return fromRegistry(openai.Provider) }

// Gemini reads Gemini API responses (provider/gemini). Gemini sends no
// rate-limit headers, so only rejections are observed. A resource scoped
// to a model ("requests-per-day:gemini-2.5-pro") holds back only requests
// to that model (…/models/gemini-2.5-pro:generateContent); any other
// resource holds back every request.
func Gemini() *Provider { return fromRegistry(gemini.Provider) }

// byHost chooses the ready-made Provider of a request's key host when
// Options.Provider is nil, by the registry's hosts (registry.NewHosts).
type byHost struct {
	hosts *registry.Hosts
	ready map[string]*Provider // by name, one per API
}

func newByHost(getenv func(string) string) *byHost {
	b := &byHost{hosts: registry.NewHosts(getenv), ready: map[string]*Provider{}}
	for _, name := range registry.HTTPNames() {
		b.ready[name] = fromRegistry(name)
	}
	return b
}

// choose returns the provider of a request to the key host host (see
// keyHost), or nil for a host it does not know.
func (b *byHost) choose(host string) *Provider {
	if p, ok := b.hosts.Provider(host); ok {
		return b.ready[p.Name]
	}
	return nil
}
