package cli

import (
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// FuzzGatewayFlags fuzzes gateway's --max-body and --upstream values: a
// size is never negative, and an upstream error never quotes the URL.
func FuzzGatewayFlags(f *testing.F) {
	for _, v := range []string{"32MiB", "500KB", "1048576", "1k", "-1", "9999999999999999999GiB", "1.5MB", " 2 gib ", "", "MiB"} {
		f.Add(v)
	}
	for _, v := range []string{"anthropic=https://api.anthropic.com", "openai=http://u:secretpw@h/x", "gemini=ftp://x", "x=y", "=", "openai="} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		fuzzbound.Run(t, func() {
			if n, err := parseByteSize(v); err == nil && n < 0 {
				t.Fatalf("parseByteSize(%q) = %d", v, n)
			}
			_, err := parseUpstreams([]string{v})
			if err != nil {
				if _, raw, ok := strings.Cut(v, "="); ok && len(raw) > 8 && strings.Contains(err.Error(), raw) {
					t.Fatalf("the error %q quotes the URL %q", err, raw)
				}
			}
		})
	})
}
