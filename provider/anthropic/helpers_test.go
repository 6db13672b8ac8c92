package anthropic

import (
	"testing"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/providertest"
	"github.com/layoverhq/layover/quota"
)

// The shared test clock and builders (see providertest).
var (
	now      = providertest.Now
	httpDate = providertest.HTTPDate
	rfc      = providertest.RFC3339
	epoch    = providertest.Epoch
	response = providertest.Response
)

const unknown = quota.Unknown

// errBody is Anthropic's error body.
func errBody(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":` + providertest.JSONQuote(msg) + `},"request_id":"req_011CXx3wfgjahuFJxKWYVv48"}`
}

// want is the expected outcome.
type want = providertest.Want

// check compares got with w; every observation must be a well-formed
// header or rejected state observed now.
func check(t *testing.T, got provider.Outcome, w want) {
	t.Helper()
	providertest.Check(t, got, Provider, w)
	providertest.CheckObservations(t, got)
}
