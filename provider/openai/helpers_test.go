package openai

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
	response = providertest.Response
)

const unknown = quota.Unknown

// errBody is OpenAI's error body; an empty code is written as null.
func errBody(typ, code, msg string) string {
	c := "null"
	if code != "" {
		c = providertest.JSONQuote(code)
	}
	t := "null"
	if typ != "" {
		t = providertest.JSONQuote(typ)
	}
	return `{"error":{"message":` + providertest.JSONQuote(msg) + `,"type":` + t + `,"param":null,"code":` + c + `}}`
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
