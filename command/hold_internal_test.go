package command

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
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
