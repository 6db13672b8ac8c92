package server

import (
	"net"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// FuzzParseJobQuery: no query string panics; what parses is a known state
// (or none), a printable search no longer than a job id and a page from 1
// to maxPage; and it reads back the same from the links the page builds.
func FuzzParseJobQuery(f *testing.F) {
	for _, s := range []string{"", "state=deferred", "q=job-1&page=2", "page=0", "page=-1", "page=99999999999999999999",
		"state=%00", "q=%ff%fe", "page=1e3", "state=ready&state=deferred", "q=" + string(make([]byte, 200))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fuzzbound.Run(t, func() {
			if len(raw) > 4096 {
				return
			}
			v, err := url.ParseQuery(raw)
			if err != nil {
				return
			}
			q, err := parseJobQuery(v)
			if err != nil {
				return
			}
			if q.State != "" && !q.State.Valid() {
				t.Fatalf("state %q", q.State)
			}
			if len(q.Q) > maxQuery {
				t.Fatalf("q of %d bytes", len(q.Q))
			}
			for _, r := range q.Q {
				if !unicode.IsPrint(r) {
					t.Fatalf("q holds %q", r)
				}
			}
			if q.Page < 1 || q.Page > maxPage {
				t.Fatalf("page %d", q.Page)
			}
			back, err := parseJobQuery(q.values(q.Page))
			if err != nil || back != q {
				t.Fatalf("round trip: %+v -> %+v, %v (page %s)", q, back, err, strconv.Itoa(q.Page))
			}
		})
	})
}

// FuzzLoopbackHost: no Host header panics, and one that passes names this
// machine: its name without the port is localhost, 127.0.0.1 or ::1.
func FuzzLoopbackHost(f *testing.F) {
	for _, s := range []string{"localhost", "localhost:9464", "127.0.0.1:1", "[::1]", "[::1]:80", "::1", "evil.example",
		"[localhost]", "127.0.0.1.evil", "[::1", "localhost:9464:1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hostport string) {
		fuzzbound.Run(t, func() {
			if len(hostport) > 4096 || !loopbackHost(hostport) {
				return
			}
			name := strings.ToLower(hostport)
			if h, _, err := net.SplitHostPort(hostport); err == nil {
				name = strings.ToLower(h)
			}
			name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
			if name != "localhost" && name != "127.0.0.1" && name != "::1" {
				t.Errorf("loopbackHost(%q) = true, naming %q", hostport, name)
			}
		})
	})
}

// FuzzSameOrigin: no Origin, Host or Sec-Fetch-Site panics, and a login
// it lets through names no other site: never Sec-Fetch-Site cross-site or
// same-site, and an Origin other than "" or "null" has r's Host as host.
func FuzzSameOrigin(f *testing.F) {
	for _, s := range [][3]string{{"http://127.0.0.1:9464", "127.0.0.1:9464", "same-origin"}, {"null", "localhost", ""},
		{"https://evil.example", "localhost", ""}, {"", "localhost", "cross-site"}, {"http://[::1]:80", "[::1]:80", ""},
		{"http://user@localhost", "localhost", "none"}, {"%zz", "x", ""}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, origin, host, site string) {
		fuzzbound.Run(t, func() {
			if len(origin)+len(host)+len(site) > 4096 {
				return
			}
			r := httptest.NewRequest("POST", "/login", nil)
			r.Host = host
			if origin != "" {
				r.Header["Origin"] = []string{origin}
			}
			if site != "" {
				r.Header["Sec-Fetch-Site"] = []string{site}
			}
			if !sameOrigin(r) {
				return
			}
			if site == "cross-site" || site == "same-site" {
				t.Errorf("Sec-Fetch-Site %q let through", site)
			}
			if origin == "null" && site == "" {
				t.Error(`Origin "null" let through without Sec-Fetch-Site`)
			}
			if origin != "" && origin != "null" {
				if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, host) {
					t.Errorf("Origin %q let through for Host %q", origin, host)
				}
			}
		})
	})
}
