package transport_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/transport"
)

// A plain net/http client in defer mode: the call that spends the last unit
// of the quota goes through, and the next one returns a
// *quota.DeferralError, without being sent, saying when to try again.
func Example_netHTTP() {
	clk := clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	gh := fake.NewGitHub(fake.GitHubConfig{Now: clk.Now})
	srv := httptest.NewServer(gh)
	defer srv.Close()
	gh.SetQuota("ghp_example", "core", 1, clk.Now().Add(30*time.Minute))

	pol := quota.DefaultPolicy()
	pol.Jitter = 0 // deterministic output; keep the default in real use
	tr, err := transport.New(nil, &transport.Options{
		Provider: transport.GitHub(), // by default, chosen by host (api.github.com, …)
		Policy:   &pol,
		Clock:    clk,
		Mode:     transport.ModeDefer,
	})
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	client := &http.Client{Transport: tr}

	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/repos/octo/hello", nil)
		req.Header.Set("Authorization", "Bearer ghp_example")
		resp, err := client.Do(req)
		var de *quota.DeferralError
		switch {
		case errors.As(err, &de):
			fmt.Printf("deferred: %s %s, resume at %s\n", de.Key.Resource, de.Cause, de.ResumeAt.Format("15:04:05"))
		case err != nil:
			fmt.Println("error:", err)
		default:
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Println(resp.Status, "remaining", resp.Header.Get("X-Ratelimit-Remaining"))
		}
	}
	fmt.Println("requests sent:", gh.Calls("/repos/octo/hello"))
	// Output:
	// 200 OK remaining 0
	// deferred: core exhausted, resume at 10:31:00
	// requests sent: 1
}
