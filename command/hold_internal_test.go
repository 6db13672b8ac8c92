package command

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// A held run's output comes back byte for byte, however it was written:
// in memory up to 1 MiB, past that in a temporary file that is never seen
// in its folder (unlinked when made); a folder where no file can be made
// keeps it all in memory and says why.
func TestHeldPassesOnWhatWasWritten(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 3*holdMemory+12345)
	for i := range body {
		body[i] = byte(rng.UintN(256))
	}
	for name, c := range map[string]struct {
		size     int
		dir      func(t *testing.T) string
		wantFile bool
		wantErr  bool
	}{
		"small":         {1000, nil, false, false},
		"exactly 1 MiB": {holdMemory, nil, false, false},
		"spilled":       {len(body), nil, true, false},
		"no temp dir": {len(body), func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "missing")
		}, false, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if c.dir != nil {
				dir = c.dir(t)
			}
			h := &held{dir: dir}
			rng := rand.New(rand.NewPCG(3, uint64(c.size)))
			// Writes of many sizes, as a pipe delivers them.
			for rest := body[:c.size]; len(rest) > 0; {
				n := min(len(rest), 1+int(rng.UintN(70000)))
				if k, err := h.Write(rest[:n]); k != n || err != nil {
					t.Fatalf("Write: %d, %v", k, err)
				}
				rest = rest[n:]
			}
			if (h.file != nil) != c.wantFile || (h.Err != nil) != c.wantErr {
				t.Fatalf("file %v, err %v; want a file %v, an error %v", h.file != nil, h.Err, c.wantFile, c.wantErr)
			}
			if c.dir == nil {
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("the temporary folder holds %v", entries)
				}
			}
			if h.mem.Len() > holdMemory && !c.wantErr {
				t.Errorf("%d bytes in memory, past the %d bound", h.mem.Len(), holdMemory)
			}
			var got bytes.Buffer
			if err := h.passOn(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), body[:c.size]) {
				t.Errorf("passed on %d bytes, not the %d written", got.Len(), c.size)
			}
			if h.file != nil {
				t.Error("the temporary file is still open after passOn")
			}
		})
	}
}

// Whatever the writes, and wherever the bound falls among them, what is
// passed on is what was written, and no more than the bound is in memory
// while the temporary file takes the rest.
func FuzzHeld(f *testing.F) {
	f.Add([]byte("run 1\n{\"message\":\"API rate limit exceeded\"}"), uint16(8), []byte{3, 0, 7})
	f.Add(bytes.Repeat([]byte{0, 0xff}, 300), uint16(1), []byte{1})
	f.Add([]byte{}, uint16(0), []byte{})
	f.Fuzz(func(t *testing.T, data []byte, bound uint16, cuts []byte) {
		fuzzbound.Run(t, func() {
			h := &held{dir: t.TempDir(), max: int(bound)}
			defer h.close()
			rest := data
			for i := 0; len(rest) > 0; i++ {
				n := len(rest)
				if len(cuts) > 0 {
					n = min(n, 1+int(cuts[i%len(cuts)]))
				}
				if k, err := h.Write(rest[:n]); k != n || err != nil {
					t.Fatalf("Write: %d, %v", k, err)
				}
				if h.Err != nil || h.mem.Len() > max(int(bound), 0) && h.file != nil {
					t.Fatalf("%d bytes in memory past the bound %d, err %v", h.mem.Len(), bound, h.Err)
				}
				rest = rest[n:]
			}
			var got bytes.Buffer
			if err := h.passOn(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("passed on %q, wrote %q", got.Bytes(), data)
			}
		})
	})
}
