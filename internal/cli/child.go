package cli

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

// childResult is how a command ended.
type childResult struct {
	Code int
	// Signalled is the signal layover forwarded to the child, if any; a
	// command stopped by the user is never run again.
	Signalled os.Signal
	Stdout    []byte // the last tailSize bytes it wrote to stdout
	Stderr    []byte // the last tailSize bytes it wrote to stderr
}

// tailSize bounds how much of a command's output is kept for classifying.
const tailSize = 64 << 10

// runChild runs argv with the caller's streams and ends with its exit code.
func runChild(ctx context.Context, env *Env, argv []string) error {
	res, err := startChild(ctx, env, argv, false)
	if err != nil {
		return err
	}
	return exitCode(res.Code)
}

// startChild runs argv to completion, forwarding SIGTERM to it, and SIGINT
// when no terminal delivered it already.
// With capture, the tails of its stdout and stderr are kept as well as
// passed through. A command that cannot be started is an exitError with
// code 126 or 127.
func startChild(ctx context.Context, env *Env, argv []string, capture bool) (childResult, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		code := ExitNotFound
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) || isDir(argv[0]) {
			code = ExitCannotExec
		}
		return childResult{}, &exitError{code: code, msg: argv[0] + ": " + lookupReason(err)}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Env = env.Environ
	cmd.Stdin = env.Stdin
	var outTail, errTail *tail
	cmd.Stdout, cmd.Stderr = env.Stdout, env.Stderr
	if capture {
		outTail, errTail = &tail{max: tailSize}, &tail{max: tailSize}
		cmd.Stdout = io.MultiWriter(env.Stdout, outTail)
		cmd.Stderr = io.MultiWriter(env.Stderr, errTail)
	}
	if err := cmd.Start(); err != nil {
		code := ExitCannotExec
		if errors.Is(err, fs.ErrNotExist) {
			code = ExitNotFound
		}
		return childResult{}, &exitError{code: code, msg: argv[0] + ": " + err.Error()}
	}
	done := make(chan struct{})
	var signalled os.Signal
	var mu sync.Mutex
	go func() {
		for {
			select {
			case <-done:
				return
			case sig, ok := <-env.Signals:
				if !ok {
					return
				}
				mu.Lock()
				signalled = sig
				mu.Unlock()
				// On a terminal, ^C already reached the child through its
				// process group; a second SIGINT would force-quit it.
				if sig != syscall.SIGINT || !env.Terminal {
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
	res := childResult{Code: exitStatus(cmd.ProcessState, err)}
	mu.Lock()
	res.Signalled = signalled
	mu.Unlock()
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

// exitStatus is the code a shell would report: the exit code, or 128+N for a
// child killed by signal N.
func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return ExitCannotExec
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
