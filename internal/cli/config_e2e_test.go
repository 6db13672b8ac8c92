package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// A cron line stays short: `layover pass --config FILE -- CMD` takes its
// reserve from the file, a --reserve on the line wins over it, the default
// file needs no flag at all, LAYOVER_RESERVE wins over a file, and a bad
// value in the file is exit 2 with one line naming the file and the key.
// GraphQL has 120 left: the default reserve (500) skips, the file's 100
// lets the pass run, 200 skips.
func TestPassTakesReserveFromConfigFile(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "graphql", 120, nextSecond(30*time.Minute))
	write := func(path, text string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ran := func(name string) bool {
		_, err := os.Stat(filepath.Join(b.dir, name))
		return err == nil
	}
	pass := func(marker string, args ...string) {
		t.Helper()
		args = append(append([]string{"pass"}, args...), "--", "touch", filepath.Join(b.dir, marker))
		if r := b.layover(args...); r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Fatalf("layover %v: code %d stdout %q stderr %q; want a quiet exit 0", args, r.code, r.stdout, r.stderr)
		}
	}

	pass("default")
	if ran("default") {
		t.Fatal("ran with 120 left, below the default reserve of 500")
	}
	fleet := write(filepath.Join(b.dir, "fleet.toml"), "# the fleet's policy\nreserve = 100\nmax-total-wait = \"2h\"\n")
	pass("file", "--config", fleet)
	if !ran("file") {
		t.Fatal("pass --config fleet.toml did not run with 120 left above the file's reserve of 100")
	}
	pass("flag", "--config", fleet, "--reserve", "200")
	if ran("flag") {
		t.Fatal("ran with --reserve 200 on the line over the file's 100")
	}

	write(filepath.Join(b.dir, ".config", "layover", "config.yaml"), "pass:\n  reserve: 100\n")
	pass("home")
	if !ran("home") {
		t.Fatal("pass did not take the reserve of 100 from $HOME/.config/layover/config.yaml")
	}
	b.env["LAYOVER_RESERVE"] = "200"
	pass("env")
	if ran("env") {
		t.Fatal("ran with LAYOVER_RESERVE=200 over the default file's 100")
	}
	delete(b.env, "LAYOVER_RESERVE")

	bad := write(filepath.Join(b.dir, "bad.toml"), "reserve = 100\nmax-total-wait = \"forever\"\n")
	r := b.layover("pass", "--config", bad, "--", "touch", filepath.Join(b.dir, "bad"))
	want := "layover: " + bad + ":2: max-total-wait: invalid value \"forever\": want a duration from 0s to 168h\n"
	if r.code != 2 || r.stderr != want || ran("bad") {
		t.Errorf("bad value: code %d stderr %q; want 2 and %q, the command not run", r.code, r.stderr, want)
	}
	if strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("bad value: want one line, got %q", r.stderr)
	}
}
