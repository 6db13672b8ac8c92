package command_test

import (
	"context"
	"errors"
	"testing"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
)

// The principal rule (docs/design.md, Glossary): --principal, then
// LAYOVER_PRINCIPAL, then the login the store learned for the token's
// fingerprint, else "tok:" and the fingerprint. The token itself is never
// the principal.
func TestResolveGitHubPrincipal(t *testing.T) {
	t.Parallel()
	const token = "principal-token-0123456789"
	fp := quota.TokenFingerprint(token)
	for name, c := range map[string]struct {
		flag, env, learned string
		want               string
		wantLearned        bool
	}{
		"flag":          {flag: "from-flag", env: "from-env", learned: "login", want: "from-flag", wantLearned: true},
		"environment":   {env: "from-env", learned: "login", want: "from-env", wantLearned: true},
		"learned login": {learned: "login", want: "login", wantLearned: true},
		"fingerprint":   {want: quota.TokenPrincipal(token)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			vars := map[string]string{"GITHUB_API_URL": "https://GHE.example:8443/api/v3", "GH_TOKEN": token, "LAYOVER_PRINCIPAL": c.env}
			if c.learned != "" {
				if err := st.LearnLogin(context.Background(), "ghe.example:8443", fp, c.learned, start); err != nil {
					t.Fatal(err)
				}
			}
			g, err := command.ResolveGitHub(context.Background(), &command.GitHubConfig{Store: st, Principal: c.flag,
				Getenv: func(k string) string { return vars[k] }})
			if err != nil {
				t.Fatal(err)
			}
			if g.Principal != c.want || g.Learned != c.wantLearned || g.Token() != token {
				t.Fatalf("principal %q (learned %v), token %q; want %q (learned %v)", g.Principal, g.Learned, g.Token(), c.want, c.wantLearned)
			}
			want := quota.Key{Host: "ghe.example:8443", Principal: c.want, Resource: "graphql"}
			if k := g.Keys([]string{"core", "graphql"}); len(k) != 2 || k[1] != want {
				t.Errorf("keys %v; want %v second: the quota host lowercase, with its port", k, want)
			}
		})
	}
}

// A GITHUB_API_URL that is no API root is an input error, before any store
// access or token lookup.
func TestResolveGitHubRefusesABadAPIURL(t *testing.T) {
	t.Parallel()
	_, err := command.ResolveGitHub(context.Background(), &command.GitHubConfig{Store: openStore(t),
		Getenv: func(k string) string { return map[string]string{"GITHUB_API_URL": "ftp://ghe.example/"}[k] }})
	var ie *command.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("err %v, want an InputError", err)
	}
}
