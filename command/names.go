package command

import (
	"fmt"
	"strings"

	"github.com/layoverhq/layover/quota"
)

// QuotaName is one quota a command draws on, as --quota names it:
// PROVIDER or PROVIDER:RESOURCE. The only provider known is github.
type QuotaName struct {
	Provider string // "github"
	// Resource is a resource name (quota.ValidResource); "" means the
	// provider's default resources (GitHub: core and graphql).
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
// unknown provider, or a resource that is no resource name, is an error of
// one line.
func ParseQuotaName(s string) (QuotaName, error) {
	prov, res, hasRes := strings.Cut(strings.TrimSpace(s), ":")
	if prov != "github" {
		return QuotaName{}, fmt.Errorf("unknown quota provider %q (known: github)", prov)
	}
	if hasRes && !quota.ValidResource(res) {
		return QuotaName{}, fmt.Errorf("quota %q: resource must be a name like core, graphql or search", s)
	}
	return QuotaName{Provider: prov, Resource: res}, nil
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

// GitHubResources lists the GitHub resources the names charge, each once,
// in the order first named: plain "github" is core and graphql, and so is
// an empty list.
func (q QuotaNames) GitHubResources() []string {
	if len(q) == 0 {
		return []string{"core", "graphql"}
	}
	seen := map[string]bool{}
	var out []string
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, n := range q {
		if n.Resource == "" {
			add("core")
			add("graphql")
		} else {
			add(n.Resource)
		}
	}
	return out
}
