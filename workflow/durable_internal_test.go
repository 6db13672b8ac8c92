package workflow

import (
	"bytes"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// FuzzStoredDefinition: no stored definition makes decodeCanonical panic;
// one it reads is stored again as the same bytes from the second round
// on, and a definition's stored form reads back as it was stored, so a
// durable run's coordinator runs the definition flow submit stored.
func FuzzStoredDefinition(f *testing.F) {
	defs := []Definition{
		{Name: "n", Tasks: []Task{{Name: "a", Run: "x"}, {Name: "b", Needs: []string{"a"}, Run: "y", Check: "c", Verify: "v"}}},
		{Name: "n", Timeout: 36 * time.Hour, OnQuota: OnQuota{MaxWait: time.Hour}, Attempts: 5,
			Tasks: []Task{{Name: "r", Agent: []string{"claude", "codex"}, Prompt: "fix it", Resume: ResumeRestart, Quota: []string{"github:core"}, Env: []string{"TOKEN"}}}},
	}
	for _, d := range defs {
		b, err := canonical(d.WithDefaults())
		if err != nil {
			f.Fatal(err)
		}
		back, err := decodeCanonical(b)
		if err != nil {
			f.Fatal(err)
		}
		if again, _ := canonical(back); !bytes.Equal(again, b) {
			f.Fatalf("a definition's stored form reads back as another:\n%s\n%s", b, again)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "{}", "null", `{"timeout":"x"}`, `{"tasks":[{"name":"a","func":true}]}`, `{"on_quota":{"max_wait":"-1h"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Run(t, func() {
			d, err := decodeCanonical(data)
			if err != nil {
				return
			}
			once, err := canonical(d)
			if err != nil {
				t.Fatal(err)
			}
			d2, err := decodeCanonical(once)
			if err != nil {
				t.Fatalf("its own stored form does not read back: %v\n%s", err, once)
			}
			twice, err := canonical(d2)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(once, twice) {
				t.Fatalf("stored form changed on a round trip:\n%s\n%s", once, twice)
			}
		})
	})
}
