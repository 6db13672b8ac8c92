package cli

import (
	"context"
	"fmt"
	"strings"
)

// gatewayEnv is `layover gateway env`: the exports that point each SDK and
// agent CLI at a gateway (docs/gateway.md, Base URLs). A first version; the
// gateway's environment helper extends it.
func gatewayEnv(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("gateway env", "gateway env [--url URL]")
	url := fs.String("url", "http://"+defaultGatewayListen, "the gateway's base `URL`")
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	base := strings.TrimSuffix(*url, "/")
	for _, e := range [][2]string{
		{"ANTHROPIC_BASE_URL", base + "/anthropic"},
		{"OPENAI_BASE_URL", base + "/openai/v1"},
		{"GOOGLE_GEMINI_BASE_URL", base + "/gemini"},
	} {
		fmt.Fprintf(env.Stdout, "export %s=%s\n", e[0], shellQuote(e[1]))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
