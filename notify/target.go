package notify

import (
	"fmt"
	"net/url"
	"strings"
)

// Form is the body a target receives.
type Form int

const (
	// FormJSON is layover's own JSON body (Body).
	FormJSON Form = iota
	// FormSlack is Slack's incoming-webhook body, {"text": "..."}.
	FormSlack
)

// slackPrefix marks a target that takes Slack's form.
const slackPrefix = "slack:"

// MaxTargetLength bounds, in bytes, a target as given on the command line.
const MaxTargetLength = 4096

// Target is one receiver of notifications: a URL and the form it takes.
type Target struct {
	Form Form
	url  *url.URL
}

// ParseTarget reads a target: "URL" for the JSON body, "slack:URL" for
// Slack's form. The URL must be absolute http or https with a host. Its
// errors name the target by scheme and host at most (Target.String), never
// by its path, query or user info, where a webhook's secret lives.
func ParseTarget(s string) (Target, error) {
	t := Target{Form: FormJSON}
	raw := s
	if strings.HasPrefix(s, slackPrefix) {
		t.Form, raw = FormSlack, s[len(slackPrefix):]
	}
	if len(s) > MaxTargetLength {
		return Target{}, fmt.Errorf("longer than %d bytes", MaxTargetLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the whole URL: it is not passed on.
		return Target{}, fmt.Errorf("not a URL (want URL or slack:URL, http or https)")
	}
	shown := Target{Form: t.Form, url: u}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return Target{}, fmt.Errorf("%s: want an http or https URL (URL or slack:URL)", shown)
	case u.Host == "" || u.Opaque != "":
		return Target{}, fmt.Errorf("%s: the URL names no host", shown)
	}
	t.url = u
	return t, nil
}

// String names the target without its secret: "https://hooks.example.com"
// for a URL target, "slack:https://hooks.slack.com" for a Slack one. A
// scheme or host that is not one safe line is left out.
func (t Target) String() string {
	prefix := ""
	if t.Form == FormSlack {
		prefix = slackPrefix
	}
	if t.url == nil {
		return prefix + "(no URL)"
	}
	scheme, host := t.url.Scheme, t.url.Host
	if !plain(scheme) {
		scheme = "(scheme not shown)"
	}
	if !plain(host) {
		host = "(host not shown)"
	}
	return prefix + scheme + "://" + host
}

// URL is the full URL the target is POSTed to. It holds the target's
// secret: it is for the request only, never for a log or an error.
func (t Target) URL() string {
	if t.url == nil {
		return ""
	}
	return t.url.String()
}

// plain reports whether s is made only of the characters a scheme, a DNS
// name, an IP address or a port are written with.
func plain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '+', r == ':', r == '[', r == ']':
		default:
			return false
		}
	}
	return true
}
