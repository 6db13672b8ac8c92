package gemini

import (
	"strconv"
	"strings"
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

// gErr is a google.rpc.Status error body.
func gErr(code int, status, msg string, details ...string) string {
	return `{"error":{"code":` + strconv.Itoa(code) + `,"message":` + providertest.JSONQuote(msg) + `,"status":"` + status + `","details":[` + strings.Join(details, ",") + `]}}`
}

func retryInfo(d string) string {
	return `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + d + `"}`
}

// violation is one QuotaFailure violation object.
func violationJSON(metric, id, model, value string) string {
	return `{"quotaMetric":"` + metric + `","quotaId":"` + id + `","quotaDimensions":{"location":"global","model":"` + model + `"},"quotaValue":"` + value + `"}`
}

func quotaFailure(violations ...string) string {
	return `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[` + strings.Join(violations, ",") + `]}`
}

func errorInfo(reason string, metadata string) string {
	if metadata == "" {
		metadata = "{}"
	}
	return `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"googleapis.com","metadata":` + metadata + `}`
}

const help = `{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}`

// want is the expected outcome.
type want = providertest.Want

// check compares got with w; every observation must be the rejected state
// of the outcome's own resource, reset and limit.
func check(t *testing.T, got provider.Outcome, w want) {
	t.Helper()
	providertest.Check(t, got, Provider, w)
	for _, o := range got.Observations {
		if !o.ObservedAt.Equal(now) || !o.ResetKnown || o.Resource != got.Resource || o.Remaining != 0 ||
			o.Cause != quota.CauseExhausted || o.Source != quota.SourceRejected || !o.ResetAt.Equal(got.ResetAt) || o.Limit != got.Limit {
			t.Errorf("bad observation %+v", o)
		}
	}
}
