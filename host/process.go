package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/layoverhq/layover/host/supervisor"
	"github.com/layoverhq/layover/platform"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/redact"
)

// Classifier turns a failed process's exit code and output into an outcome.
type Classifier func(exitCode int, stdout, stderr []byte, now time.Time) provider.Outcome

// ProcessRunner runs each attempt as a process in its own process group,
// whose whole group is signalled when the attempt's context ends: SIGTERM,
// then SIGKILL after Grace. With a Supervisor the group dies with the host
// however the host dies (see package supervisor); without one only the
// job's own process does (parent-death signal), not what it started, and
// on a system without a parent-death signal (macOS, OpenBSD, NetBSD) not
// even that. On Windows, which has no supervisor, each job runs directly and
// a stop ends its process alone (see package platform).
type ProcessRunner struct {
	// Supervisor is the path of a program that acts as the supervisor when
	// its first argument is supervisor.Arg (layover does); empty runs each
	// job directly.
	Supervisor string
	// Classify reads a failed attempt's output, secrets masked. Required.
	Classify Classifier
	// Output receives the processes' output, each line prefixed with the job
	// id and its secrets masked (see Secrets); nil discards it.
	Output io.Writer
	// OutputLine, when set, receives each line of the processes' output in
	// place of Output, with the job's id, its secrets masked and without
	// its line feed: serve --log-format json makes each a log record.
	OutputLine func(jobID, line string)
	// Secrets are values masked in the lines copied to Output, in the
	// output Classify reads and in the outcome reason (which the store
	// keeps), besides the values of the variables the job declared and what
	// package redact recognises (docs/secrets.md): the host's own token,
	// its store's password.
	Secrets []string
	// Grace is how long a signalled process has before SIGKILL (default
	// DefaultGrace), at most the host's bound (Run.Grace).
	Grace time.Duration
	// Now is the clock for classification (default time.Now).
	Now func() time.Time
}

// outputDelay is how long the output of an attempt whose process exited is
// still read.
const outputDelay = time.Second

// tailLimit bounds the output kept for classifying one attempt.
const tailLimit = 64 << 10

// Run implements Runner.
func (p *ProcessRunner) Run(ctx context.Context, r Run) Result {
	known := append(slices.Clone(p.Secrets), declaredValues(r)...)
	res := p.run(ctx, r, known)
	// The classifier reads masked output; a reason made of anything else
	// (a start error) is masked here.
	res.Outcome.Reason = redact.String(res.Outcome.Reason, known...)
	return res
}

// declaredValues are the values, in the attempt's environment, of the
// variables its job declared.
func declaredValues(r Run) []string {
	var out []string
	for _, kv := range r.Env {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(r.Job.Spec.EnvNames, k) {
			out = append(out, v)
		}
	}
	return out
}

func (p *ProcessRunner) run(ctx context.Context, r Run, known []string) Result {
	if len(r.Argv) == 0 {
		return Result{ExitCode: -1, Outcome: provider.Unknown("process", provider.ClassPermanent, "empty command")}
	}
	argv := r.Argv
	supervised := p.Supervisor != "" && platform.Supervises
	if supervised {
		argv = supervisor.Command(p.Supervisor, argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = r.Env
	cmd.Dir = r.Job.Spec.Workdir
	platform.NewProcessGroup(cmd)
	out := &tailWriter{prefix: "[" + r.Job.ID + "] ", w: p.Output, known: known}
	errw := &tailWriter{prefix: "[" + r.Job.ID + "] ", w: p.Output, known: known}
	if p.OutputLine != nil {
		id := r.Job.ID
		emit := func(line string) { p.OutputLine(id, line) }
		out.w, out.emit, errw.w, errw.emit = io.Discard, emit, io.Discard, emit
	}
	cmd.Stdout, cmd.Stderr = out, errw
	// A process the job left behind may hold its output open; the job's end
	// is its leader's exit, not theirs (they are killed below).
	cmd.WaitDelay = outputDelay
	cannotStart := func(err error) Result {
		return Result{ExitCode: -1, Outcome: provider.Unknown("process", provider.ClassPermanent, "cannot start: "+err.Error())}
	}
	var link *supervisor.Link
	if supervised {
		var err error
		if link, err = supervisor.Attach(cmd); err != nil {
			return cannotStart(err)
		}
		defer link.Close()
	} else {
		platform.DieWithParent(cmd)
	}
	if err := cmd.Start(); err != nil {
		return cannotStart(err)
	}
	if link != nil {
		if _, err := link.Started(); err != nil {
			// The job did not start and err says why; Wait only reaps the
			// supervisor, whose exit status adds nothing to that.
			_ = cmd.Wait()
			return cannotStart(err)
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
			// The group may have exited already (ESRCH): nothing to stop.
			_ = platform.SignalGroup(cmd.Process.Pid, syscall.SIGTERM)
			grace := p.Grace
			if grace <= 0 {
				grace = DefaultGrace
			}
			if r.Grace > 0 {
				grace = min(grace, r.Grace)
			}
			select {
			case <-done:
			case <-time.After(grace):
				// As above: the group may be gone by now.
				_ = platform.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	// Whatever the leader's fate, leave nothing of its group behind. Most
	// often the group is empty and the kill fails with ESRCH.
	_ = platform.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
	out.flush()
	errw.flush()
	code := exitCode(cmd.ProcessState, err)
	// An agent CLI's session, for the resume that continues it
	// (docs/agents.md): read, secrets masked, from the output of an agent
	// job or of one whose resume command continues a session; any other
	// job's output may carry a "session_id" that is a login's.
	var session string
	if r.Job.Spec.Agent != "" || strings.Contains(r.Job.Spec.ResumeCmd, "{session_id}") {
		session = agentcli.SessionID(out.sessionScan(), errw.sessionScan())
	}
	if code == 0 {
		return Result{Outcome: provider.Unknown("process", provider.ClassOK, "exit 0"), SessionID: session}
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	o := p.Classify(code, out.tail(), errw.tail(), now())
	if ctx.Err() != nil {
		o = provider.Unknown(o.Provider, provider.ClassTransient, "stopped by the host")
	}
	return Result{ExitCode: code, Outcome: o, SessionID: session}
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// tailWriter keeps the last tailLimit bytes and copies whole lines, with a
// prefix and secrets masked, to w.
type tailWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	known  []string          // secret values masked in copied lines
	emit   func(line string) // when set, takes each copied line in place of w
	buf    []byte            // tail, as written
	cut    bool              // buf lost its start: its first line is partial
	head   []byte            // the first tailLimit bytes, as written (an agent CLI names its session first)
	line   []byte            // partial line not yet copied
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := min(len(p), tailLimit-len(t.head)); n > 0 {
		t.head = append(t.head, p[:n]...)
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailLimit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	if t.w == nil {
		return len(p), nil
	}
	t.line = append(t.line, p...)
	for {
		i := bytes.IndexByte(t.line, '\n')
		if i < 0 {
			break
		}
		t.copyLine(t.line[:i])
		t.line = t.line[i+1:]
	}
	if len(t.line) > tailLimit {
		t.line = t.line[:0]
	}
	return len(p), nil
}

func (t *tailWriter) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w != nil && len(t.line) > 0 {
		t.copyLine(t.line)
		t.line = nil
	}
}

// copyLine writes one line to w, in one Write.
func (t *tailWriter) copyLine(line []byte) {
	if t.emit != nil {
		t.emit(redact.String(string(line), t.known...))
		return
	}
	fmt.Fprintf(t.w, "%s%s\n", t.prefix, redact.String(string(line), t.known...))
}

// tail is the output kept for classifying, secrets masked, so that no
// reason quotes one, whole or cut short. A tail that lost its start begins
// at its first whole line: the part of a line before it could be the end
// of a secret.
func (t *tailWriter) tail() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := t.buf
	if i := bytes.IndexByte(buf, '\n'); t.cut && i >= 0 {
		buf = buf[i+1:]
	}
	return []byte(redact.String(string(buf), t.known...))
}

// sessionScan is the output an agent CLI's session id is read from: the
// whole output when the tail kept it all, else its first whole lines and
// its tail, secrets masked (agentcli.SessionID reads the tail, then the
// start).
func (t *tailWriter) sessionScan() []byte {
	tail := t.tail()
	t.mu.Lock()
	head, cut := t.head, t.cut
	t.mu.Unlock()
	if !cut {
		return tail
	}
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	} else {
		head = nil
	}
	return append([]byte(redact.String(string(head), t.known...)), tail...)
}
