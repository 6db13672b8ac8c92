package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
)

// cmdFlags is a command's flag set as the commands define theirs: the
// policy flags, --store, --principal, and for serve --concurrency.
type cmdFlags struct {
	fs          *flagSet
	policy      quota.Policy
	store       *string
	principal   string
	concurrency int
}

func newCmdFlags(name string) *cmdFlags {
	c := &cmdFlags{policy: quota.DefaultPolicy()}
	c.fs = newFlagSet(name, name+" [flags]")
	policyFlags(c.fs, &c.policy)
	c.store = storeFlag(c.fs)
	c.fs.StringVar(&c.principal, "principal", "", "whose quota it is")
	if name == "serve" {
		c.fs.IntVar(&c.concurrency, "concurrency", 1, "jobs running at once")
	}
	return c
}

// testEnv is an environment of vars alone, with HOME unset so that no
// default config file is read unless a test names one.
func testEnv(vars map[string]string) *Env {
	return &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(k string) string { return vars[k] }}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// usageMessage returns err's message, failing t unless err is a usage
// error (exit 2) of one line.
func usageMessage(t *testing.T, err error) string {
	t.Helper()
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUsage {
		t.Fatalf("err %v; want a usage error (exit 2)", err)
	}
	if strings.ContainsAny(ee.msg, "\r\n") {
		t.Fatalf("error is not one line: %q", ee.msg)
	}
	return ee.msg
}

// The same config, as TOML and as YAML: its values reach the flags, the
// command's own table applies to that command only, and a flag given on
// the command line wins over the file, a repeatable one too (the file's
// list is not added to it).
func TestConfigFileSetsFlags(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"layover.toml": `
reserve = [100, "graphql=50"]
max-total-wait = "2h"
store = "fleet.db"

[serve]
concurrency = 4
jitter = "5s"

[pass]
reserve = 9
`,
		"layover.yaml": `
reserve: [100, graphql=50]
max-total-wait: 2h
store: fleet.db
serve:
  concurrency: 4
  jitter: 5s
pass:
  reserve: 9
`,
	}
	for name, text := range files {
		path := writeFile(t, t.TempDir(), name, text)

		serve := newCmdFlags("serve")
		if err := serve.fs.parseNoArgs(testEnv(nil), []string{"--config", path}); err != nil {
			t.Fatalf("%s: serve: %v", name, err)
		}
		if got := serve.policy.Reserve.String(); got != "100,graphql=50" {
			t.Errorf("%s: serve's reserve %q; want 100,graphql=50", name, got)
		}
		if serve.policy.MaxTotalWait != 2*time.Hour || *serve.store != "fleet.db" || serve.concurrency != 4 || serve.policy.Jitter != 5*time.Second {
			t.Errorf("%s: serve: max-total-wait %v store %q concurrency %d jitter %v; want 2h fleet.db 4 5s",
				name, serve.policy.MaxTotalWait, *serve.store, serve.concurrency, serve.policy.Jitter)
		}

		pass := newCmdFlags("pass")
		if _, err := pass.fs.parseWithCommand(testEnv(nil), []string{"--config", path, "--", "true"}); err != nil {
			t.Fatalf("%s: pass: %v", name, err)
		}
		if got := pass.policy.Reserve.String(); got != "9" {
			t.Errorf("%s: pass's reserve %q; want its own table's 9", name, got)
		}
		if pass.policy.Jitter != quota.DefaultPolicy().Jitter {
			t.Errorf("%s: serve's jitter %v applies to pass", name, pass.policy.Jitter)
		}

		given := newCmdFlags("serve")
		if err := given.fs.parseNoArgs(testEnv(nil), []string{"--reserve", "7", "--config", path, "--concurrency", "2"}); err != nil {
			t.Fatal(err)
		}
		if got := given.policy.Reserve.String(); got != "7" || given.concurrency != 2 || given.policy.MaxTotalWait != 2*time.Hour {
			t.Errorf("%s: with flags: reserve %q concurrency %d max-total-wait %v; want 7, 2 and the file's 2h",
				name, got, given.concurrency, given.policy.MaxTotalWait)
		}
	}
}

// Flags override LAYOVER_<FLAG>, which overrides the file, which
// overrides the default.
func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "c.toml", "max-total-wait = \"2h\"\nreset-margin = \"3s\"\nprincipal = \"file-bot\"\n")
	env := testEnv(map[string]string{
		"LAYOVER_CONFIG":         path,
		"LAYOVER_MAX_TOTAL_WAIT": "3h",
		"LAYOVER_RESERVE":        "40, core=10",
		"LAYOVER_PRINCIPAL":      "env-bot",
	})
	c := newCmdFlags("pass")
	if _, err := c.fs.parseWithCommand(env, []string{"--principal", "flag-bot", "--", "true"}); err != nil {
		t.Fatal(err)
	}
	switch {
	case c.policy.ResetMargin != 3*time.Second:
		t.Errorf("reset-margin %v; want the file's 3s", c.policy.ResetMargin)
	case c.policy.MaxTotalWait != 3*time.Hour:
		t.Errorf("max-total-wait %v; want LAYOVER_MAX_TOTAL_WAIT's 3h over the file's 2h", c.policy.MaxTotalWait)
	case c.policy.Reserve.String() != "40,core=10":
		t.Errorf("reserve %q; want LAYOVER_RESERVE's 40,core=10", c.policy.Reserve.String())
	case c.principal != "flag-bot":
		t.Errorf("principal %q; want the flag's over the variable's and the file's", c.principal)
	case c.policy.Jitter != quota.DefaultPolicy().Jitter:
		t.Errorf("jitter %v; want the default", c.policy.Jitter)
	}
}

// A fault names the file, the line, and the key; a bad variable names the variable. Each is a usage error of one
// line.
func TestConfigFaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, text string
		cmd        string
		want       string
	}{
		{"unknown.toml", "reserve = 1\nmax-wait = \"2h\"\n", "pass", `unknown.toml:2: max-wait: unknown key`},
		{"unknown.yaml", "reserve: 1\nmax-wait: 2h\n", "pass", `unknown.yaml:2: max-wait: unknown key`},
		{"bad.toml", "[serve]\nconcurrency = \"many\"\n", "serve", `bad.toml:2: serve.concurrency: invalid value "many": parse error`},
		{"bad.yaml", "jitter: 1s\nmax-total-wait: 9d\n", "serve", `bad.yaml:2: max-total-wait: invalid value "9d": want a duration from 0s to 168h`},
		{"range.yaml", "unknown-reset: 0s\n", "pass", `range.yaml:1: unknown-reset: invalid value "0s": want a duration from 1s to 24h`},
		{"reserve.toml", "reserve = [\"core=x\"]\n", "pass", `reserve.toml:1: reserve: invalid value "core=x": reserve "core=x": want N or RESOURCE=N`},
		{"own.toml", "[pass]\nconcurrency = 4\n", "pass", `own.toml:2: pass.concurrency: pass has no --concurrency flag`},
	}
	for _, c := range cases {
		path := writeFile(t, dir, c.name, c.text)
		err := newCmdFlags(c.cmd).fs.parseArgsOnly(testEnv(nil), "--config", path)
		if msg := usageMessage(t, err); !strings.HasPrefix(msg, filepath.Join(dir, c.want)) {
			t.Errorf("%s:\n got %q\nwant %q...", c.name, msg, filepath.Join(dir, c.want))
		}
	}

	// serve's table may set concurrency, which serve has: pass reading
	// the same file does not refuse it.
	path := writeFile(t, dir, "serve.toml", "[serve]\nconcurrency = 4\n")
	if err := newCmdFlags("pass").fs.parseArgsOnly(testEnv(nil), "--config", path); err != nil {
		t.Errorf("pass refused serve's table: %v", err)
	}

	err := newCmdFlags("serve").fs.parseArgsOnly(testEnv(map[string]string{"LAYOVER_CONCURRENCY": "x"}))
	if msg := usageMessage(t, err); msg != `LAYOVER_CONCURRENCY: invalid value "x": parse error` {
		t.Errorf("bad variable: %q", msg)
	}
}

// parseArgsOnly parses args as a command without positional arguments.
func (fs *flagSet) parseArgsOnly(env *Env, args ...string) error { return fs.parseNoArgs(env, args) }

// A config file named and missing is an error; no default file is none.
func TestConfigFileMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.toml")
	msg := usageMessage(t, newCmdFlags("pass").fs.parseArgsOnly(testEnv(nil), "--config", missing))
	if !strings.HasPrefix(msg, "--config: ") || !strings.Contains(msg, missing) {
		t.Errorf("--config missing: %q; want it named", msg)
	}
	msg = usageMessage(t, newCmdFlags("pass").fs.parseArgsOnly(testEnv(map[string]string{"LAYOVER_CONFIG": missing})))
	if !strings.HasPrefix(msg, "LAYOVER_CONFIG: ") || !strings.Contains(msg, missing) {
		t.Errorf("LAYOVER_CONFIG missing: %q; want it named", msg)
	}
	if err := newCmdFlags("pass").fs.parseArgsOnly(testEnv(map[string]string{"HOME": dir})); err != nil {
		t.Errorf("no default file: %v", err)
	}
}

// The default file is $XDG_CONFIG_HOME/layover/config.{toml,yaml}, else
// under $HOME/.config; --config "" reads none; two default files are an
// error naming both.
func TestConfigDefaultFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, home, ".config/layover/config.yaml", "max-total-wait: 5h\n")
	c := newCmdFlags("pass")
	if err := c.fs.parseArgsOnly(testEnv(map[string]string{"HOME": home})); err != nil || c.policy.MaxTotalWait != 5*time.Hour {
		t.Errorf("HOME's default file: max-total-wait %v, %v; want 5h", c.policy.MaxTotalWait, err)
	}

	xdg := t.TempDir()
	writeFile(t, xdg, "layover/config.toml", "max-total-wait = \"6h\"\n")
	env := testEnv(map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg})
	c = newCmdFlags("pass")
	if err := c.fs.parseArgsOnly(env); err != nil || c.policy.MaxTotalWait != 6*time.Hour {
		t.Errorf("XDG_CONFIG_HOME's default file: max-total-wait %v, %v; want 6h", c.policy.MaxTotalWait, err)
	}
	c = newCmdFlags("pass")
	if err := c.fs.parseArgsOnly(env, "--config", ""); err != nil || c.policy.MaxTotalWait != quota.DefaultPolicy().MaxTotalWait {
		t.Errorf(`--config "": max-total-wait %v, %v; want the default`, c.policy.MaxTotalWait, err)
	}

	writeFile(t, xdg, "layover/config.yaml", "max-total-wait: 7h\n")
	msg := usageMessage(t, newCmdFlags("pass").fs.parseArgsOnly(env))
	if !strings.Contains(msg, "config.toml and ") || !strings.Contains(msg, "config.yaml both exist") {
		t.Errorf("two default files: %q", msg)
	}
}

// A file holding the store URL's password never shows it: not in a fault
// of the file, not when the store cannot be opened (the real command,
// against a server that refuses).
func TestConfigNeverShowsStorePassword(t *testing.T) {
	t.Parallel()
	const pw = "s3cret-hunter2-pw"
	dir := t.TempDir()
	store := "postgres://layover:" + pw + "@127.0.0.1:1/layover?sslmode=disable&connect_timeout=2"
	for name, text := range map[string]string{
		"value.toml":  "store = \"" + store + "\"\nconcurrency = \"x\"\n",
		"syntax.toml": "store = \"" + store + "\n",
		"bare.toml":   "store = " + store + "\n",
		"value.yaml":  "store: " + store + "\nconcurrency: [1, 2]\n",
		"syntax.yaml": "store: [" + store + "\n",
	} {
		path := writeFile(t, dir, name, text)
		msg := usageMessage(t, newCmdFlags("serve").fs.parseArgsOnly(testEnv(nil), "--config", path))
		if strings.Contains(msg, pw) {
			t.Errorf("%s: the error shows the password: %q", name, msg)
		}
	}

	path := writeFile(t, dir, "store.toml", "store = \""+store+"\"\n")
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, []string{"jobs", "--config", path})
	if code == ExitOK || !strings.Contains(errb.String(), "127.0.0.1") {
		t.Fatalf("jobs against the file's store: exit %d, stderr %q; want the store's failure", code, errb.String())
	}
	if strings.Contains(errb.String()+out.String(), pw) {
		t.Errorf("output shows the password: %q", errb.String())
	}
}

// quotingValue is a flag that refuses every value, quoting it whole.
type quotingValue struct{}

func (quotingValue) String() string     { return "" }
func (quotingValue) Set(v string) error { return fmt.Errorf("cannot use %s", v) }

// A secret key's value (the store's) is never quoted in an error, even
// when its flag's own error quotes it, from a file or a variable alike.
func TestConfigSecretValueNotQuoted(t *testing.T) {
	t.Parallel()
	const store = "postgres://layover:s3cret-hunter2-pw@db.internal/layover"
	path := writeFile(t, t.TempDir(), "c.yaml", "store: "+store+"\n")
	for what, env := range map[string]*Env{
		"file":     testEnv(map[string]string{"LAYOVER_CONFIG": path}),
		"variable": testEnv(map[string]string{"LAYOVER_STORE": store}),
	} {
		fs := newFlagSet("jobs", "jobs")
		fs.Var(quotingValue{}, "store", "store location")
		msg := usageMessage(t, fs.parseArgsOnly(env))
		if strings.Contains(msg, "s3cret-hunter2-pw") || strings.Contains(msg, "db.internal") ||
			!strings.Contains(msg, "STORE: invalid value (not shown): cannot use "+redact.Mask) && !strings.Contains(msg, "store: invalid value (not shown): cannot use "+redact.Mask) {
			t.Errorf("%s: %q; want the value not shown", what, msg)
		}
	}
}

// serve's --notify targets come from the file as a list, or from
// LAYOVER_NOTIFY apart by spaces; a bad one is refused naming its scheme
// and host only, never the rest of the URL, which holds the secret.
func TestConfigNotifyTargets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "c.toml", "[serve]\nnotify = [\"https://hooks.example/a,b\", \"slack:https://hooks.slack.com/services/T0/B0/x\"]\n")
	for what, env := range map[string]*Env{
		"file":     testEnv(map[string]string{"LAYOVER_CONFIG": path}),
		"variable": testEnv(map[string]string{"LAYOVER_NOTIFY": "https://hooks.example/a,b slack:https://hooks.slack.com/services/T0/B0/x"}),
	} {
		var notify stringList
		fs := newFlagSet("serve", "serve")
		fs.Var(&notify, "notify", "targets")
		if err := fs.parseArgsOnly(env); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want := (stringList{"https://hooks.example/a,b", "slack:https://hooks.slack.com/services/T0/B0/x"}); !slices.Equal(notify, want) {
			t.Errorf("%s: notify %q; want %q", what, notify, want)
		}
	}

	const secret = "T0SECRET/B0SECRET/xyzSECRET"
	bad := writeFile(t, dir, "bad.yaml", "serve:\n  notify: [\"gopher://hooks.example/"+secret+"\"]\n")
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, []string{"serve", "--config", bad})
	if code != ExitUsage || strings.Contains(errb.String(), "SECRET") || !strings.Contains(errb.String(), "hooks.example") {
		t.Errorf("bad target from the file: exit %d, stderr %q; want 2 naming the host, not the secret", code, errb.String())
	}
}

// Every command with a flag a config file may set says --config in its
// help and may have a table; every table is such a command, and every key
// is a flag of one.
func TestConfigEveryCommand(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range commands() {
		if c.name == "flow" {
			for _, f := range flowCommands() {
				names = append(names, "flow "+f.name)
			}
			continue
		}
		names = append(names, c.name)
	}
	flagRe := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	keys := map[string]bool{}
	configured := map[string]bool{}
	for _, name := range names {
		var out bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
		if code := Main(context.Background(), env, append(strings.Fields(name), "-h")); code != ExitOK {
			t.Fatalf("%s -h: exit %d", name, code)
		}
		hasKey := false
		for _, m := range flagRe.FindAllStringSubmatch(out.String(), -1) {
			if isConfigKey(m[1]) {
				keys[m[1]], hasKey = true, true
			}
		}
		hasConfig := strings.Contains(out.String(), "\n  -config file")
		if hasKey != hasConfig {
			t.Errorf("%s -h: a key of configKeys %v, --config %v; want both or neither", name, hasKey, hasConfig)
		}
		if hasConfig {
			configured[name] = true
			if !configScopes[name] {
				t.Errorf("%s has --config but no table in configScopes", name)
			}
		}
	}
	for scope := range configScopes {
		if scope != "flow" && !configured[scope] {
			t.Errorf("configScopes has %q, which has no --config", scope)
		}
	}
	for key := range configKeys {
		if !keys[key] {
			t.Errorf("configKeys has %q, which no command's help shows", key)
		}
	}
	if !slices.Contains(names, "serve") || !configured["serve"] || !configured["flow run"] {
		t.Errorf("serve and flow run must have --config: %v", configured)
	}
}

// BenchmarkConfigFile times reading a fleet's config file into a command's
// flags, as every command with one does before it starts (a skipped pass
// included): the file read, parsed and each flag set.
func BenchmarkConfigFile(b *testing.B) {
	files := map[string]string{
		"toml": "store = \"postgres://layover@db/layover\"\nreserve = [300, \"search=5\"]\nmax-total-wait = \"1h\"\n" +
			"jitter = \"30s\"\n[pass]\nreserve = 200\n[serve]\nconcurrency = 4\nresume-rate = 20\n",
		"yaml": "store: postgres://layover@db/layover\nreserve: [300, search=5]\nmax-total-wait: 1h\n" +
			"jitter: 30s\npass:\n  reserve: 200\nserve:\n  concurrency: 4\n  resume-rate: 20\n",
	}
	for _, format := range []string{"toml", "yaml"} {
		b.Run(format, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "config."+format)
			if err := os.WriteFile(path, []byte(files[format]), 0o600); err != nil {
				b.Fatal(err)
			}
			env := testEnv(nil)
			for b.Loop() {
				c := newCmdFlags("pass")
				if _, err := c.fs.parseWithCommand(env, []string{"--config", path, "--", "true"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("none", func(b *testing.B) {
		env := testEnv(nil)
		for b.Loop() {
			c := newCmdFlags("pass")
			if _, err := c.fs.parseWithCommand(env, []string{"--", "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzConfigFlags reads any file as a command's config: each value it
// holds goes through its flag's own Set, and whatever the file holds, the
// command gets its flags or one usage line naming the file.
func FuzzConfigFlags(f *testing.F) {
	f.Add([]byte("reserve = [100, \"graphql=50\"]\nmax-total-wait = \"2h\"\n[serve]\nconcurrency = 4\n"), false)
	f.Add([]byte("reserve: 100,core=5\njitter: 1e3s\nserve:\n  concurrency: -1\n  principal: x\n"), true)
	f.Add([]byte("secondary-retries = 9223372036854775808\nunknown-reset = \"0s\"\n"), false)
	f.Add([]byte("reserve: [\"=\", core=]\n"), true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, isYAML bool) {
		if len(data) > 4096 {
			return
		}
		fuzzbound.Run(t, func() {
			path := filepath.Join(dir, "c.toml")
			if isYAML {
				path = filepath.Join(dir, "c.yaml")
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			err := newCmdFlags("serve").fs.parseArgsOnly(testEnv(nil), "--config", path)
			if err == nil {
				return
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.HasPrefix(ee.msg, path) || strings.ContainsAny(ee.msg, "\r\n") {
				t.Fatalf("err %v; want one usage line naming %s", err, path)
			}
		})
	})
}
