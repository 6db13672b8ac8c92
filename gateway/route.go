package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Route names, the first path segment of a request (docs/gateway.md).
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	Gemini    = "gemini"
)

// Routes lists the route names in a fixed order.
func Routes() []string { return []string{Anthropic, OpenAI, Gemini} }

// DefaultUpstreams returns each route's upstream: the API's origin, with no
// path, so that the path after the route's prefix is the API's own path
// (/v1/messages, /v1/chat/completions, /v1beta/models/…). A new map on every
// call.
func DefaultUpstreams() map[string]string {
	return map[string]string{
		Anthropic: "https://api.anthropic.com",
		OpenAI:    "https://api.openai.com",
		Gemini:    "https://generativelanguage.googleapis.com",
	}
}

// knownRoute reports whether name is a route.
func knownRoute(name string) bool {
	return name == Anthropic || name == OpenAI || name == Gemini
}

// splitRoute splits a request's escaped path into its route name and the
// rest of the path: "/openai/v1/models" is ("openai", "/v1/models"),
// "/gemini" is ("gemini", ""). ok is false when the first segment is not a
// route, or the path does not start with "/".
func splitRoute(escapedPath string) (name, rest string, ok bool) {
	p, found := strings.CutPrefix(escapedPath, "/")
	if !found {
		return "", "", false
	}
	name, rest = p, ""
	if i := strings.IndexByte(p, '/'); i >= 0 {
		name, rest = p[:i], p[i:]
	}
	if !knownRoute(name) {
		return "", "", false
	}
	return name, rest, true
}

// ParseUpstream checks an upstream URL: http or https, with a host, and
// without credentials, a query or a fragment (a path prefix is allowed).
// The error never quotes the URL, which might hold a secret.
func ParseUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("want an http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("no host")
	case u.User != nil:
		return nil, fmt.Errorf("credentials in an upstream URL are not allowed")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("an upstream URL has no query or fragment")
	case u.Opaque != "":
		return nil, fmt.Errorf("not a URL")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return u, nil
}

// errDotSegment refuses a path with a "." or ".." segment.
var errDotSegment = errors.New(`a path segment is "." or ".."`)

// dotSegment reports whether the escaped path rest, decoded, has a "." or
// ".." segment: whole, or after an escaped slash (%2F) is decoded, since
// an upstream or a proxy before it may decode either way.
func dotSegment(rest string) bool {
	for seg := range strings.SplitSeq(rest, "/") {
		d, err := url.PathUnescape(seg)
		if err != nil {
			return false // target refuses it
		}
		for part := range strings.SplitSeq(d, "/") {
			if part == "." || part == ".." {
				return true
			}
		}
	}
	return false
}

// target is the URL a request goes to: base's scheme and host, base's path
// followed by rest (an escaped path), and query.
func target(base *url.URL, rest, query string) (*url.URL, error) {
	if dotSegment(rest) {
		return nil, errDotSegment
	}
	u := *base
	escaped := base.EscapedPath() + rest
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, err
	}
	u.Path = p
	u.RawPath = ""
	if escaped != (&url.URL{Path: p}).EscapedPath() {
		u.RawPath = escaped // keep the client's own escaping
	}
	u.RawQuery = query
	return &u, nil
}

// PriorityHeader is the request header that marks a request low priority
// (value "low", any case); the gateway removes it, as every X-Layover-*
// request header, before forwarding.
const PriorityHeader = "X-Layover-Priority"

// lowPriority reports whether h marks its request low priority: some
// PriorityHeader value, trimmed, is "low" in any case. Other values mean
// normal priority.
func lowPriority(h http.Header) bool {
	for _, v := range h.Values(PriorityHeader) {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), "low") {
				return true
			}
		}
	}
	return false
}
