package command

import (
	"fmt"
	"slices"
	"strings"

	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/registry"
)

// QuotaName is one quota a command draws on, as --quota names it:
// PROVIDER or PROVIDER:RESOURCE, PROVIDER a provider of provider/registry
// ("github", "anthropic", "claude-code", …).
type QuotaName struct {
	Provider string
	// Resource is one of the provider's resources (registry's
	// CheckResource); "" means the resources plain PROVIDER means
	// (registry's Defaults: GitHub's core and graphql, every resource of
	// the others).
	Resource string
}

// String returns the name as ParseQuotaName reads it back.
func (n QuotaName) String() string {
	if n.Resource == "" {
		return n.Provider
	}
	return n.Provider + ":" + n.Resource
}

// ParseQuotaName reads PROVIDER[:RESOURCE], surrounding space trimmed. An
// unknown provider or resource, or a plain PROVIDER that has no default
// resources, is an error of one line that lists the known ones.
func ParseQuotaName(s string) (QuotaName, error) {
	name, res, hasRes := strings.Cut(strings.TrimSpace(s), ":")
	p, ok := registry.Lookup(name)
	switch {
	case !ok:
		return QuotaName{}, fmt.Errorf("unknown quota provider %q (known: %s)", name, strings.Join(registry.Names(), ", "))
	case hasRes:
		if err := p.CheckResource(res); err != nil {
			return QuotaName{}, fmt.Errorf("quota %q: %w", s, err)
		}
	case p.Defaults == nil:
		return QuotaName{}, fmt.Errorf("quota %q: %s keeps its quotas per model: name one, as %s:RESOURCE[:MODEL] (resources: %s)",
			s, p.Label, p.Name, strings.Join(p.Resources, ", "))
	}
	return QuotaName{Provider: name, Resource: res}, nil
}

// QuotaNames is a list of quota names. As a flag.Value it is the repeatable
// --quota flag: each Set adds one name, String joins them with commas.
type QuotaNames []QuotaName

// String returns the names joined with commas.
func (q *QuotaNames) String() string {
	parts := make([]string, len(*q))
	for i, n := range *q {
		parts[i] = n.String()
	}
	return strings.Join(parts, ",")
}

// Set adds the name v (ParseQuotaName); on an error q is left as it was.
func (q *QuotaNames) Set(v string) error {
	n, err := ParseQuotaName(v)
	if err != nil {
		return err
	}
	*q = append(*q, n)
	return nil
}

// Resources lists the resources the names charge on one provider, each
// once, in the order first named: a plain name is the provider's default
// resources (registry's Defaults). An empty list charges GitHub's
// defaults, core and graphql, as `layover pass` without --quota does.
func (q QuotaNames) Resources(provider string) []string {
	if len(q) == 0 {
		q = QuotaNames{{Provider: github.Provider}}
	}
	var out []string
	add := func(r string) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, n := range q {
		if n.Provider != provider {
			continue
		}
		if n.Resource != "" {
			add(n.Resource)
			continue
		}
		if p, ok := registry.Lookup(provider); ok {
			for _, r := range p.Defaults {
				add(r)
			}
		}
	}
	return out
}

// Providers lists the providers the names draw on, each once, in the order
// first named; GitHub for an empty list.
func (q QuotaNames) Providers() []string {
	if len(q) == 0 {
		return []string{github.Provider}
	}
	var out []string
	for _, n := range q {
		if !slices.Contains(out, n.Provider) {
			out = append(out, n.Provider)
		}
	}
	return out
}
