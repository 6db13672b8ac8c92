package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/provider/resetparse"
)

// DefaultBackoff waits 1 s, 2 s, 4 s, … at most 30 s.
var DefaultBackoff = clock.Exponential(time.Second, 30*time.Second)

// Replayable reports whether req's body can be sent again: it has none, or
// GetBody can make a fresh copy. A request whose body cannot be read again
// is never retried.
func Replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// Idempotent reports whether req may be sent again after a transient
// failure (docs/design.md, Safety rules): its method is GET, HEAD or OPTIONS, or
// it carries an Idempotency-Key header.
func Idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return req.Header.Get("Idempotency-Key") != ""
}

// transientErr reports whether an error of the next RoundTripper is a
// transient failure (a connection error, a timeout of the server) rather
// than the caller's cancellation or a failure that would repeat (a bad
// certificate, an unsupported scheme).
func transientErr(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
	)
	if errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) {
		return false
	}
	return !strings.Contains(err.Error(), "unsupported protocol scheme")
}

// retryAfter returns the wait a response's Retry-After states, read by the
// one rule every classifier reads it by (resetparse.RetryAfter): seconds,
// whole or decimal, or an HTTP-date measured from the response's Date (else
// from now), never negative; false when absent, unusable, or over
// resetparse.MaxDelay in either form.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	date, _ := resetparse.HTTPDate(h.Get("Date"))
	return resetparse.RetryAfter(h.Get("Retry-After"), date, now)
}

// discard drains (a bounded amount of) a response body that will not be
// returned, and closes it, so its connection can be reused.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	_ = resp.Body.Close()
}

// readBack reads up to n bytes of resp's body for classification and puts
// them back in front of the rest, so the caller reads the body whole.
func readBack(resp *http.Response, n int64) []byte {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, n))
	resp.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(body), errReader(err, resp.Body)), closer: resp.Body}
	return body
}

// errReader returns a reader that fails with err, or r when err is nil.
func errReader(err error, r io.Reader) io.Reader {
	if err != nil {
		return &failing{err}
	}
	return r
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

// replayBody is a response body whose first bytes were read for
// classification.
type replayBody struct {
	io.Reader
	closer io.Closer
}

func (b *replayBody) Close() error { return b.closer.Close() }
