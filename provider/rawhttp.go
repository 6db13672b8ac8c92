package provider

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/layoverhq/layover/redact"
)

// ParseRawHTTP parses one HTTP response as `curl -i` prints it: a status
// line "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/2.0", "HTTP/3" or "HTTP/3.0",
// a status code and an optional reason text; header lines; a blank line; then
// the body. Lines may end in CRLF or LF. Folded header lines (starting with
// a space or tab) continue the previous header.
//
// The body is everything after the blank line, verbatim: curl prints a
// de-chunked, decoded body whatever Transfer-Encoding or Content-Length say,
// so neither is trusted. The returned body aliases data. Input that ends
// before the blank line has an empty body.
//
// Blocks that curl prints before the final response are skipped: interim 1xx
// responses, a proxy's "200 Connection established" to a CONNECT, and the
// redirects `curl -iL` followed (a 3xx block), each only when another
// "HTTP/" block follows it.
//
// The returned Response has Status, StatusCode, Proto, ProtoMajor,
// ProtoMinor, Header (canonical keys), ContentLength (len(body)) and a Body
// reading the body bytes. Errors are one line and say what is wrong; they
// quote at most a short, escaped prefix of the offending line.
func ParseRawHTTP(data []byte) (*http.Response, []byte, error) {
	rest := skipBlankLines(data)
	if len(rest) == 0 {
		return nil, nil, errors.New("not an HTTP response: input is empty")
	}
	for first := true; ; first = false {
		resp, body, err := parseResponseBlock(rest, first)
		if err != nil {
			return nil, nil, err
		}
		if precedesFinal(resp) {
			if next := skipBlankLines(body); looksLikeStatusLine(next) {
				rest = next
				continue
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		return resp, body, nil
	}
}

// precedesFinal reports whether curl may print another response after resp:
// an interim 1xx, a CONNECT's "200 Connection established", or a redirect.
func precedesFinal(resp *http.Response) bool {
	switch {
	case resp.StatusCode >= 100 && resp.StatusCode < 200:
		return true
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return true
	case resp.StatusCode == http.StatusOK:
		_, text, _ := strings.Cut(resp.Status, " ")
		return strings.EqualFold(strings.TrimSpace(text), "connection established")
	}
	return false
}

// parseResponseBlock parses a status line and headers from data and returns
// the rest after the blank line as body.
func parseResponseBlock(data []byte, first bool) (*http.Response, []byte, error) {
	line, rest := cutLine(data)
	resp, err := parseStatusLine(line)
	if err != nil {
		what := "status line"
		if first {
			what = "first line"
		}
		if !bytes.HasPrefix(line, []byte("HTTP/")) {
			return nil, nil, fmt.Errorf("not an HTTP response: %s is %s", what, quoteShort(line))
		}
		return nil, nil, fmt.Errorf("bad HTTP status line %s: %v", quoteShort(line), err)
	}
	h := http.Header{}
	// The header being read: its key and its value so far, to which
	// continuation lines are appended in place, so that a value folded
	// over many lines costs time linear in its length.
	var key string
	var value []byte
	flush := func() {
		if key != "" {
			h[key] = append(h[key], string(value))
		}
	}
	for n := 1; ; n++ {
		if len(rest) == 0 {
			// The input ended before the blank line: no body.
			flush()
			resp.Header = h
			return resp, rest, nil
		}
		line, next := cutLine(rest)
		rest = next
		if len(line) == 0 {
			flush()
			resp.Header = h
			return resp, rest, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			if key == "" {
				return nil, nil, fmt.Errorf("malformed header line %d: continuation %s before any header", n, quoteShort(line))
			}
			// Non-empty pieces joined by one space.
			if piece := bytes.TrimSpace(line); len(piece) > 0 {
				if len(value) > 0 {
					value = append(value, ' ')
				}
				value = append(value, piece...)
			}
			continue
		}
		name, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, nil, fmt.Errorf("malformed header line %d: no colon in %s", n, quoteShort(line))
		}
		if !validHeaderName(name) {
			return nil, nil, fmt.Errorf("malformed header line %d: bad header name %s", n, quoteShort(name))
		}
		flush()
		key = textproto.CanonicalMIMEHeaderKey(string(name))
		value = append(value[:0], bytes.TrimSpace(v)...)
	}
}

// parseStatusLine parses "HTTP/<version> <code>[ <text>]".
func parseStatusLine(line []byte) (*http.Response, error) {
	s := strings.TrimRight(string(line), " \t")
	rest, ok := strings.CutPrefix(s, "HTTP/")
	if !ok {
		return nil, errors.New("no HTTP/ prefix")
	}
	version, rest, _ := strings.Cut(rest, " ")
	var major, minor int
	switch version {
	case "1.0":
		major, minor = 1, 0
	case "1.1":
		major, minor = 1, 1
	case "2", "2.0":
		major = 2
	case "3", "3.0":
		major = 3
	default:
		return nil, fmt.Errorf("unsupported HTTP version %s", quoteShort([]byte(version)))
	}
	rest = strings.TrimLeft(rest, " ")
	codeText, text, _ := strings.Cut(rest, " ")
	if len(codeText) != 3 {
		return nil, errors.New("status code is not three digits")
	}
	code, err := strconv.Atoi(codeText)
	if err != nil || code < 100 || code > 599 || codeText[0] == '+' || codeText[0] == '-' {
		return nil, errors.New("status code is not a number from 100 to 599")
	}
	text = strings.TrimSpace(text)
	if text == "" {
		text = http.StatusText(code)
	}
	status := strings.TrimSpace(codeText + " " + text)
	return &http.Response{
		Status:     status,
		StatusCode: code,
		Proto:      fmt.Sprintf("HTTP/%d.%d", major, minor),
		ProtoMajor: major,
		ProtoMinor: minor,
	}, nil
}

// looksLikeStatusLine reports whether data starts with a valid status line.
func looksLikeStatusLine(data []byte) bool {
	if !bytes.HasPrefix(data, []byte("HTTP/")) {
		return false
	}
	line, _ := cutLine(data)
	_, err := parseStatusLine(line)
	return err == nil
}

// cutLine splits data after its first LF, dropping the line's CR LF or LF.
// Without an LF, the whole of data is the line and rest is empty.
func cutLine(data []byte) (line, rest []byte) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return bytes.TrimSuffix(data, []byte("\r")), data[len(data):]
	}
	return bytes.TrimSuffix(data[:i], []byte("\r")), data[i+1:]
}

// skipBlankLines drops leading empty (or whitespace-only) lines.
func skipBlankLines(data []byte) []byte {
	for len(data) > 0 {
		line, rest := cutLine(data)
		if len(bytes.TrimSpace(line)) != 0 {
			return data
		}
		data = rest
	}
	return data
}

// validHeaderName reports whether name is a non-empty RFC 9110 token.
func validHeaderName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// maxQuoted is how many bytes of an offending line an error quotes.
const maxQuoted = 60

// quoteShort quotes at most maxQuoted bytes of b, cut on a rune boundary, as
// a one-line Go string literal, with "…" after it when b was longer. A
// secret in b is masked (redact) before the cut, on the first
// maxQuoted+cleanLookahead bytes, so that no part of it is quoted.
func quoteShort(b []byte) string {
	window := b[:min(len(b), maxQuoted+cleanLookahead)]
	s := redact.String(string(window))
	if len(s) <= maxQuoted && len(window) == len(b) {
		return strconv.Quote(s)
	}
	cut := min(len(s), maxQuoted)
	for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
