package command

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"

	"github.com/layoverhq/layover/provider"
)

// holdMemory bounds, in bytes, how much of one run's stdout Config.HoldStdout
// keeps in memory; the rest goes to a temporary file.
const holdMemory = 1 << 20

// held is one run's stdout, kept until it is known whether the run ends the
// Run (Config.HoldStdout): the first holdMemory bytes in memory, the rest in
// a temporary file that is unlinked as soon as it is made, so that nothing
// is left behind however layover ends. Write never fails: a temporary file
// that cannot be made or written keeps the rest in memory (Err says why), so
// the output passed on is always what the run wrote, byte for byte. Not safe
// for concurrent use (exec.Cmd copies a stream from one goroutine).
type held struct {
	dir  string // where the temporary file goes; "" means os.TempDir()
	max  int    // bytes kept in memory before the file; 0 means holdMemory
	mem  bytes.Buffer
	file *os.File // holds the output after the first holdMemory bytes, before mem
	n    int64
	last byte
	// Err is why output past holdMemory is in memory: the temporary file
	// could not be made or written.
	Err error
}

func (h *held) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	h.n += int64(n)
	h.last = p[len(p)-1]
	if h.file == nil && h.Err == nil && h.mem.Len()+len(p) > cmp.Or(h.max, holdMemory) {
		h.spill()
	}
	if h.file != nil && h.Err == nil {
		took, err := h.file.Write(p)
		if err == nil {
			return n, nil
		}
		// What the file took stays in it, read back before mem.
		h.Err, p = err, p[took:]
	}
	h.mem.Write(p)
	return n, nil
}

// spill moves what mem holds to a new, already unlinked temporary file.
func (h *held) spill() {
	f, err := os.CreateTemp(h.dir, "layover-stdout-*")
	if err != nil {
		h.Err = err
		return
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		h.Err = err
		return
	}
	if _, err := f.Write(h.mem.Bytes()); err != nil {
		f.Close()
		h.Err = err
		return
	}
	h.file = f
	h.mem.Reset()
}

// passOn writes what the run wrote to w, in order, and releases it.
func (h *held) passOn(w io.Writer) error {
	defer h.close()
	if h.file != nil {
		if _, err := h.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(w, h.file); err != nil {
			return err
		}
	}
	_, err := w.Write(h.mem.Bytes())
	return err
}

// close releases the temporary file, if any; the output is dropped.
func (h *held) close() {
	if h.file != nil {
		h.file.Close()
		h.file = nil
	}
	h.mem = bytes.Buffer{}
}

// hold starts holding the stdout of attempt n (from 1) and returns the
// writer the run writes its stdout to: Stdout itself without HoldStdout.
func (r *runner) hold(n int) io.Writer {
	if !r.c.HoldStdout {
		return r.c.Stdout
	}
	r.held = &held{}
	r.heldAttempt = n
	return r.held
}

// passOnFailed writes the held stdout of a run that another follows to
// Stderr, after a line that says which it was and how it failed (class).
func (r *runner) passOnFailed(class provider.Class) {
	h := r.held
	if h == nil {
		return
	}
	r.held = nil
	if h.n == 0 {
		h.close()
		return
	}
	fmt.Fprintf(r.c.Stderr, "layover: output of attempt %d, which failed (%s):\n", r.heldAttempt, class)
	r.report(h, h.passOn(r.c.Stderr))
	if h.last != '\n' {
		fmt.Fprintln(r.c.Stderr)
	}
}

// passOnLast writes the held stdout of the run that ends the Run to Stdout,
// byte for byte.
func (r *runner) passOnLast() {
	h := r.held
	if h == nil {
		return
	}
	r.held = nil
	r.report(h, h.passOn(r.c.Stdout))
}

// report says on Stderr what went wrong holding or passing on a run's
// stdout.
func (r *runner) report(h *held, err error) {
	if h.Err != nil {
		fmt.Fprintf(r.c.Stderr, "layover: attempt %d's output past %d bytes was held in memory: no temporary file (%v)\n",
			r.heldAttempt, holdMemory, h.Err)
	}
	if err != nil {
		fmt.Fprintf(r.c.Stderr, "layover: attempt %d's output: %v\n", r.heldAttempt, err)
	}
}
