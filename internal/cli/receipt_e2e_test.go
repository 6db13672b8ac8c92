package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/internal/cli"
	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/receipt"
)

// receiptDigest is a fixed 64-hex digest made of one letter.
func receiptDigest(c string) string { return strings.Repeat(c, 64) }

// receiptAt issues a receipt whose window starts at issue; retained picks
// the ownership form.
func receiptAt(t *testing.T, issue time.Time, reason receipt.Reason, retained bool) []byte {
	t.Helper()
	after, by, err := receipt.Window(issue, issue.Add(40*time.Minute), time.Minute, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p := receipt.Params{Reason: reason, IssuedAt: issue, ResumeAfter: after, ResumeBy: by,
		Bindings: receipt.Bindings{ScopeDigest: receiptDigest("a"), RequestDigest: receiptDigest("b")}}
	var r *receipt.Receipt
	if retained {
		p.Bindings.PlanDigest = receiptDigest("c")
		p.FreshApprovalRequired = true
		r, err = receipt.NewRetained(p, receiptDigest("d"), receiptDigest("e"))
	} else {
		r, err = receipt.NewHandoff(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := receipt.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// receiptWrite writes data into the bundle's directory and returns its path.
func receiptWrite(t *testing.T, b *bundle, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(b.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// receiptStdin runs the layover binary with stdin fed from data.
func receiptStdin(t *testing.T, b *bundle, data []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "layover"), args...)
	cmd.Env = b.environ()
	cmd.Dir = b.dir
	cmd.Stdin = bytes.NewReader(data)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("layover %v timed out; stderr:\n%s", args, errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("layover %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// receipt validate and show: 0 for a valid receipt (expired ones too), 1
// for something read that is not a valid receipt (one line on stderr naming
// the field), 2 for a file that cannot be read or a usage error. Neither
// touches the store.
func TestReceiptCommandE2E(t *testing.T) {
	t.Parallel()
	now := time.Now()
	valid := receiptAt(t, now, receipt.RESTReserve, true)
	dup := bytes.Replace(valid, []byte(`"schema":1`), []byte(`"schema":1,"schema":1`), 1)
	badDigest := bytes.Replace(valid, []byte(`"scope_digest":"a`), []byte(`"scope_digest":"A`), 1)
	v1Quota := bytes.Replace(receiptAt(t, now, receipt.ProviderQuota, false), []byte(`-v2"`), []byte(`-v1"`), 1)
	cases := []struct {
		name   string
		files  map[string][]byte
		args   []string
		code   int
		stdout []string // each must appear
		stderr string   // must appear (one line)
	}{
		{"valid retained waiting", map[string][]byte{"r.json": valid}, []string{"validate", "r.json"}, 0,
			[]string{"valid deferred-receipt-v1 (rest-reserve, retained): waiting until "}, ""},
		{"valid handoff v2 resumable", map[string][]byte{"r.json": receiptAt(t, now.Add(-2*time.Hour), receipt.ProviderQuota, false)},
			[]string{"validate", "r.json"}, 0, []string{"valid deferred-receipt-v2 (provider-quota, handoff): resumable now; resume by "}, ""},
		{"valid but expired", map[string][]byte{"r.json": receiptAt(t, now.Add(-48*time.Hour), receipt.GraphQLReserve, false)},
			[]string{"validate", "r.json"}, 0, []string{"valid deferred-receipt-v1 (graphql-reserve, handoff): expired: resume by ", " ago)"}, ""},
		{"issued in the future", map[string][]byte{"r.json": receiptAt(t, now.Add(time.Hour), receipt.RESTReserve, false)},
			[]string{"validate", "r.json"}, 1, nil, "r.json: not a valid receipt: issued_at_ms: "},
		{"duplicate field", map[string][]byte{"r.json": dup}, []string{"validate", "r.json"}, 1, nil,
			"layover: receipt validate: r.json: not a valid receipt: schema: duplicate field"},
		{"bad digest", map[string][]byte{"r.json": badDigest}, []string{"validate", "r.json"}, 1, nil,
			"not a valid receipt: bindings.scope_digest: want 64 lowercase hex digits"},
		{"v2 reason in v1", map[string][]byte{"r.json": v1Quota}, []string{"validate", "r.json"}, 1, nil,
			`reason: "provider-quota" needs deferred-receipt-v2`},
		{"not JSON", map[string][]byte{"r.json": []byte("hello\n")}, []string{"validate", "r.json"}, 1, nil, "invalid JSON"},
		{"empty file", map[string][]byte{"r.json": nil}, []string{"validate", "r.json"}, 1, nil, "unexpected end of input"},
		{"trailing data", map[string][]byte{"r.json": append(append([]byte{}, valid...), valid...)}, []string{"validate", "r.json"}, 1, nil, "trailing data"},
		{"too large", map[string][]byte{"r.json": bytes.Repeat([]byte(" "), receipt.MaxSize+10)}, []string{"validate", "r.json"}, 1, nil, "larger than"},
		{"show valid", map[string][]byte{"r.json": valid}, []string{"show", "r.json"}, 0,
			[]string{"deferred-receipt-v1 (schema 1), status deferred", "rest-reserve", "retained (durable-host)",
				"\n  scope          " + receiptDigest("a") + "\n", "\n  plan           " + receiptDigest("c") + "\n", "fresh approval   required"}, ""},
		{"show invalid", map[string][]byte{"r.json": dup}, []string{"show", "r.json"}, 1, nil,
			"layover: receipt show: r.json: not a valid receipt: schema: duplicate field"},
		{"missing file", nil, []string{"validate", "nope.json"}, 2, nil, "nope.json"},
		{"show missing file", nil, []string{"show", "nope.json"}, 2, nil, "nope.json"},
		{"directory", nil, []string{"validate", "."}, 2, nil, "directory"},
		{"no subcommand", nil, nil, 2, nil, "missing subcommand"},
		{"unknown subcommand", nil, []string{"check", "r.json"}, 2, nil, "unknown subcommand"},
		{"show without file", nil, []string{"show"}, 2, nil, "missing FILE"},
		{"two files", nil, []string{"validate", "a", "b"}, 2, nil, "unexpected argument"},
		{"unknown flag", nil, []string{"validate", "--frob", "a"}, 2, nil, "frob"},
		{"help", nil, []string{"-h"}, 0, []string{"layover receipt validate [FILE|-]"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			for name, data := range c.files {
				receiptWrite(t, b, name, data)
			}
			r := b.layover(append([]string{"receipt"}, c.args...)...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.code, c.code, r.stdout, r.stderr)
			}
			for _, want := range c.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			if c.code == 0 {
				if r.stderr != "" {
					t.Errorf("stderr %q on success", r.stderr)
				}
				if c.args[0] == "validate" && strings.Count(r.stdout, "\n") != 1 {
					t.Errorf("validate printed %q, want one line", r.stdout)
				}
			} else {
				if r.stdout != "" {
					t.Errorf("stdout %q on failure", r.stdout)
				}
				if !strings.Contains(r.stderr, c.stderr) {
					t.Errorf("stderr %q lacks %q", r.stderr, c.stderr)
				}
				if strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("stderr is not one line: %q", r.stderr)
				}
			}
			if _, err := os.Stat(b.store); err == nil {
				t.Errorf("receipt created the store")
			}
		})
	}
}

// validate reads stdin when given "-" or no file; show reads it for "-".
func TestReceiptStdinE2E(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	valid := receiptAt(t, time.Now(), receipt.ProviderSecondaryLimit, false)
	for _, args := range [][]string{{"receipt", "validate"}, {"receipt", "validate", "-"}} {
		r := receiptStdin(t, b, valid, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "valid deferred-receipt-v1 (provider-secondary-limit, handoff): waiting") {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := receiptStdin(t, b, valid, "receipt", "show", "-"); r.code != 0 || !strings.Contains(r.stdout, "handoff (governed-handoff)") {
		t.Errorf("show -: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r := receiptStdin(t, b, []byte(`{"schema":1}`), "receipt", "validate", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "layover: receipt validate: stdin: not a valid receipt: version: missing field") {
		t.Errorf("invalid stdin: exit %d stderr %q", r.code, r.stderr)
	}
	if r := b.layover("help"); !strings.Contains(r.stdout, "receipt") {
		t.Errorf("help does not list receipt:\n%s", r.stdout)
	}
}

// show, in process against a fixed clock: every line, times in RFC 3339 UTC
// and relative to now.
func TestReceiptShowText(t *testing.T) {
	t.Parallel()
	issue := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	retained := filepath.Join(dir, "retained.json")
	if err := os.WriteFile(retained, receiptAt(t, issue, receipt.RESTReserve, true), 0o600); err != nil {
		t.Fatal(err)
	}
	handoff := filepath.Join(dir, "handoff.json")
	if err := os.WriteFile(handoff, receiptAt(t, issue, receipt.ProviderQuota, false), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(now time.Time, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		env := &cli.Env{Stdout: &out, Stderr: &errb, Clock: clock.NewFake(now)}
		code := cli.Main(context.Background(), env, args)
		return code, out.String(), errb.String()
	}
	code, out, errs := run(issue.Add(10*time.Minute), "receipt", "show", retained)
	want := `receipt          deferred-receipt-v1 (schema 1), status deferred
window           waiting: a fresh run may start in 31m0s
reason           rest-reserve: GitHub REST quota at its reserve or exhausted
issued           2026-05-01T10:00:00Z (10m0s ago)
resume after     2026-05-01T10:41:00Z (in 31m0s)
resume by        2026-05-01T16:41:00Z (in 6h31m0s)
ownership        retained (durable-host): a live durable host recorded the wake-up and can cancel it
  wake-up        dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd
  cancellation   eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee
bindings
  scope          aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
  request        bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
  plan           cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
fresh approval   required: the next run must obtain new approval before any mutation
`
	if code != 0 || out != want || errs != "" {
		t.Errorf("show: exit %d stderr %q\n got:\n%s\nwant:\n%s", code, errs, out, want)
	}
	code, out, _ = run(issue.Add(7*time.Hour), "receipt", "show", handoff)
	for _, w := range []string{
		"receipt          deferred-receipt-v2 (schema 1), status deferred\n",
		"window           expired: resume by has passed",
		"reason           provider-quota: a provider's primary quota exhausted\n",
		"resume by        2026-05-01T16:41:00Z (19m0s ago)\n",
		"ownership        handoff (governed-handoff): no live host holds a wake-up; 'layover adopt ID' hands the job to one\n",
		"  plan           none (null: the job has no plan)\n",
		"fresh approval   not required\n",
	} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("expired handoff show (exit %d) lacks %q:\n%s", code, w, out)
		}
	}
	code, out, _ = run(issue.Add(7*time.Hour), "receipt", "validate", handoff)
	if want := "valid deferred-receipt-v2 (provider-quota, handoff): expired: resume by 2026-05-01T16:41:00Z passed (19m0s ago)\n"; code != 0 || out != want {
		t.Errorf("validate expired: exit %d %q, want %q", code, out, want)
	}
	code, out, _ = run(issue.Add(time.Hour), "receipt", "validate", handoff)
	if want := "valid deferred-receipt-v2 (provider-quota, handoff): resumable now; resume by 2026-05-01T16:41:00Z (in 5h41m0s)\n"; code != 0 || out != want {
		t.Errorf("validate resumable: exit %d %q, want %q", code, out, want)
	}
	code, _, errs = run(issue.Add(-time.Hour), "receipt", "validate", handoff)
	if want := "layover: receipt validate: " + handoff + ": not a valid receipt: issued_at_ms: 1h0m0s in the future, beyond the 5m0s clock-skew allowance\n"; code != 1 || errs != want {
		t.Errorf("validate future: exit %d %q, want %q", code, errs, want)
	}
}
