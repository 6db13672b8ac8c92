package provider

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

func TestParseRawHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		in         string
		code       int
		status     string
		proto      string
		header     map[string][]string
		body       string
		errContain string
	}{
		{
			name:   "HTTP/1.1 CRLF",
			in:     "HTTP/1.1 403 Forbidden\r\nx-ratelimit-remaining: 0\r\nX-RateLimit-Reset: 1700000000\r\n\r\n{\"message\":\"API rate limit exceeded\"}",
			code:   403,
			status: "403 Forbidden",
			proto:  "HTTP/1.1",
			header: map[string][]string{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1700000000"}},
			body:   `{"message":"API rate limit exceeded"}`,
		},
		{
			name:   "HTTP/2 LF without reason text",
			in:     "HTTP/2 200 \ncontent-type: application/json\n\n{}\n",
			code:   200,
			status: "200 OK",
			proto:  "HTTP/2.0",
			header: map[string][]string{"Content-Type": {"application/json"}},
			body:   "{}\n",
		},
		{
			name:   "HTTP/2.0 as gh api -i prints it",
			in:     "HTTP/2.0 403 Forbidden\r\nX-Ratelimit-Remaining: 0\r\n\r\n{}",
			code:   403,
			status: "403 Forbidden",
			proto:  "HTTP/2.0",
			header: map[string][]string{"X-Ratelimit-Remaining": {"0"}},
			body:   "{}",
		},
		{
			name:   "HTTP/3",
			in:     "HTTP/3 429\r\nretry-after: 30\r\n\r\n",
			code:   429,
			status: "429 Too Many Requests",
			proto:  "HTTP/3.0",
			header: map[string][]string{"Retry-After": {"30"}},
			body:   "",
		},
		{
			name:   "HTTP/1.0",
			in:     "HTTP/1.0 502 Bad Gateway\n\nupstream down",
			code:   502,
			status: "502 Bad Gateway",
			proto:  "HTTP/1.0",
			body:   "upstream down",
		},
		{
			name:   "chunked body is taken verbatim",
			in:     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{\"a\":1,\"b\":2}",
			code:   200,
			status: "200 OK",
			proto:  "HTTP/1.1",
			header: map[string][]string{"Transfer-Encoding": {"chunked"}, "Content-Length": {"2"}},
			body:   `{"a":1,"b":2}`,
		},
		{
			name:   "body with blank lines and an HTTP line is kept whole",
			in:     "HTTP/1.1 200 OK\n\nline one\n\nHTTP/1.1 200 OK\r\nlast",
			code:   200,
			status: "200 OK",
			proto:  "HTTP/1.1",
			body:   "line one\n\nHTTP/1.1 200 OK\r\nlast",
		},
		{
			name:   "100 Continue is skipped",
			in:     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nLocation: /x\r\n\r\nok",
			code:   201,
			status: "201 Created",
			proto:  "HTTP/1.1",
			header: map[string][]string{"Location": {"/x"}},
			body:   "ok",
		},
		{
			name:   "two interim blocks",
			in:     "HTTP/1.1 100 Continue\n\nHTTP/1.1 103 Early Hints\nLink: </a>\n\nHTTP/2 404\n\nnf",
			code:   404,
			status: "404 Not Found",
			proto:  "HTTP/2.0",
			body:   "nf",
		},
		{
			name:   "proxy CONNECT block is skipped",
			in:     "HTTP/1.1 200 Connection established\r\nProxy-Agent: squid\r\n\r\nHTTP/2 403\r\nx-ratelimit-remaining: 0\r\n\r\n{}",
			code:   403,
			status: "403 Forbidden",
			proto:  "HTTP/2.0",
			header: map[string][]string{"X-Ratelimit-Remaining": {"0"}},
			body:   "{}",
		},
		{
			name:   "curl -iL redirect block is skipped",
			in:     "HTTP/1.1 301 Moved Permanently\r\nLocation: https://api.github.com/repositories/1\r\n\r\nHTTP/1.1 200 OK\r\n\r\n{}",
			code:   200,
			status: "200 OK",
			proto:  "HTTP/1.1",
			body:   "{}",
		},
		{
			name:   "connection established alone is the response",
			in:     "HTTP/1.1 200 Connection established\r\n\r\n",
			code:   200,
			status: "200 Connection established",
			proto:  "HTTP/1.1",
			body:   "",
		},
		{
			name:   "a lone 100 is returned",
			in:     "HTTP/1.1 100 Continue\r\n\r\n",
			code:   100,
			status: "100 Continue",
			proto:  "HTTP/1.1",
		},
		{
			name:   "no blank line: empty body",
			in:     "HTTP/1.1 404 Not Found\r\nX-Ratelimit-Remaining: 0",
			code:   404,
			status: "404 Not Found",
			proto:  "HTTP/1.1",
			header: map[string][]string{"X-Ratelimit-Remaining": {"0"}},
		},
		{
			name:   "leading blank lines and folded and repeated headers",
			in:     "\r\n\nHTTP/1.1 200 OK\r\nx-note: a\r\n  b\r\nvary: one\r\nVary: two\r\n\r\n",
			code:   200,
			status: "200 OK",
			proto:  "HTTP/1.1",
			header: map[string][]string{"X-Note": {"a b"}, "Vary": {"one", "two"}},
		},
		{name: "empty", in: "", errContain: "not an HTTP response: input is empty"},
		{name: "only blank lines", in: "\r\n\n  \n", errContain: "input is empty"},
		{name: "not HTTP", in: "hello world\n", errContain: `not an HTTP response: first line is "hello world"`},
		{name: "JSON only", in: `{"message":"x"}`, errContain: "not an HTTP response: first line is"},
		{name: "bad version", in: "HTTP/4 200 OK\r\n\r\n", errContain: "unsupported HTTP version"},
		{name: "bad code", in: "HTTP/1.1 abc OK\r\n\r\n", errContain: "status code is not a number"},
		{name: "code out of range", in: "HTTP/1.1 999 Odd\r\n\r\n", errContain: "100 to 599"},
		{name: "short code", in: "HTTP/1.1 20 OK\r\n\r\n", errContain: "three digits"},
		{name: "header without colon", in: "HTTP/1.1 200 OK\r\nbogus header\r\n\r\n", errContain: `malformed header line 1: no colon in "bogus header"`},
		{name: "bad header name", in: "HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n", errContain: "bad header name"},
		{name: "continuation first", in: "HTTP/1.1 200 OK\r\n folded\r\n\r\n", errContain: "continuation"},
		{name: "bad block after interim", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nno colon\r\n\r\n", errContain: "malformed header line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body, err := ParseRawHTTP([]byte(tt.in))
			if tt.errContain != "" {
				if err == nil {
					t.Fatalf("ParseRawHTTP: got no error, want one containing %q", tt.errContain)
				}
				if !strings.Contains(err.Error(), tt.errContain) {
					t.Fatalf("error %q does not contain %q", err, tt.errContain)
				}
				if strings.ContainsAny(err.Error(), "\r\n") {
					t.Fatalf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRawHTTP: %v", err)
			}
			if resp.StatusCode != tt.code || resp.Status != tt.status || resp.Proto != tt.proto {
				t.Errorf("got %d %q %q, want %d %q %q", resp.StatusCode, resp.Status, resp.Proto, tt.code, tt.status, tt.proto)
			}
			if string(body) != tt.body {
				t.Errorf("body = %q, want %q", body, tt.body)
			}
			for k, want := range tt.header {
				if got := resp.Header[k]; strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if tt.header == nil && len(resp.Header) != 0 {
				t.Errorf("header = %v, want none", resp.Header)
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("resp.Body = %q, %v; want the body", got, err)
			}
		})
	}
}

func TestParseRawHTTPLongFirstLine(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("é", 100) + "\nHTTP/1.1 200 OK\n\n"
	_, _, err := ParseRawHTTP([]byte(in))
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if len(msg) > 120 {
		t.Errorf("error is %d bytes, want it truncated: %q", len(msg), msg)
	}
	if !strings.HasSuffix(msg, "…") || strings.Contains(msg, `\x`) {
		t.Errorf("error %q should be cut on a rune boundary and end in …", msg)
	}
}

func FuzzParseRawHTTP(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\n\r\n{}",
		"HTTP/2 403\nx-ratelimit-remaining: 0\nx-ratelimit-reset: 1700000000\n\n{\"message\":\"API rate limit exceeded\"}",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 Connection established\r\n\r\nHTTP/2 429\r\nretry-after: 60\r\n\r\n",
		"HTTP/1.1 301 Moved\r\n\r\nHTTP/1.1 301 Moved\r\n\r\nHTTP/1.1 301 Moved\r\n\r\n",
		"HTTP/1.1 200 OK\r\nx: a\r\n b\r\n",
		"not http",
		"",
		"HTTP/",
		"HTTP/1.1 2000",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Run(t, func() {
			resp, body, err := ParseRawHTTP(data)
			if err != nil {
				if resp != nil || body != nil {
					t.Fatalf("error %v with a response", err)
				}
				if strings.ContainsAny(err.Error(), "\r\n") {
					t.Fatalf("error is not one line: %q", err)
				}
				return
			}
			if resp == nil || resp.Header == nil {
				t.Fatal("nil response or header without an error")
			}
			if resp.StatusCode < 100 || resp.StatusCode > 599 {
				t.Fatalf("status code %d out of range", resp.StatusCode)
			}
			if !bytes.HasSuffix(data, body) {
				t.Fatal("body is not a verbatim suffix of the input")
			}
			if resp.ProtoMajor < 1 || resp.ProtoMajor > 3 {
				t.Fatalf("proto %q", resp.Proto)
			}
			for k, vs := range resp.Header {
				if k != http.CanonicalHeaderKey(k) {
					t.Fatalf("header key %q not canonical", k)
				}
				for _, v := range vs {
					if strings.Contains(v, "\n") || v != strings.TrimSpace(v) {
						t.Fatalf("header %s value %q", k, v)
					}
				}
			}
			// The response printed again as curl would reads back the same.
			again := fmt.Appendf(nil, "%s %s\r\n", resp.Proto, resp.Status)
			for k, vs := range resp.Header {
				for _, v := range vs {
					again = fmt.Appendf(again, "%s: %s\r\n", k, v)
				}
			}
			again = append(append(again, "\r\n"...), body...)
			resp2, body2, err := ParseRawHTTP(again)
			if err != nil || resp2.Status != resp.Status || resp2.Proto != resp.Proto || !bytes.Equal(body2, body) || !reflect.DeepEqual(resp2.Header, resp.Header) {
				t.Fatalf("printed again as %q, it reads as %+v, %q, %v", again, resp2, body2, err)
			}
		})
	})
}

// continuations returns a response of about size bytes whose one header is
// folded over continuation lines, the shape that was quadratic (issue 8).
func continuations(size int) []byte {
	b := []byte("HTTP/1.1 403 Forbidden\r\nX-Note: a\r\n")
	for len(b) < size {
		b = append(b, " b\r\n"...)
	}
	return append(b, "\r\n{}"...)
}

// allocated returns the fewest bytes the heap grew by over three runs of
// f: the process-wide counter, so the least of three keeps out what a
// background goroutine may have allocated meanwhile.
func allocated(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestParseRawHTTPLinear checks that what parsing allocates grows in
// proportion to the input: four times the input, at most six times the
// bytes (a quadratic parse gives sixteen times; slices grown by appending
// give a little over four). Every byte copied is allocated
// first, so this bounds the copying without timing anything.
//
// Not parallel: it reads the process's allocation counter, and the
// package's parallel tests only start once the sequential ones are done.
func TestParseRawHTTPLinear(t *testing.T) {
	repeat := func(head, unit string) func(int) []byte {
		return func(size int) []byte {
			b := []byte(head)
			for len(b) < size {
				b = append(b, unit...)
			}
			return b
		}
	}
	shapes := []struct {
		name  string
		build func(size int) []byte
	}{
		{"continuation lines", continuations},
		{"empty continuation lines", repeat("HTTP/1.1 200 OK\r\nX: a\r\n", " \r\n")},
		{"one header repeated", repeat("HTTP/1.1 200 OK\r\n", "X-Note: value\r\n")},
		{"distinct headers", func(size int) []byte {
			b := []byte("HTTP/1.1 200 OK\r\n")
			for i := 0; len(b) < size; i++ {
				b = fmt.Appendf(b, "X-%d: v\r\n", i)
			}
			return b
		}},
		{"one long header line", repeat("HTTP/1.1 200 OK\r\nX: ", "abcdefgh")},
		{"interim blocks", repeat("", "HTTP/1.1 100 Continue\r\n\r\n")},
		{"redirect blocks", repeat("", "HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\n")},
		{"blank lines before", repeat("", " \r\n")},
		{"long status line", repeat("HTTP/1.1 200 ", "OK OK OK ")},
		{"long bad first line", repeat("", "not http ")},
	}
	const size = 32 << 10
	for _, s := range shapes {
		small, large := s.build(size), s.build(4*size)
		a1 := allocated(func() { _, _, _ = ParseRawHTTP(small) })
		a2 := allocated(func() { _, _, _ = ParseRawHTTP(large) })
		if float64(a2) > 6*float64(a1)+4096 {
			t.Errorf("%s: %d bytes of input allocate %d bytes, %d bytes allocate %d: more than linear", s.name, len(small), a1, len(large), a2)
		}
	}
}

// BenchmarkParseRawHTTPContinuations parses a response whose header is
// folded over continuation lines of 4 bytes, at the sizes issue 8 timed
// (12 s and over 40 s before the parse was linear).
func BenchmarkParseRawHTTPContinuations(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"640KB", 640 << 10}, {"1.2MB", 1200 << 10}} {
		data := continuations(c.size)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, _, err := ParseRawHTTP(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
