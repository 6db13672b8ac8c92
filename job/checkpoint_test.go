package job_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/layoverhq/layover/job"
)

func TestValidateCheckpoint(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, stage, data string
		known             []string
		ok, secret        bool
	}{
		{name: "stage and data", stage: "fetched page 3", data: `{"page":3}`, ok: true},
		{name: "stage alone", stage: "fetched", ok: true},
		{name: "no stage", data: `{}`},
		{name: "stage too long", stage: strings.Repeat("s", job.MaxStageBytes+1)},
		{name: "stage at the bound", stage: strings.Repeat("s", job.MaxStageBytes), ok: true},
		{name: "stage with an escape", stage: "ok\x1b[2J"},
		{name: "stage with a newline", stage: "a\nb"},
		{name: "data not JSON", stage: "s", data: `{page:3}`},
		{name: "data too large", stage: "s", data: `"` + strings.Repeat("x", job.MaxCheckpointData) + `"`},
		{name: "token in the stage", stage: "ghp_abcdefghijklmnopqrstuvwxyz0123456789", secret: true},
		{name: "escaped token in the data", stage: "s", data: `{"t":"\u0067hp_abcdefghijklmnopqrstuvwxyz0123456789"}`, secret: true},
		{name: "known value as a key", stage: "s", data: `{"hunter2hunter2":1}`, known: []string{"hunter2hunter2"}, secret: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := job.ValidateCheckpoint(c.stage, []byte(c.data), c.known...)
			if (err == nil) != c.ok || errors.Is(err, job.ErrSecret) != c.secret {
				t.Fatalf("ValidateCheckpoint: %v; want ok=%v secret=%v", err, c.ok, c.secret)
			}
			if err != nil && (strings.Contains(err.Error(), "ghp_") || strings.Contains(err.Error(), "hunter2")) {
				t.Errorf("the error quotes the secret: %v", err)
			}
		})
	}
}
