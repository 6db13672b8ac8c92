package cli

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/layoverhq/layover/host"
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
	st, err := openJobStore(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	var raw []byte
	if *data != "" {
		raw = []byte(*data)
	}
	_, err = host.Checkpoint(ctx, st, id, fence, *stage, raw, env.Clock.Now())
	return jobError(err)
}
