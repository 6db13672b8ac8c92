package registry

import (
	"net/http"
	"strings"

	"github.com/layoverhq/layover/provider/anthropic"
	"github.com/layoverhq/layover/provider/gemini"
	"github.com/layoverhq/layover/provider/openai"
)

// The LLM APIs (docs/provider-signals.md §2–4). Their quotas are keyed by
// the API host, the organisation id a response names (else the key's
// fingerprint) and the resource; none has a free endpoint for its state,
// so layover learns it from responses only: the ledger.

// anthropicAPI is Anthropic's API. Every resource of a key holds every
// request back; plain `--quota anthropic` is all of them.
var anthropicAPI = &Provider{
	Name:  anthropic.Provider,
	Label: "Anthropic",
	API: &API{
		Hosts:          []string{"api.anthropic.com"},
		BaseURLEnv:     "ANTHROPIC_BASE_URL",
		DefaultBaseURL: "https://api.anthropic.com",
		KeyEnv:         []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"},
		Classify:       anthropic.ClassifyHTTP,
		Observations:   anthropic.Observations,
		Principal:      anthropic.Principal,
	},
	Resources:       anthropicResources,
	Defaults:        anthropicResources,
	DefaultResource: "requests",
}

// anthropicRelayed are the resources Anthropic's error bodies and
// messages name (its header families, its spend and credit limits): all a
// CLI that prints those bodies (Claude Code) can name.
var anthropicRelayed = []string{"requests", "tokens", "input-tokens", "output-tokens",
	anthropic.ResourceSpend, anthropic.ResourceBilling}

// anthropicResources are those and the subscription windows its headers
// report (percent).
var anthropicResources = union(anthropicRelayed, []string{"unified-5h", "unified-7d"})

// openAIAPI is OpenAI's API (and OpenAI-compatible ones behind
// OPENAI_BASE_URL). Every resource of a key holds every request back; plain
// `--quota openai` is all of them.
var openAIAPI = &Provider{
	Name:  openai.Provider,
	Label: "OpenAI",
	API: &API{
		Hosts:          []string{"api.openai.com"},
		BaseURLEnv:     "OPENAI_BASE_URL",
		DefaultBaseURL: "https://api.openai.com/v1",
		KeyEnv:         []string{"OPENAI_API_KEY"},
		Classify:       openai.ClassifyHTTP,
		Observations:   openai.Observations,
		Principal:      openai.Principal,
	},
	Resources:       openAIResources,
	Defaults:        openAIResources,
	DefaultResource: "requests",
}

// openAIRelayed are the resources OpenAI's error bodies and messages name
// (its per-minute and daily limits, its spend and credit limits): all a CLI
// that prints those bodies (Codex, Kimi) can name.
var openAIRelayed = []string{"requests", "tokens", "requests-per-day", "tokens-per-day",
	openai.ResourceSpend, openai.ResourceBilling}

// openAIResources are those and the _usage_based header families.
var openAIResources = union(openAIRelayed, []string{"requests-usage-based", "tokens-usage-based"})

// geminiAPI is Google's Gemini API (also Vertex AI and Code Assist
// responses). It sends no rate-limit headers, so only rejections are
// observed, and it keeps its quotas per project and model: a resource
// scoped to a model ("requests-per-day:gemini-2.5-pro") holds back only
// requests to that model, any other resource every request. `--quota`
// must name one: there is no plain `--quota gemini`.
var geminiAPI = &Provider{
	Name:  gemini.Provider,
	Label: "Gemini",
	API: &API{
		Hosts:          []string{"generativelanguage.googleapis.com"},
		BaseURLEnv:     "GOOGLE_GEMINI_BASE_URL",
		DefaultBaseURL: "https://generativelanguage.googleapis.com",
		KeyEnv:         []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"},
		Classify:       gemini.ClassifyHTTP,
		Observations:   gemini.Observations,
		Principal:      gemini.Principal,
		Applies:        geminiApplies,
	},
	Resources:       geminiResources,
	ModelScoped:     true,
	DefaultResource: "requests",
}

// geminiResources are the units Gemini counts, alone or per window, as
// provider/gemini names a quotaId ("requests-per-day"), and its prepaid
// credit.
var geminiResources = func() []string {
	var out []string
	for _, unit := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		out = append(out, unit)
		for _, window := range []string{"second", "minute", "hour", "day"} {
			out = append(out, unit+"-per-"+window)
		}
	}
	return append(out, gemini.ResourceBilling)
}()

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
