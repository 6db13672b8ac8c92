package github

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider"
)

// APIBase returns the REST API root that GITHUB_API_URL names (as GitHub
// Actions sets it), else DefaultBaseURL, and the API host that keys its
// quotas, by the rules of provider.APIBase.
func APIBase(getenv func(string) string) (baseURL, host string, err error) {
	return provider.APIBase(getenv, "GITHUB_API_URL", DefaultBaseURL)
}

// WebHost returns the host gh knows an API host by: github.com for
// api.github.com, <name>.ghe.com for api.<name>.ghe.com (GHE.com), and the
// host itself for GitHub Enterprise Server, whose API is on its web host.
func WebHost(apiHost string) string {
	h := strings.ToLower(strings.TrimSpace(apiHost))
	switch {
	case h == "api.github.com":
		return "github.com"
	case strings.HasPrefix(h, "api.") && strings.HasSuffix(h, ".ghe.com"):
		return strings.TrimPrefix(h, "api.")
	}
	return h
}

// TokenSource says where ResolveToken found a token.
type TokenSource string

const (
	TokenFromGHToken     TokenSource = "GH_TOKEN"
	TokenFromGitHubToken TokenSource = "GITHUB_TOKEN"
	TokenFromGH          TokenSource = "gh auth token"
	// TokenNone: no token anywhere; calls are unauthenticated.
	TokenNone TokenSource = "none"
)

// ResolveToken finds the token gh would use: GH_TOKEN, then GITHUB_TOKEN,
// then ghAuthToken (normally a closure over [GHAuthToken]; nil skips it),
// each trimmed of white space; empty values are skipped. Finding no token is
// not an error: the source is TokenNone. An error is returned only when
// ghAuthToken itself failed unexpectedly (e.g. timed out); the source is
// then TokenNone and a caller may go on unauthenticated.
func ResolveToken(ctx context.Context, getenv func(string) string, ghAuthToken func(ctx context.Context) (string, error)) (token string, source TokenSource, err error) {
	if t := strings.TrimSpace(getenv("GH_TOKEN")); t != "" {
		return t, TokenFromGHToken, nil
	}
	if t := strings.TrimSpace(getenv("GITHUB_TOKEN")); t != "" {
		return t, TokenFromGitHubToken, nil
	}
	if ghAuthToken == nil {
		return "", TokenNone, nil
	}
	t, err := ghAuthToken(ctx)
	if err != nil {
		return "", TokenNone, fmt.Errorf("gh auth token: %w", err)
	}
	if t = strings.TrimSpace(t); t != "" {
		return t, TokenFromGH, nil
	}
	return "", TokenNone, nil
}

// GHAuthTokenTimeout bounds one `gh auth token` run.
const GHAuthTokenTimeout = 5 * time.Second

// maxTokenOutput caps how much of gh's stdout is kept.
const maxTokenOutput = 16 << 10

// GHAuthToken runs `gh auth token --hostname <web host>` for the API host
// apiHost (see [WebHost]) with a GHAuthTokenTimeout timeout and returns the
// token it prints, trimmed. gh not installed, or gh exiting non-zero (not
// logged in to that host), gives "" and no error. The token is never
// logged and never part of an error.
func GHAuthToken(ctx context.Context, apiHost string) (string, error) {
	return ghAuthToken(ctx, "gh", apiHost)
}

func ghAuthToken(ctx context.Context, gh, apiHost string) (string, error) {
	web := WebHost(apiHost)
	if web == "" {
		return "", errors.New("no host to ask gh for")
	}
	path, err := exec.LookPath(gh)
	if err != nil {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, GHAuthTokenTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "auth", "token", "--hostname", web)
	var out cappedBuffer
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("gh auth token --hostname %s: %w", web, ctx.Err())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("gh auth token --hostname %s: %w", web, err)
	}
	if out.over {
		return "", fmt.Errorf("gh auth token --hostname %s: output is over %d bytes", web, maxTokenOutput)
	}
	tok := strings.TrimSpace(string(out.buf))
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("gh auth token --hostname %s: output is not one token", web)
	}
	return tok, nil
}

// cappedBuffer keeps the first maxTokenOutput bytes written to it.
type cappedBuffer struct {
	buf  []byte
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := maxTokenOutput - len(b.buf)
	if len(p) > room {
		b.over = true
		b.buf = append(b.buf, p[:max(room, 0)]...)
	} else {
		b.buf = append(b.buf, p...)
	}
	return len(p), nil
}
