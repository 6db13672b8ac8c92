// Package registry describes every provider layover knows, each once: its
// name and label, where its API is and how the key it is called with is
// found, how its responses and its CLI's output are classified, what its
// headers say (observations, the principal), which resource a request is
// charged to, the resources `--quota NAME:RESOURCE` may name and those
// plain `--quota NAME` means, and how fresh quota state is read when the
// provider has a free endpoint for it (docs/design.md, Package layout;
// docs/provider-signals.md). The transport, `layover classify`, the command
// engine and `pass` find providers here only: adding a provider is adding
// one entry here, beside its classifier package.
package registry

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// Auto names the classifier that asks every CLI's (agentcli.ClassifyAuto):
// `layover run --provider auto`. It is no provider of its own.
const Auto = agentcli.ProviderAuto

// Provider is one provider's description. Entries are read-only.
type Provider struct {
	// Name is the provider's name: the Outcome.Provider of its
	// classifiers, PROVIDER in `--quota PROVIDER[:RESOURCE]` and in
	// `classify --provider`.
	Name string
	// Label names it for people: "GitHub", "Claude Code".
	Label string
	// API describes its HTTP API; nil for an agent CLI, whose own quotas
	// are keyed by host Name (docs/design.md, Glossary: Quota key).
	API *API
	// CLI classifies a failed command of the provider's CLI (gh, an agent
	// CLI): its exit code, stdout and stderr, the time it ended, and the
	// zone a time printed without one is read in. nil for an API without a
	// CLI of its own.
	CLI agentcli.Func
	// Resources are the resources the provider's evidence names, the ones
	// `--quota NAME:RESOURCE` may name.
	Resources []string
	// ModelScoped: a resource may also be RESOURCE:MODEL, a quota the
	// provider keeps per model ("requests-per-day:gemini-2.5-pro"), with
	// RESOURCE one of Resources.
	ModelScoped bool
	// Models: a resource may also be a model name alone, as Gemini CLI's
	// "Usage limit reached for gemini-2.5-pro" names its quota.
	Models bool
	// Defaults are the resources plain `--quota NAME` means. nil: a
	// resource must be named (the provider keeps its quotas per model).
	Defaults []string
	// DefaultResource is the resource a limit is recorded under when its
	// evidence names none.
	DefaultResource string
	// ReserveReason is the receipt reason (docs/receipt.md, Reasons) of a
	// deferral on resource, its primary exhaustion or a reserve still
	// short: GitHub's rest-reserve and graphql-reserve. nil:
	// receipt.ProviderQuota.
	ReserveReason func(resource string) receipt.Reason
}

// ReceiptReason is the receipt reason of a deferral on resource of the
// provider named name: receipt.ProviderSecondaryLimit for a secondary
// limit, else the provider's ReserveReason, else receipt.ProviderQuota.
func ReceiptReason(name, resource string, secondary bool) receipt.Reason {
	if secondary {
		return receipt.ProviderSecondaryLimit
	}
	if p, ok := Lookup(name); ok && p.ReserveReason != nil {
		return p.ReserveReason(resource)
	}
	return receipt.ProviderQuota
}

// API is how a provider's HTTP API is reached, keyed and read.
type API struct {
	// Hosts are the API's public hosts, the host of its quota keys.
	Hosts []string
	// HostSuffixes: a host ending so is this API's too (GitHub's
	// "*.ghe.com").
	HostSuffixes []string
	// BaseURLEnv names the variable that moves the API (GITHUB_API_URL,
	// ANTHROPIC_BASE_URL, …: the one the provider's SDKs read);
	// DefaultBaseURL is the API root without it.
	BaseURLEnv, DefaultBaseURL string
	// KeyEnv names the variables the API key is read from, the first one
	// set winning, as the provider's SDKs read it. nil for GitHub, whose
	// token provider/github finds (GH_TOKEN, GITHUB_TOKEN, gh).
	KeyEnv []string

	// Classify classifies a response received at now, with up to 1 MiB
	// of its body (nil when not read).
	Classify func(resp *http.Response, body []byte, now time.Time) provider.Outcome
	// Observations returns the quota states a response's headers describe,
	// with only Key.Resource set.
	Observations func(h http.Header, now time.Time) []quota.State
	// Principal returns the principal a response names in its headers
	// (an organisation id), or false.
	Principal func(h http.Header) (string, bool)
	// Resource names the resource a request is charged to ("" for a
	// request charged to none, GitHub's GET /rate_limit). nil: every
	// request is charged to DefaultResource.
	Resource func(req *http.Request) string
	// Applies reports whether a quota of resource holds the request back.
	// nil: every resource does.
	Applies func(req *http.Request, resource string) bool
	// RejectsIn2xx reports whether a 2xx response to req may carry a
	// rejection in its body (GitHub GraphQL's errors[] under a 200). nil:
	// never.
	RejectsIn2xx func(req *http.Request, resp *http.Response) bool
	// Fresh reads the state of every resource from an endpoint that costs
	// no quota (GitHub's GET /rate_limit). nil: the API has none, and
	// `pass`, `run --quota` and the host read the ledger only.
	Fresh func(ctx context.Context, e Endpoint) ([]quota.State, error)
}

// Endpoint is what API.Fresh calls.
type Endpoint struct {
	// BaseURL is the API root (API.Base); Token the credential, "" for
	// none. The token is sent to the API only, never kept.
	BaseURL, Token string
	// HTTP sends the request; it should bound the call's time.
	HTTP *http.Client
	// Now stamps the observations and corrects resets for clock skew.
	Now func() time.Time
}

// Base returns the API root (BaseURLEnv in getenv, else DefaultBaseURL)
// and the host that keys its quotas (provider.APIBase).
func (a *API) Base(getenv func(string) string) (baseURL, host string, err error) {
	return provider.APIBase(getenv, a.BaseURLEnv, a.DefaultBaseURL)
}

// Key returns the API key getenv holds (KeyEnv, the first one set), ""
// when none is set.
func (a *API) Key(getenv func(string) string) string {
	for _, name := range a.KeyEnv {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
	}
	return ""
}

// all is every provider, in the order All lists them.
var all = []*Provider{gitHub, anthropicAPI, openAIAPI, geminiAPI, claudeCode, codex, copilot, kimi, geminiCLI, antigravity}

// byName indexes all.
var byName = func() map[string]*Provider {
	m := make(map[string]*Provider, len(all))
	for _, p := range all {
		m[p.Name] = p
	}
	return m
}()

// All returns every provider: GitHub, the LLM APIs, then the agent CLIs.
// The slice is the caller's; the entries are shared and read-only.
func All() []*Provider { return slices.Clone(all) }

// Lookup returns the provider of a name.
func Lookup(name string) (*Provider, bool) {
	p, ok := byName[name]
	return p, ok
}

// Names lists the providers' names, in All's order.
func Names() []string { return names(func(*Provider) bool { return true }) }

// HTTPNames lists the providers with an API, in All's order.
func HTTPNames() []string { return names(func(p *Provider) bool { return p.API != nil }) }

// CLINames lists the providers with a CLI classifier, in All's order.
func CLINames() []string { return names(func(p *Provider) bool { return p.CLI != nil }) }

func names(keep func(*Provider) bool) []string {
	var out []string
	for _, p := range all {
		if keep(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// CLIClassifier returns the CLI classifier of a provider name, or of Auto.
func CLIClassifier(name string) (agentcli.Func, bool) {
	if name == Auto {
		return agentcli.ClassifyAuto, true
	}
	if p, ok := byName[name]; ok && p.CLI != nil {
		return p.CLI, true
	}
	return nil, false
}

// Label names a provider for people: its Label, or, for a name no
// provider has, the name itself on one safe line.
func Label(name string) string {
	if p, ok := byName[name]; ok {
		return p.Label
	}
	return provider.CleanText(name, 64)
}

// CheckResource reports whether `--quota NAME:resource` names a resource
// of p; the error, one line, lists the ones it knows.
func (p *Provider) CheckResource(resource string) error {
	if slices.Contains(p.Resources, resource) {
		return nil
	}
	base, model, scoped := strings.Cut(resource, ":")
	if p.ModelScoped && scoped && slices.Contains(p.Resources, base) && validModel(model) {
		return nil
	}
	if p.Models && !scoped && validModel(resource) {
		return nil
	}
	known := strings.Join(p.Resources, ", ")
	switch {
	case p.ModelScoped && p.Models:
		known += ", each as RESOURCE:MODEL too, or a model name"
	case p.ModelScoped:
		known += ", each as RESOURCE:MODEL too"
	}
	return fmt.Errorf("unknown %s resource %q (known: %s)", p.Name, provider.CleanText(resource, 64), known)
}

// validModel reports whether s can be a model name as the classifiers
// write it: lowercase letters, digits, '-', '_' and '.'.
func validModel(s string) bool {
	name, ok := llm.CleanName(s)
	return ok && name == s && !strings.Contains(s, ":")
}

// Hosts maps quota hosts to the providers whose APIs they are.
type Hosts struct {
	byHost map[string]*Provider
}

// NewHosts indexes every API's public hosts and the host its base-URL
// variable names in getenv (GITHUB_API_URL, ANTHROPIC_BASE_URL, …; one
// that cannot be used is ignored). A host that two variables name is
// neither's: requests to it cannot be told apart by host.
func NewHosts(getenv func(string) string) *Hosts {
	h := &Hosts{byHost: map[string]*Provider{}}
	for _, p := range all {
		if p.API == nil {
			continue
		}
		for _, host := range p.API.Hosts {
			h.byHost[host] = p
		}
	}
	named := map[string]*Provider{}
	for _, p := range all {
		if p.API == nil || strings.TrimSpace(getenv(p.API.BaseURLEnv)) == "" {
			continue
		}
		if _, host, err := p.API.Base(getenv); err == nil {
			if q, twice := named[host]; twice && q != p {
				named[host] = nil
			} else {
				named[host] = p
			}
		}
	}
	for host, p := range named {
		if _, public := h.byHost[host]; !public {
			h.byHost[host] = p
		}
	}
	return h
}

// OfKey returns the provider whose quota k is: the API whose host is
// k.Host (Provider), else the agent CLI whose name is k.Host (an agent
// CLI's own quotas are keyed by its name); false for neither.
func (h *Hosts) OfKey(k quota.Key) (*Provider, bool) {
	if p, ok := h.Provider(k.Host); ok {
		return p, true
	}
	if p, ok := Lookup(k.Host); ok && p.API == nil {
		return p, true
	}
	return nil, false
}

// Provider returns the provider whose API host is, by NewHosts' index or a
// host suffix; false for a host of no API layover knows (and for "").
func (h *Hosts) Provider(host string) (*Provider, bool) {
	if host == "" {
		return nil, false
	}
	if p, ok := h.byHost[host]; ok {
		return p, p != nil
	}
	for _, p := range all {
		if p.API == nil {
			continue
		}
		for _, suffix := range p.API.HostSuffixes {
			if strings.HasSuffix(host, suffix) {
				return p, true
			}
		}
	}
	return nil, false
}
