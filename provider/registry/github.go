package registry

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// gitHub is GitHub's REST and GraphQL APIs and gh (docs/provider-signals.md
// §1). Its quotas are per user (or app installation) and resource, read for
// free from GET /rate_limit; plain `--quota github` is core and graphql.
var gitHub = &Provider{
	Name:  github.Provider,
	Label: "GitHub",
	API: &API{
		Hosts:          []string{"api.github.com"},
		HostSuffixes:   []string{".ghe.com"},
		BaseURLEnv:     "GITHUB_API_URL",
		DefaultBaseURL: github.DefaultBaseURL,
		Classify:       github.ClassifyHTTP,
		Observations:   github.Observations,
		Resource:       gitHubResource,
		Applies: func(req *http.Request, resource string) bool {
			return resource == gitHubResource(req)
		},
		RejectsIn2xx: func(req *http.Request, resp *http.Response) bool {
			return gitHubResource(req) == "graphql" && isJSON(resp.Header)
		},
		Fresh: func(ctx context.Context, e Endpoint) ([]quota.State, error) {
			c := &github.Client{BaseURL: e.BaseURL, Token: e.Token, HTTP: e.HTTP, UserAgent: "layover", Now: e.Now}
			return c.RateLimit(ctx)
		},
	},
	CLI: func(exitCode int, stdout, stderr []byte, now time.Time, _ *time.Location) provider.Outcome {
		return github.ClassifyCLI(exitCode, stdout, stderr, now)
	},
	// The resources GET /rate_limit lists (docs/provider-signals.md §1).
	Resources: []string{"core", "graphql", "search", "code_search", "integration_manifest", "source_import",
		"code_scanning_upload", "code_scanning_autofix", "actions_runner_registration", "scim",
		"dependency_snapshots", "dependency_sbom", "audit_log"},
	Defaults:        []string{"core", "graphql"},
	DefaultResource: "core",
	ReserveReason: func(resource string) receipt.Reason {
		if resource == "graphql" {
			return receipt.GraphQLReserve
		}
		return receipt.RESTReserve
	},
}

// gitHubResource names the GitHub resource req is charged to, from its
// path as GitHub does: "graphql" for POST …/graphql, "code_search" for
// …/search/code, "search" for other …/search/ paths, else "core"; "" for
// GET …/rate_limit, which is free.
func gitHubResource(req *http.Request) string {
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

// isJSON reports whether h declares a JSON body (application/json, or a
// +json media type such as GitHub's application/vnd.github+json).
func isJSON(h http.Header) bool {
	mt, _, _ := strings.Cut(strings.ToLower(h.Get("Content-Type")), ";")
	mt = strings.TrimSpace(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}
