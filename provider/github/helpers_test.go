package github

import (
	"strconv"
	"time"

	"github.com/layoverhq/layover/provider/internal/providertest"
)

// The shared test clock and builders (see providertest).
var (
	now      = providertest.Now
	epoch    = providertest.Epoch
	httpDate = providertest.HTTPDate
	response = providertest.Response
)

// limits returns the Date (= now) and x-ratelimit-* pairs of a response.
func limits(limit, remaining int, reset time.Time, resource string) []string {
	kv := []string{
		"Date", httpDate(now),
		"X-RateLimit-Limit", strconv.Itoa(limit),
		"X-RateLimit-Remaining", strconv.Itoa(remaining),
		"X-RateLimit-Used", strconv.Itoa(limit - remaining),
		"X-RateLimit-Reset", epoch(reset),
	}
	if resource != "" {
		kv = append(kv, "X-RateLimit-Resource", resource)
	}
	return kv
}
