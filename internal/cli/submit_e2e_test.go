package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// Issue 8 finding 8: submit --name is at most 200 bytes of printable text;
// anything else is a one-line error, exit 2, and nothing stored.
func TestSubmitNameBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	for name, value := range map[string]string{
		"201 bytes":   strings.Repeat("n", 201),
		"ANSI escape": "nightly \x1b[31mred",
		"newline":     "two\nlines",
		"not UTF-8":   "bad \xff",
	} {
		r := b.layover("submit", "--name", value, "--", "true")
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "name") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line naming the name", name, r.code, r.stderr)
		}
	}
	if r := b.layover("jobs", "--json"); !noJobs(r) {
		t.Fatalf("a refused name stored a job: %s", r.stdout)
	}
	long := strings.Repeat("é", 100) // 200 bytes
	if r := b.layover("submit", "--id", "named", "--name", long, "--", "true"); r.code != 0 {
		t.Fatalf("a 200-byte name: exit %d %s", r.code, r.stderr)
	}
	if r := b.layover("show", "named", "--json"); !strings.Contains(r.stdout, long) {
		t.Errorf("show --json lacks the name:\n%s", r.stdout)
	}
}

// Issue 8 finding 5: run --submit refuses a command holding a token before
// running it, as submit does, so jobs --json and show --json never print
// one; a 40-hex value is a token only when layover knows it (here: it is
// GH_TOKEN) or it stands after token, GH_TOKEN= and the like, and a commit
// SHA is kept as given.
func TestRunSubmitRefusesTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	const token, sha = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"
	b.env["GH_TOKEN"] = token
	b.gh.SetQuota(token, "core", 0, nextSecond(time.Hour))
	for name, cmd := range map[string][]string{
		"ghp_ header":   {"gh", "api", "-H", "Authorization: token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "/repos/octo/demo"},
		"known 40-hex":  {"sh", "-c", "gh api /repos/octo/demo", "sh", token},
		"40-hex as env": {"env", "GITHUB_TOKEN=" + sha, "gh", "api", "/repos/octo/demo"},
		"resume token":  {"--resume-cmd", "gh api --token=" + sha + " /x", "--", "gh", "api", "/repos/octo/demo"},
	} {
		args := []string{"--submit"}
		if cmd[0] == "--resume-cmd" {
			args, cmd = append(args, cmd[:2]...), cmd[3:]
		}
		r := b.layover(runArgs(args, cmd...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "looks like a ") || strings.Contains(r.stderr, token) {
			t.Errorf("%s: exit %d, stderr %q; want 2, the reason, no token", name, r.code, r.stderr)
		}
	}
	if n := b.ghRuns(); n != 0 {
		t.Errorf("a refused run --submit ran gh %d times", n)
	}
	if r := b.layover("jobs", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("a refused run --submit stored a job: %s", r.stdout)
	}
	r := b.layover(runArgs([]string{"--submit"}, "sh", "-c", "gh api /repos/octo/demo", "sh", sha)...)
	if r.code != 6 {
		t.Fatalf("run --submit with a commit SHA: exit %d %s", r.code, r.stderr)
	}
	id := strings.Fields(r.stderr[strings.Index(r.stderr, "deferred as job ")+len("deferred as job "):])[0]
	if j := b.show(id); len(j.Spec.Argv) != 5 || j.Spec.Argv[4] != sha {
		t.Errorf("the job's argv %q: want the commit SHA kept", j.Spec.Argv)
	}
}
