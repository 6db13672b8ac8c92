package cli

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/layoverhq/layover/gateway"
)

// GatewayEnvOptions are the flags of layover gateway env.
type GatewayEnvOptions struct {
	// Listen is the gateway's --listen address; URL, when set, its base
	// URL instead (a gateway behind another name or port).
	Listen, URL string
	// Shell is sh (POSIX shells: bash, zsh, dash) or fish.
	Shell string
}

// gatewayEnv is `layover gateway env`: the exports that point each agent
// CLI and SDK at a gateway (gateway.Env; docs/gateway.md, Base URLs), one
// comment line naming the clients before each, for eval.
func gatewayEnv(_ context.Context, env *Env, args []string) error {
	var opts GatewayEnvOptions
	fs := newFlagSet("gateway env", "gateway env [--listen ADDR | --url URL] [--shell sh|fish]")
	fs.StringVar(&opts.Listen, "listen", defaultGatewayListen, "the gateway's --listen `ADDR`; an unspecified host (\":8089\", \"0.0.0.0:8089\") is reached on loopback")
	fs.StringVar(&opts.URL, "url", "", "the gateway's base `URL`, instead of --listen")
	fs.StringVar(&opts.Shell, "shell", "sh", "print for `SHELL`: sh (bash, zsh, any POSIX shell) or fish")
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	if opts.Shell != "sh" && opts.Shell != "fish" {
		return usageErr("gateway env: --shell is sh or fish, not %q", shown(opts.Shell))
	}
	base, err := gatewayBaseURL(opts.Listen, opts.URL)
	if err != nil {
		return usageErr("gateway env: %v", err)
	}
	for _, e := range gateway.Env(base) {
		fmt.Fprintf(env.Stdout, "# %s\n", e.For)
		if opts.Shell == "fish" {
			fmt.Fprintf(env.Stdout, "set -gx %s %s\n", e.Name, shellQuote(e.Value))
		} else {
			fmt.Fprintf(env.Stdout, "export %s=%s\n", e.Name, shellQuote(e.Value))
		}
	}
	return nil
}

// gatewayBaseURL is the base URL a client on this host reaches the gateway
// at: rawURL when given (http or https, a host, no query), else
// http://listen, an unspecified host read as loopback.
func gatewayBaseURL(listen, rawURL string) (string, error) {
	if rawURL != "" {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return "", fmt.Errorf("--url %q: want http://HOST:PORT or https://HOST[/PATH]", shown(rawURL))
		}
		return strings.TrimRight(u.String(), "/"), nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" || port == "0" || strings.ContainsAny(host, "/?#@ '\"\\") {
		return "", fmt.Errorf("--listen %q: want HOST:PORT with the port the gateway listens on", shown(listen))
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// shellQuote quotes s for a POSIX shell or fish when it needs it: single
// quotes, a quote inside written as '\” (sh) — fish reads that the same.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
