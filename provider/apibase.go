package provider

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// APIBase returns the API root that the environment variable name sets (as
// GITHUB_API_URL or ANTHROPIC_BASE_URL do), else defaultURL, with trailing
// slashes trimmed, and the host that keys its quotas: the lowercase
// hostname, with ":port" when the port is not the scheme's default. A value
// that is not an absolute http or https URL without credentials, query or
// fragment is an error naming the variable; the error never repeats the
// value, which might hold a secret.
func APIBase(getenv func(string) string, name, defaultURL string) (baseURL, host string, err error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		v = defaultURL
	}
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("%s is not a usable API URL (%s); want one like %s", name, why, defaultURL)
	}
	u, perr := url.Parse(v)
	if perr != nil {
		return bad("it does not parse as a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return bad("scheme must be http or https")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return bad("it has no host")
	case u.User != nil:
		return bad("it must not contain credentials")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(v, "#"):
		return bad("it must not have a query or fragment")
	}
	host = strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("bad port")
		}
		// The port as a number keys the quota: "080" is port 80, the
		// scheme's own for http, and "08080" is 8080.
		if !(scheme == "https" && n == 443) && !(scheme == "http" && n == 80) {
			host = net.JoinHostPort(host, strconv.Itoa(n))
		}
	}
	return strings.TrimRight(v, "/"), host, nil
}
