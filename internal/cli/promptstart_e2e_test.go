package cli_test

import (
	"testing"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// A job `layover submit` stores while serve idles starts without waiting
// for serve's heartbeat, here 59 minutes: the store wakes the host (SQLite's
// data_version, PostgreSQL's LISTEN). awaitJob gives up long before.
func TestServeStartsSubmittedJobPromptly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		postgres bool
	}{{"SQLite", false}, {"PostgreSQL", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			if c.postgres {
				b.env["LAYOVER_STORE"] = pgtest.Schema(t)
			}
			serve := b.start("serve", "--lease", "1h", "--heartbeat", "59m")
			serve.waitLine(t, "layover serve started")
			if r := b.layover("submit", "--id", "prompt", "--", "true"); r.code != 0 {
				t.Fatal(r.stderr)
			}
			b.awaitJob("prompt", "complete")
		})
	}
}
