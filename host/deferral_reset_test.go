package host

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// The reset a deferral's reason declares reads back as written, whatever
// the provider's words before it; a reason without one reads as none.
func FuzzDeclaredReset(f *testing.F) {
	f.Add("quota exhausted: usage limit reached", int64(1790000000))
	f.Add("quota exhausted: resets at noon; resets at ", int64(0))
	f.Add("secondary limit: slow down", int64(-1))
	f.Fuzz(func(t *testing.T, why string, sec int64) {
		fuzzbound.Run(t, func() {
			if len(why) > 4096 {
				return
			}
			if _, ok := DeclaredReset(why); ok && !strings.Contains(why, resetNote) {
				t.Fatalf("%q declares a reset", why)
			}
			reset := time.Unix(sec%(1<<34), 0).UTC()
			got, ok := DeclaredReset(why + resetNote + stageTime(reset))
			if !ok || !got.Equal(reset) {
				t.Fatalf("%q: got %s %v, want %s", why, got, ok, reset)
			}
		})
	})
}
