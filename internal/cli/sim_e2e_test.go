package cli_test

import (
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// layover sim lanes runs the lanes through the real host and prints the
// figures; a bad flag is a usage error.
func TestSimLanes(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("sim", "lanes", "--resource", "15", "--auth", "15", "--seed", "2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"lanes: 15 WAIT_RESOURCE + 15 WAIT_AUTH\n", "resumes: 30\n", "provider calls: 0\n",
		"provider tokens: 0\n", "lanes in the wrong state: 0\n", "invariants broken: 0\n", "wall time: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, args := range [][]string{{"sim", "lanes"}, {"sim", "lanes", "--resource", "-1"},
		{"sim", "lanes", "--auth", "1", "--store", "postgres"}, {"sim", "nope"}, {"sim"}, {"sim", "fleet", "x.yaml"}} {
		if r := b.layover(args...); r.code != 2 {
			t.Errorf("layover %v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
}
