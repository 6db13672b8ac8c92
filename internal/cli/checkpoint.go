package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/internal/redact"
)

func runCheckpoint(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("checkpoint", "checkpoint --stage S [--data JSON]  (inside a job)")
	stage := fs.String("stage", "", "the last verified stage")
	data := fs.String("data", "", "JSON data a resumed run reads from $LAYOVER_CHECKPOINT")
	storeLoc := storeFlag(fs)
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	if *stage == "" {
		return usageErr("checkpoint: --stage is required")
	}
	if *data != "" && !json.Valid([]byte(*data)) {
		return usageErr("checkpoint: --data is not JSON")
	}
	id, fenceText := env.Getenv("LAYOVER_JOB_ID"), env.Getenv("LAYOVER_FENCE")
	if id == "" || fenceText == "" {
		return usageErr("checkpoint: not inside a job (LAYOVER_JOB_ID and LAYOVER_FENCE are unset)")
	}
	fence, err := strconv.ParseInt(fenceText, 10, 64)
	if err != nil || fence < 0 {
		return usageErr("checkpoint: LAYOVER_FENCE %q is not a fence", fenceText)
	}
	// The stage and the data are stored and shown (status, show --json):
	// neither may hold a secret (docs/secrets.md). The job's own variables
	// are known once its record is read.
	known := knownSecrets(env, *storeLoc, githubToken(ctx, env))
	if err := refuseCheckpointSecret(*stage, *data, known); err != nil {
		return err
	}
	st, err := openJobStore(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	if j, err := st.Job(ctx, id); err == nil {
		if err := refuseCheckpointSecret(*stage, *data, envValues(env, j.Spec.EnvNames)); err != nil {
			return err
		}
	}
	var raw []byte
	if *data != "" {
		raw = []byte(*data)
	}
	_, err = host.Checkpoint(ctx, st, id, fence, *stage, raw, env.Clock.Now())
	return jobError(err)
}

// refuseCheckpointSecret is the usage error for a stage or data holding a
// recognisable secret or one of known; it never quotes the secret. The data
// is read as written and as each string it decodes to, so "\u0067hp_…" is a
// token too, and so is a known secret written with escapes ("p\u0026ss…").
func refuseCheckpointSecret(stage, data string, known []string) error {
	var v any
	_ = json.Unmarshal([]byte(data), &v)
	switch {
	case redact.Contains(stage, known...):
		return usageErr("checkpoint: --stage holds what looks like a secret; nothing was stored")
	case redact.Contains(data, known...) || slices.ContainsFunc(jsonStrings(v), func(s string) bool { return redact.Contains(s, known...) }):
		return usageErr("checkpoint: --data holds what looks like a secret; nothing was stored (a resumed run reads secrets from its environment)")
	}
	return nil
}

// jsonStrings returns every string of a decoded JSON value, object keys
// included.
func jsonStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(append(out, k), jsonStrings(e)...)
		}
		return out
	}
	return nil
}
