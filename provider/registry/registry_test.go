package registry_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

var now = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

// env is a getenv of the given variables.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Every provider is listed once, with every field it needs: a name and a
// label; an API with its hosts, base URL, key variables, classifier and
// header readers, or a CLI classifier; resources that are resource names,
// defaults among them; and a free endpoint for GitHub alone.
func TestEveryProviderOnceWithAllFields(t *testing.T) {
	t.Parallel()
	want := []string{"github", "anthropic", "openai", "gemini", "claude-code", "codex", "copilot", "kimi", "gemini-cli", "antigravity"}
	if got := registry.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if got := registry.HTTPNames(); !slices.Equal(got, want[:4]) {
		t.Errorf("HTTPNames() = %v, want %v", got, want[:4])
	}
	if got := registry.CLINames(); !slices.Equal(got, append([]string{"github"}, want[4:]...)) {
		t.Errorf("CLINames() = %v", got)
	}
	labels := map[string]bool{}
	for _, p := range registry.All() {
		if q, ok := registry.Lookup(p.Name); !ok || q != p {
			t.Errorf("Lookup(%q) = %v, %v", p.Name, q, ok)
		}
		if p.Label == "" || labels[p.Label] || registry.Label(p.Name) != p.Label {
			t.Errorf("%s: label %q missing or not its own", p.Name, p.Label)
		}
		labels[p.Label] = true
		if p.API == nil && p.CLI == nil {
			t.Errorf("%s: neither an API nor a CLI", p.Name)
		}
		if len(p.Resources) == 0 || !slices.Contains(p.Resources, p.DefaultResource) {
			t.Errorf("%s: resources %v, default resource %q", p.Name, p.Resources, p.DefaultResource)
		}
		for _, r := range p.Resources {
			if !quota.ValidResource(r) || p.CheckResource(r) != nil {
				t.Errorf("%s: resource %q is no resource name", p.Name, r)
			}
		}
		for _, r := range p.Defaults {
			if !slices.Contains(p.Resources, r) {
				t.Errorf("%s: default %q is not among its resources", p.Name, r)
			}
		}
		if (p.Defaults == nil) != p.ModelScoped {
			t.Errorf("%s: defaults %v: only a provider that keeps quotas per model has none", p.Name, p.Defaults)
		}
		if p.API == nil {
			if p.DefaultResource != "usage" {
				t.Errorf("%s: an agent CLI's unnamed resource is %q, want usage", p.Name, p.DefaultResource)
			}
			continue
		}
		a := p.API
		if len(a.Hosts) == 0 || a.Classify == nil || a.Observations == nil || a.BaseURLEnv == "" {
			t.Errorf("%s: API incomplete: %+v", p.Name, a)
		}
		base, host, err := a.Base(env())
		if err != nil || base != strings.TrimRight(a.DefaultBaseURL, "/") || host != a.Hosts[0] {
			t.Errorf("%s: Base() = %q, %q, %v; want its default root on %s", p.Name, base, host, err, a.Hosts[0])
		}
		if (a.KeyEnv == nil) != (p.Name == "github") {
			t.Errorf("%s: key variables %v", p.Name, a.KeyEnv)
		}
		if (a.Fresh != nil) != (p.Name == "github") {
			t.Errorf("%s: only GitHub has a free endpoint for its quota state", p.Name)
		}
		if (a.Principal != nil) == (p.Name == "github") {
			t.Errorf("%s: the LLM APIs, not GitHub, name a principal in their headers", p.Name)
		}
	}
}

// Each classifier answers as its provider: the HTTP ones a response, the
// CLI ones a failed command; auto is a classifier and no provider.
func TestClassifiersAnswerAsTheirProvider(t *testing.T) {
	t.Parallel()
	for _, p := range registry.All() {
		if p.API != nil {
			resp := &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{}}
			if out := p.API.Classify(resp, nil, now); out.Provider != p.Name || out.Class != provider.ClassTransient {
				t.Errorf("%s: a 500 is %+v", p.Name, out)
			}
		}
		if p.CLI != nil {
			fn, ok := registry.CLIClassifier(p.Name)
			if !ok {
				t.Fatalf("CLIClassifier(%q) not found", p.Name)
			}
			if out := fn(0, nil, nil, now, time.UTC); out.Class != provider.ClassOK {
				t.Errorf("%s: exit 0 is %+v", p.Name, out)
			}
			if out := fn(1, nil, []byte("connection refused"), now, time.UTC); out.Provider != p.Name {
				t.Errorf("%s: a failure is classified as %q", p.Name, out.Provider)
			}
		}
	}
	if _, ok := registry.CLIClassifier(registry.Auto); !ok {
		t.Error("auto is no CLI classifier")
	}
	if _, ok := registry.Lookup(registry.Auto); ok {
		t.Error("auto is a provider")
	}
	for _, name := range []string{"anthropic", "claude", ""} {
		if _, ok := registry.CLIClassifier(name); ok {
			t.Errorf("CLIClassifier(%q) found", name)
		}
	}
}

// A host is a provider's by its public hosts, its suffixes and the host
// its base-URL variable names; a host two variables name is neither's.
func TestHosts(t *testing.T) {
	t.Parallel()
	hosts := registry.NewHosts(env("GITHUB_API_URL", "https://GHES.example.com/api/v3",
		"ANTHROPIC_BASE_URL", "http://127.0.0.1:8089", "OPENAI_BASE_URL", "http://127.0.0.1:9000/v1",
		"GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9000", "OPENAI_API_KEY", "ignored"))
	for host, want := range map[string]string{
		"api.github.com": "github", "api.octo.ghe.com": "github", "ghes.example.com": "github",
		"api.anthropic.com": "anthropic", "127.0.0.1:8089": "anthropic", "api.openai.com": "openai",
		"generativelanguage.googleapis.com": "gemini",
		"127.0.0.1:9000":                    "", "example.com": "", "": "", "claude-code": "",
	} {
		p, ok := hosts.Provider(host)
		if got := ""; ok {
			got = p.Name
			if got != want {
				t.Errorf("host %q is %s's, want %q", host, got, want)
			}
		} else if want != "" {
			t.Errorf("host %q is no provider's, want %s", host, want)
		}
	}
	// A base URL that cannot be used names no host.
	if p, ok := registry.NewHosts(env("ANTHROPIC_BASE_URL", "ftp://x")).Provider("x"); ok {
		t.Errorf("an unusable base URL's host is %s's", p.Name)
	}
}

// A key's provider is its API host's, or the agent CLI its host names.
func TestOfKey(t *testing.T) {
	t.Parallel()
	hosts := registry.NewHosts(env("GITHUB_API_URL", "https://ghes.example.com/api/v3"))
	for host, want := range map[string]string{
		"api.github.com": "github", "ghes.example.com": "github", "api.anthropic.com": "anthropic",
		"claude-code": "claude-code", "gemini-cli": "gemini-cli", "github": "", "example.com": "", "": "",
	} {
		got := ""
		if p, ok := hosts.OfKey(quota.Key{Host: host, Principal: "p", Resource: "r"}); ok {
			got = p.Name
		}
		if got != want {
			t.Errorf("OfKey(host %q) = %q, want %q", host, got, want)
		}
	}
}

// The receipt reasons of docs/receipt.md (Reasons): GitHub's reserve
// reasons by resource, provider-quota for every other provider, and
// provider-secondary-limit for any secondary limit.
func TestReceiptReason(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		provider, resource string
		secondary          bool
		want               receipt.Reason
	}{
		{"github", "core", false, receipt.RESTReserve},
		{"github", "search", false, receipt.RESTReserve},
		{"github", "graphql", false, receipt.GraphQLReserve},
		{"github", "core", true, receipt.ProviderSecondaryLimit},
		{"anthropic", "tokens", false, receipt.ProviderQuota},
		{"claude-code", "five_hour", false, receipt.ProviderQuota},
		{"anthropic", "requests", true, receipt.ProviderSecondaryLimit},
		{"", "core", false, receipt.ProviderQuota},
	} {
		if got := registry.ReceiptReason(tt.provider, tt.resource, tt.secondary); got != tt.want {
			t.Errorf("ReceiptReason(%q, %q, %v) = %s, want %s", tt.provider, tt.resource, tt.secondary, got, tt.want)
		}
	}
}

// `--quota NAME:RESOURCE` names a known resource, a model-scoped one where
// the provider keeps quotas per model, or a model for Gemini CLI; anything
// else is one line listing the known ones.
func TestCheckResource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		provider, resource string
		ok                 bool
	}{
		{"github", "core", true},
		{"github", "search", true},
		{"github", "cor", false},
		{"github", "requests", false},
		{"anthropic", "tokens", true},
		{"anthropic", "unified-5h", true},
		{"openai", "requests", true},
		{"openai", "requests:gpt-4o", false},
		{"gemini", "requests-per-day:gemini-2.5-pro", true},
		{"gemini", "requests-per-day", true},
		{"gemini", "requests-per-day:Gemini 2.5", false},
		{"gemini", "gemini-2.5-pro", false},
		{"gemini", "queries:gemini-2.5-pro", false},
		{"gemini-cli", "gemini-2.5-pro", true},
		{"gemini-cli", "usage", true},
		{"claude-code", "five_hour", true},
		{"claude-code", "input-tokens", true},
		{"claude-code", "unified-5h\n", false},
		{"claude-code", "unified-5h", false}, // Anthropic's header, never in Claude Code's output
		{"kimi", "tokens-per-day", true},
		{"kimi", "tokens-usage-based", false},
		{"copilot", "premium-requests", true},
		{"copilot", "five_hour", false},
	} {
		p, _ := registry.Lookup(c.provider)
		err := p.CheckResource(c.resource)
		if (err == nil) != c.ok {
			t.Errorf("%s:%q: %v, want ok %v", c.provider, c.resource, err, c.ok)
			continue
		}
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") || !strings.Contains(msg, "known: "+p.Resources[0]) {
				t.Errorf("%s:%q: error %q is not one line listing the known resources", c.provider, c.resource, msg)
			}
		}
	}
}

// The request→resource maps: GitHub's by path, Gemini's per model.
func TestRequestResources(t *testing.T) {
	t.Parallel()
	req := func(method, rawURL string) *http.Request {
		u, _ := url.Parse(rawURL)
		return &http.Request{Method: method, URL: u, Header: http.Header{}}
	}
	gh, _ := registry.Lookup("github")
	for path, want := range map[string]string{
		"/repos/o/r": "core", "/rate_limit": "", "/search/issues": "search", "/search/code": "code_search",
		"/api/v3/search/code/x": "code_search", "/api/v3/search/issues": "search",
	} {
		if got := gh.API.Resource(req(http.MethodGet, "https://api.github.com"+path)); got != want {
			t.Errorf("GET %s is charged to %q, want %q", path, got, want)
		}
	}
	for _, path := range []string{"/graphql", "/api/graphql"} {
		if got := gh.API.Resource(req(http.MethodPost, "https://api.github.com"+path)); got != "graphql" {
			t.Errorf("POST %s is charged to %q", path, got)
		}
	}
	if got := gh.API.Resource(req(http.MethodGet, "https://api.github.com/graphql")); got != "core" {
		t.Errorf("GET /graphql is charged to %q, want core", got)
	}
	json := &http.Response{Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}}
	if !gh.API.RejectsIn2xx(req(http.MethodPost, "https://api.github.com/graphql"), json) ||
		gh.API.RejectsIn2xx(req(http.MethodGet, "https://api.github.com/repos/o/r"), json) {
		t.Error("only a GraphQL JSON 200 may carry a rejection")
	}
	gm, _ := registry.Lookup("gemini")
	pro := req(http.MethodPost, "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent")
	if !gm.API.Applies(pro, "requests-per-day:gemini-2.5-pro") || gm.API.Applies(pro, "requests-per-day:gemini-2.5-flash") ||
		!gm.API.Applies(pro, "billing") {
		t.Error("a model's quota holds back requests to that model only; an unscoped one every request")
	}
}

// Key reads the first key variable set.
func TestKey(t *testing.T) {
	t.Parallel()
	gm, _ := registry.Lookup("gemini")
	if got := gm.API.Key(env("GEMINI_API_KEY", "g", "GOOGLE_API_KEY", " k ")); got != "k" {
		t.Errorf("Key = %q, want GOOGLE_API_KEY's, as the SDKs read it", got)
	}
	if got := gm.API.Key(env()); got != "" {
		t.Errorf("Key without one = %q", got)
	}
}
