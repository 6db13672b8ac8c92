package notify_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/notify"
)

// No target string panics ParseTarget. An error never quotes the part of
// the target after its host (where a webhook keeps its secret), and a
// target that parses is http(s) with a host, named without its path, query
// or user info.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"https://hooks.example.com/T0/B0/secret", "slack:https://hooks.slack.com/services/x", "http://127.0.0.1:9/x?token=s",
		"ftp://h/secret", "slack:", "https://u:p@h/", "http://[::1]:80/", "http://%zz/secret", "https:opaque", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Run(t, func() {
			if len(s) > 2*notify.MaxTargetLength {
				return
			}
			tg, err := notify.ParseTarget(s)
			raw := strings.TrimPrefix(s, "slack:")
			secret := raw // a target that is no URL is not shown at all
			if u, perr := url.Parse(raw); perr == nil {
				// What follows the host, written after it, so that a name
				// shown as scheme://host never matches by chance.
				secret = ""
				if rest := u.EscapedPath() + u.RawQuery; rest != "" {
					secret = u.Host + u.EscapedPath()
					if u.RawQuery != "" {
						secret += "?" + u.RawQuery
					}
				}
				if u.User != nil {
					secret = u.User.String() + "@"
				}
			}
			if err != nil {
				if len(secret) >= 8 && strings.Contains(err.Error(), secret) {
					t.Fatalf("the error %q quotes %q of the target", err, secret)
				}
				return
			}
			u, perr := url.Parse(tg.URL())
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("%q parsed to %q", s, tg.URL())
			}
			shown := tg.String()
			if strings.ContainsAny(strings.TrimPrefix(shown, "slack:")[len(u.Scheme)+3:], "/?#@") {
				t.Fatalf("%q is shown as %q, past its host", s, shown)
			}
			if (tg.Form == notify.FormSlack) != strings.HasPrefix(s, "slack:") {
				t.Fatalf("%q: form %v", s, tg.Form)
			}
		})
	})
}
