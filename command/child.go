package command

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// childResult is how one run of a command ended.
type childResult struct {
	Code int
	// Signalled is the signal forwarded to the child, if any; a command
	// stopped by the user is never run again.
	Signalled os.Signal
	Stdout    []byte // the last tailSize bytes it wrote to stdout
	Stderr    []byte // the last tailSize bytes it wrote to stderr
}

// tailSize bounds, in bytes, how much of a command's output is kept for
// classifying.
const tailSize = 64 << 10

// Exec runs cfg.Command once to completion, with the streams, environment
// and signal forwarding a run of Run has, and nothing of the quota policy:
// no classifying, no waits. It returns the command's exit code (128+N for a
// command killed by signal N); a command that cannot be started is a
// *StartError. `layover pass` runs its admitted command with it.
func Exec(ctx context.Context, cfg *Config) (int, error) {
	if len(cfg.Command) == 0 {
		return 0, &InputError{Err: errors.New("no command")}
	}
	c := cfg.withDefaults()
	res, err := c.start(ctx, c.Command, c.Stdout, false)
	return res.Code, err
}

// start runs argv to completion, its stdout written to stdout, forwarding
// SIGTERM from c.Signals to it, and SIGINT when no terminal delivered it
// already; the end of ctx sends it SIGTERM. With capture, the tails of its
// stdout and stderr are kept as well as passed through.
func (c *Config) start(ctx context.Context, argv []string, stdout io.Writer, capture bool) (childResult, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		notFound := !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EISDIR) && !isDir(argv[0])
		return childResult{}, &StartError{Name: argv[0], NotFound: notFound, Reason: lookupReason(err), Err: err}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Env = c.Environ
	cmd.Stdin = c.Stdin
	var outTail, errTail *tail
	cmd.Stdout, cmd.Stderr = stdout, c.Stderr
	if capture {
		outTail, errTail = &tail{max: tailSize}, &tail{max: tailSize}
		cmd.Stdout = io.MultiWriter(stdout, outTail)
		cmd.Stderr = io.MultiWriter(c.Stderr, errTail)
	}
	if err := cmd.Start(); err != nil {
		return childResult{}, &StartError{Name: argv[0], NotFound: errors.Is(err, fs.ErrNotExist), Reason: err.Error(), Err: err}
	}
	done, forwarded := make(chan struct{}), make(chan struct{})
	var signalled os.Signal
	go func() {
		defer close(forwarded)
		for {
			select {
			case <-done:
				return
			case sig, ok := <-c.Signals:
				if !ok {
					return
				}
				signalled = sig
				// On a terminal, ^C already reached the child through its
				// process group; a second SIGINT would force-quit it.
				if sig != syscall.SIGINT || !c.Terminal {
					// The child may have exited already (os.ErrProcessDone):
					// then there is nothing to forward to.
					_ = cmd.Process.Signal(sig)
				}
			case <-ctx.Done():
				// As above: a child that has exited needs no stopping.
				_ = cmd.Process.Signal(syscall.SIGTERM)
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	// The forwarder has stopped reading c.Signals before a wait may read
	// it: a signal sent during the wait that follows is the wait's.
	<-forwarded
	res := childResult{Code: ExitStatus(cmd.ProcessState, err), Signalled: signalled}
	if capture {
		res.Stdout, res.Stderr = outTail.bytes(), errTail.bytes()
	}
	return res, nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func lookupReason(err error) string {
	if errors.Is(err, exec.ErrNotFound) {
		return "command not found"
	}
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied"
	}
	return err.Error()
}

// ExitStatus is the code a shell would report for a process that ended
// with ps and err (exec.Cmd's ProcessState and Wait error): its exit code,
// or 128+N for one killed by signal N. A process that never ran is 126.
func ExitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 126
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// tail keeps the last max bytes written to it. Safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
