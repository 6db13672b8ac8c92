package transport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/transport"
)

// go-github through the Transport: the call GitHub rejects for its
// exhausted quota waits for the reset (plus the margin) and is sent again,
// so the caller sees only the answer.
func Example_goGitHub() {
	clk := clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	gh := fake.NewGitHub(fake.GitHubConfig{Now: clk.Now})
	srv := httptest.NewServer(gh)
	defer srv.Close()
	gh.SetQuota("ghp_example", "core", 0, clk.Now().Add(30*time.Minute))

	pol := quota.DefaultPolicy()
	pol.Jitter = 0 // deterministic output; keep the default in real use
	tr, err := transport.New(nil, &transport.Options{
		Provider: transport.GitHub(),
		Policy:   &pol,
		Clock:    clk,
		OnWait: func(ev transport.WaitEvent) {
			fmt.Printf("%s wait on %s: %s\n", ev.Kind, ev.Key.Resource, ev.Wait)
			clk.Set(ev.Until) // the fake clock jumps; a real one just waits
		},
	})
	if err != nil {
		panic(err)
	}
	defer tr.Close()

	client := github.NewClient(&http.Client{Transport: tr}).WithAuthToken("ghp_example")
	client.BaseURL, _ = url.Parse(srv.URL + "/")
	client.DisableRateLimitCheck = true // layover keeps the ledger

	user, _, err := client.Users.Get(context.Background(), "")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("login:", user.GetLogin())
	fmt.Println("requests sent:", gh.Calls("/user"))
	// Output:
	// quota wait on core: 31m0s
	// login: octocat
	// requests sent: 2
}
