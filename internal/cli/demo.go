package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/platform"
)

// demoGHEnv turns the layover binary into the demo's fake gh when it is run
// under the name "gh" with this variable set to 1. Only the demo sets it.
const demoGHEnv = "LAYOVER_DEMO_GH"

// IsDemoGH reports whether this process is the demo's fake gh.
func IsDemoGH(args []string, getenv func(string) string) bool {
	return len(args) > 0 && filepath.Base(args[0]) == "gh" && getenv(demoGHEnv) == "1"
}

// DemoGH runs the demo's fake gh and returns its exit code.
func DemoGH(args []string) int {
	return fake.GH(args, os.Getenv, os.Stdout, os.Stderr)
}

// DemoOptions are the flags of layover demo.
type DemoOptions struct {
	Window time.Duration
}

const demoToken = "demo-token-not-a-secret"

func runDemo(ctx context.Context, env *Env, args []string) error {
	opts := DemoOptions{}
	fs := newFlagSet("demo", "demo [--window D]")
	fs.durationVar(&opts.Window, "window", 20*time.Second, 5*time.Second, 10*time.Minute, "length of the fake GitHub's quota window")
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	if opts.Window < 5*time.Second || opts.Window > 10*time.Minute {
		return usageErr("demo: --window must be between 5s and 10m")
	}
	return opts.run(ctx, env)
}

// demo is one demo session: a fake GitHub, a temporary store, and the
// environment layover and the fake gh run in.
type demo struct {
	env  *Env
	exe  string
	dir  string
	vars []string
	out  *syncWriter
}

func (o *DemoOptions) run(ctx context.Context, env *Env) error {
	exe := env.Executable
	if exe == "" {
		return internalErr("demo: cannot find the layover executable")
	}
	dir, err := os.MkdirTemp("", "layover-demo-")
	if err != nil {
		return internalErr("demo: %v", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		return internalErr("demo: %v", err)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "gh")); err != nil {
		return internalErr("demo: %v", err)
	}
	gh := fake.NewGitHub(fake.GitHubConfig{Window: o.Window, Limits: map[string]int64{"core": 4, "graphql": 4}})
	base, err := gh.Start("127.0.0.1:0")
	if err != nil {
		return internalErr("demo: start fake GitHub: %v", err)
	}
	defer gh.Close()

	d := &demo{env: env, exe: exe, dir: dir, out: &syncWriter{w: env.Stdout}}
	d.vars = demoEnviron(env.Environ, map[string]string{
		"GH_TOKEN": demoToken, "GITHUB_API_URL": base, "GH_REPO": "octo/demo",
		"LAYOVER_STORE": filepath.Join(dir, "layover.db"), demoGHEnv: "1",
		"PATH": bin + string(os.PathListSeparator) + env.Getenv("PATH"),
	})
	policy := []string{"--reserve", "1", "--reset-margin", "1s", "--jitter", "2s"}

	d.say("layover demo: a fake GitHub on %s gives user octocat %d REST calls per %s window.", base, 4, o.Window)
	d.say("Policy for the demo: reserve 1 call, resume 1s after the reset plus 0-2s jitter.\n")

	d.say("1. A scheduled pass while the quota has room: it runs.")
	d.cmd(ctx, append(append([]string{"layover", "pass"}, policy...), "--", "gh", "api", "/repos/octo/demo")...)

	d.say("\n2. Another host on the same user spends the rest of the quota.")
	for i := 0; i < 4; i++ {
		if code := d.cmd(ctx, "gh", "api", "/repos/octo/demo/issues"); code != 0 {
			break
		}
	}

	d.say("\n3. A command hits the exhausted quota. layover reads /rate_limit and waits for the reset (in the background here).")
	bg := d.start(ctx, "   [step 3] ", append(append([]string{"layover", "run"}, policy...), "--", "gh", "api", "-X", "POST", "/repos/octo/demo/issues", "-f", "title=from the waiting command")...)
	d.waitFor(ctx, func() bool {
		return bytes.Contains(d.quiet(ctx, "layover", "status", "--json").Bytes(), []byte(`"pid"`))
	})

	d.say("\n4. Scheduled passes during the wait are skipped: exit 0, no output, one activity line however many run.")
	for i := 0; i < 3; i++ {
		code := d.cmd(ctx, append(append([]string{"layover", "pass"}, policy...), "--", "gh", "api", "/repos/octo/demo")...)
		d.say("   (exit %d)", code)
	}
	d.cmd(ctx, "layover", "activity")

	d.say("\n5. status during the wait:")
	d.cmd(ctx, "layover", "status")

	d.say("\n6. A command started now with --quota waits before its first call, so none is wasted (live countdown on a terminal):")
	d.cmd(ctx, append(append([]string{"layover", "run", "--quota", "github"}, policy...), "--", "gh", "api", "/repos/octo/demo/pulls")...)

	d.say("\n7. The command from step 3 resumed after the reset and finished:")
	code := bg.wait()
	d.say("   (exit %d)", code)

	if err := d.deferral(ctx, policy); err != nil {
		return err
	}
	d.say("\nDone. Everything ran against a temporary store, removed now.")
	return nil
}

// deferral shows the durable host: a command whose wait is longer than it
// may wait in process is deferred with a receipt, and the host runs it
// fresh after the reset.
func (d *demo) deferral(ctx context.Context, policy []string) error {
	d.say("\n8. A durable host (layover serve) starts in the background.")
	serve := d.start(ctx, "   [serve] ", append([]string{"layover", "serve", "--lease", "5s", "--heartbeat", "1s"}, policy...)...)
	d.waitFor(ctx, func() bool {
		return bytes.Contains(d.quiet(ctx, "layover", "status", "--json").Bytes(), []byte(`"live": true`))
	})

	d.say("\n9. The quota runs out again. This command may not wait in process (--defer-after 0s): it defers instead.")
	for i := 0; i < 4; i++ {
		if code := d.quietCode(ctx, "gh", "api", "/repos/octo/demo/issues"); code != 0 {
			break
		}
	}
	out := &bytes.Buffer{}
	argv := append(append([]string{"layover", "run", "--defer-after", "0s", "--submit"}, policy...), "--", "gh", "api", "/repos/octo/demo/labels")
	d.say("$ %s", strings.Join(argv, " "))
	c := d.command(ctx, argv)
	c.Stdout, c.Stderr = io.MultiWriter(d.out, out), d.env.Stderr
	err := c.Run()
	d.say("   (exit %d: deferred; the last stdout line is the receipt)", command.ExitStatus(c.ProcessState, err))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	receiptFile := filepath.Join(d.dir, "receipt.json")
	if err := os.WriteFile(receiptFile, []byte(lines[len(lines)-1]), 0o600); err != nil {
		return internalErr("demo: %v", err)
	}
	d.cmd(ctx, "layover", "receipt", "validate", receiptFile)
	d.cmd(ctx, "layover", "jobs")

	// The workflow pauses on the quota the job waits for, so that both
	// resume after the same reset.
	flowRun, err := d.flowPause(ctx)
	if err != nil {
		serve.stop()
		return err
	}

	d.say("\n11. After the reset the host wakes the job and runs it as a fresh process:")
	ids, err := d.jobs(ctx)
	if err != nil {
		serve.stop()
		return internalErr("demo: layover jobs --json: %v", err)
	}
	if len(ids) == 0 {
		serve.stop()
		return internalErr("demo: the command was not deferred")
	}
	id := ids[len(ids)-1]
	d.waitForLong(ctx, func() bool {
		return bytes.Contains(d.quiet(ctx, "layover", "jobs", "--state", "complete").Bytes(), []byte(id))
	})
	d.cmd(ctx, "layover", "show", id)
	serve.stop()
	return d.flowResume(ctx, flowRun)
}

// demoFlow is the demo's workflow: two independent tasks, one on the
// GitHub quota, and a task that needs it.
const demoFlow = `name: demo
tasks:
  labels:
    run: gh api /repos/octo/demo/labels
    quota: [github]
  notes:
    run: echo release notes written
  publish:
    needs: [labels]
    run: echo published
`

// flowPause shows flow run on the spent quota: the task on it pauses
// while the independent one completes, and its dependent waits. It
// returns the flow run command, which flowResume runs again.
func (d *demo) flowPause(ctx context.Context) ([]string, error) {
	file := filepath.Join(d.dir, "demo.yaml")
	if err := os.WriteFile(file, []byte(demoFlow), 0o600); err != nil {
		return nil, internalErr("demo: %v", err)
	}
	run := []string{"layover", "flow", "run", file, "--run-id", "demo-1", "--reset-margin", "1s", "--jitter", "0s"}
	d.say("\n10. Meanwhile a workflow runs in process (flow run): labels calls GitHub, notes does not, publish needs labels.")
	code := d.cmd(ctx, run...)
	d.say("   (exit %d: labels paused on the spent quota, notes completed anyway, publish waits for labels)", code)
	d.cmd(ctx, "layover", "flow", "status", "demo-1")
	return run, nil
}

// flowResume runs the workflow again after the reset: the paused task
// resumes and its dependent runs; the completed one does not run twice.
func (d *demo) flowResume(ctx context.Context, run []string) error {
	reset, err := d.flowReset(ctx)
	if err != nil {
		return internalErr("demo: flow status --json: %v", err)
	}
	d.say("\n12. After the reset the workflow is run again under its run id: labels resumes, then publish runs; notes does not run twice.")
	if wait := time.Until(reset) + 1500*time.Millisecond; !reset.IsZero() && wait > 0 {
		<-d.env.Clock.After(wait)
	}
	code := d.cmd(ctx, run...)
	d.say("   (exit %d)", code)
	d.cmd(ctx, "layover", "flow", "status", "demo-1")
	return nil
}

// flowReset is the quota reset the demo run's paused task waits for; zero
// when none is paused.
func (d *demo) flowReset(ctx context.Context) (time.Time, error) {
	var s struct {
		Tasks []struct {
			Quota *struct {
				ResetAt *time.Time `json:"reset_at"`
			} `json:"quota"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(d.quiet(ctx, "layover", "flow", "status", "demo-1", "--json").Bytes(), &s); err != nil {
		return time.Time{}, err
	}
	for _, t := range s.Tasks {
		if t.Quota != nil && t.Quota.ResetAt != nil {
			return *t.Quota.ResetAt, nil
		}
	}
	return time.Time{}, nil
}

// jobs lists the ids of the demo store's jobs.
func (d *demo) jobs(ctx context.Context) ([]string, error) {
	var out []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(d.quiet(ctx, "layover", "jobs", "--json").Bytes(), &out); err != nil {
		return nil, err
	}
	ids := make([]string, len(out))
	for i, j := range out {
		ids[i] = j.ID
	}
	return ids, nil
}

// quietCode runs argv with its output hidden and returns its exit code.
func (d *demo) quietCode(ctx context.Context, argv ...string) int {
	c := d.command(ctx, argv)
	err := c.Run()
	return command.ExitStatus(c.ProcessState, err)
}

// demoEnviron is environ with the demo's variables set and any inherited
// token or store removed.
func demoEnviron(environ []string, set map[string]string) []string {
	drop := map[string]bool{"GITHUB_TOKEN": true, "LAYOVER_PRINCIPAL": true}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || drop[k] {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

func (d *demo) say(format string, a ...any) {
	fmt.Fprintf(d.out, format+"\n", a...)
}

func (d *demo) command(ctx context.Context, argv []string) *exec.Cmd {
	path := argv[0]
	if path == "layover" {
		path = d.exe
	} else {
		path = filepath.Join(d.dir, "bin", path)
	}
	c := exec.CommandContext(ctx, path, argv[1:]...)
	c.Args = argv
	c.Env = d.vars
	// Nothing the demo started outlives it, however it ends, where the
	// system has a parent-death signal; elsewhere its context's end kills
	// them.
	platform.DieWithParent(c)
	return c
}

// cmd shows and runs argv in the foreground and returns its exit code.
func (d *demo) cmd(ctx context.Context, argv ...string) int {
	d.say("$ %s", strings.Join(argv, " "))
	c := d.command(ctx, argv)
	out := &lineEnd{w: d.out}
	c.Stdout, c.Stderr = out, d.env.Stderr
	err := c.Run()
	out.end()
	return command.ExitStatus(c.ProcessState, err)
}

// quiet runs argv and returns its stdout.
func (d *demo) quiet(ctx context.Context, argv ...string) *bytes.Buffer {
	var b bytes.Buffer
	c := d.command(ctx, argv)
	c.Stdout = &b
	// The callers judge by the output: a command that failed shows as
	// output without what they look for.
	_ = c.Run()
	return &b
}

type background struct {
	c    *exec.Cmd
	done chan struct{}
}

// start shows argv and runs it in the background, its output prefixed.
func (d *demo) start(ctx context.Context, prefix string, argv ...string) *background {
	d.say("$ %s &", strings.Join(argv, " "))
	c := d.command(ctx, argv)
	pout := &prefixWriter{prefix: prefix, w: d.out}
	perr := &prefixWriter{prefix: prefix, w: d.out}
	c.Stdout, c.Stderr = pout, perr
	b := &background{c: c, done: make(chan struct{})}
	if err := c.Start(); err != nil {
		d.say("   could not start: %v", err)
		close(b.done)
		return b
	}
	go func() {
		// wait reads the exit status from c.ProcessState.
		_ = c.Wait()
		pout.flush()
		perr.flush()
		close(b.done)
	}()
	return b
}

// stop ends a background command with SIGTERM and waits for it.
func (b *background) stop() int {
	if b.c.Process != nil {
		// The command may have exited already (os.ErrProcessDone); wait
		// reports how it ended either way.
		_ = b.c.Process.Signal(syscall.SIGTERM)
	}
	return b.wait()
}

func (b *background) wait() int {
	<-b.done
	return command.ExitStatus(b.c.ProcessState, nil)
}

// waitFor polls cond every 100 ms for at most 10 s.
func (d *demo) waitFor(ctx context.Context, cond func() bool) { d.poll(ctx, cond, 100) }

// waitForLong polls cond every 100 ms for at most 2 min.
func (d *demo) waitForLong(ctx context.Context, cond func() bool) { d.poll(ctx, cond, 1200) }

func (d *demo) poll(ctx context.Context, cond func() bool, tries int) {
	for i := 0; i < tries && ctx.Err() == nil; i++ {
		if cond() {
			return
		}
		<-d.env.Clock.After(100 * time.Millisecond)
	}
}

// syncWriter serialises writes from the demo and its background command.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// lineEnd passes writes through and can end an unfinished last line, as
// gh api leaves one after a JSON body.
type lineEnd struct {
	w    io.Writer
	last byte
}

func (l *lineEnd) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.last = p[len(p)-1]
	}
	return l.w.Write(p)
}

func (l *lineEnd) end() {
	if l.last != 0 && l.last != '\n' {
		// The demo's own output: when writing it fails there is nowhere
		// left to say so.
		_, _ = l.w.Write([]byte{'\n'})
	}
}

// prefixWriter writes whole lines to w, each with prefix.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

func (p *prefixWriter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.buf = nil
	}
}
