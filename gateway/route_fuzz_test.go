package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// FuzzRoute fuzzes the parsing of a request's path and priority header:
// a route is found only for a path whose first segment names one, the
// rest is the path after it, the target URL keeps the upstream's host and
// prefix and never loses the rest; the priority header never panics.
func FuzzRoute(f *testing.F) {
	for _, p := range []string{"/anthropic/v1/messages", "/openai/v1/chat/completions", "/gemini/v1beta/models/gemini-2.5-pro:generateContent",
		"/gemini", "/", "", "anthropic/v1", "//anthropic", "/openai%2Fv1", "/openai/a%2Fb/../c", "/gemini/%zz", "/anthropicx"} {
		f.Add(p, "low")
	}
	f.Add("/openai/v1", " LOW , high")
	base, _ := ParseUpstream("https://proxy.example.com/prefix")
	f.Fuzz(func(t *testing.T, path, priority string) {
		fuzzbound.Run(t, func() {
			name, rest, ok := splitRoute(path)
			if !ok {
				if name != "" || rest != "" {
					t.Fatalf("splitRoute(%q) = %q, %q without ok", path, name, rest)
				}
			} else {
				if !knownRoute(name) || "/"+name+rest != path || (rest != "" && rest[0] != '/') {
					t.Fatalf("splitRoute(%q) = %q, %q", path, name, rest)
				}
				if u, err := target(base, rest, "q=1"); err == nil {
					if u.Host != "proxy.example.com" || !strings.HasPrefix(u.EscapedPath(), "/prefix") || u.RawQuery != "q=1" {
						t.Fatalf("target(%q) = %s", rest, u)
					}
					if _, err := url.Parse(u.String()); err != nil {
						t.Fatalf("target(%q) = %s, which does not parse: %v", rest, u, err)
					}
				}
			}
			_ = lowPriority(http.Header{PriorityHeader: {priority}})
		})
	})
}
