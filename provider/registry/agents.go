package registry

import (
	"slices"

	"github.com/layoverhq/layover/provider/agentcli"
)

// The agent CLIs (docs/provider-signals.md §5). Their own quotas (a
// subscription's windows) are keyed by host Name, the principal
// `--principal` or LAYOVER_PRINCIPAL names (else "local"), and the resource
// their output names, else "usage". A CLI that relays its API's errors
// names that API's resources too. They have no API of their own here and no
// free endpoint: their state is the ledger's. Plain `--quota NAME` is every
// resource the CLI names.

var claudeCode = agentCLI(agentcli.ProviderClaudeCode, "Claude Code", agentcli.ClassifyClaudeCode, union(
	[]string{agentcli.ResourceFiveHour, agentcli.ResourceSevenDay, agentcli.ResourceSevenDayOpus,
		agentcli.ResourceSevenDaySonnet, "overage", "seven_day_overage_included", agentcli.ResourceBilling},
	anthropicRelayed))

var codex = agentCLI(agentcli.ProviderCodex, "Codex", agentcli.ClassifyCodex, union(
	[]string{agentcli.ResourceBilling}, openAIRelayed))

var copilot = agentCLI(agentcli.ProviderCopilot, "Copilot CLI", agentcli.ClassifyCopilot,
	[]string{agentcli.ResourcePremiumRequests, agentcli.ResourceRequests, agentcli.ResourceTokens})

// kimi prints Kimi's OpenAI-compatible API errors, read by OpenAI's rules.
var kimi = agentCLI(agentcli.ProviderKimi, "Kimi", agentcli.ClassifyKimi, openAIRelayed)

// geminiCLI names a quota by its model ("Usage limit reached for
// gemini-2.5-pro") or as the Gemini API does; like Gemini's, `--quota`
// must name one.
var geminiCLI = func() *Provider {
	p := agentCLI(agentcli.ProviderGeminiCLI, "Gemini CLI", agentcli.ClassifyGeminiCLI, geminiResources)
	p.ModelScoped, p.Models, p.Defaults = true, true, nil
	return p
}()

// antigravity (agy) names no resource of its own: its quota is
// recorded under unnamed.
var antigravity = agentCLI(agentcli.ProviderAntigravity, "Antigravity CLI", agentcli.ClassifyAntigravity, nil)

// unnamed is the resource an agent CLI's limit is recorded under when its
// output names none.
const unnamed = "usage"

// agentCLI describes an agent CLI whose output names resources (and
// unnamed).
func agentCLI(name, label string, classify agentcli.Func, resources []string) *Provider {
	res := union([]string{unnamed}, resources)
	return &Provider{Name: name, Label: label, CLI: classify, Resources: res, Defaults: res, DefaultResource: unnamed}
}

// union returns the names of lists, each once, in the order first named.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}
