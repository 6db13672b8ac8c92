package cli

import (
	"context"

	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/redact"
)

// knownSecrets is every secret value this command knows (docs/secrets.md):
// the values of redact.SecretVars in its environment, the password of its
// store (storeFlag, else LAYOVER_STORE), and more: the token it resolved,
// the values of a job's --env variables.
func knownSecrets(env *Env, storeFlag string, more ...string) []string {
	return redact.KnownSecrets(env.Getenv, append(more, redact.URLPassword(storeFlag))...)
}

// envValues returns the values of the named variables in env.
func envValues(env *Env, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, env.Getenv(n))
	}
	return out
}

// githubToken is the token layover would use against GITHUB_API_URL
// (GH_TOKEN, GITHUB_TOKEN, else `gh auth token`), for refusing it where a
// command would store it; "" when there is none or it cannot be found.
func githubToken(ctx context.Context, env *Env) string {
	_, host, err := github.APIBase(env.Getenv)
	if err != nil {
		return ""
	}
	token, _, _ := github.ResolveToken(ctx, env.Getenv, func(ctx context.Context) (string, error) {
		return github.GHAuthToken(ctx, host)
	})
	return token
}
