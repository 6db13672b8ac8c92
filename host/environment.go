package host

// A job's environment: the variables it declared, the LAYOVER_* ones the
// host adds, and the shell its hooks run in.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/layoverhq/layover/job"
)

// missingEnv names the first variable the job declared that the host lacks.
func (h *Host) missingEnv(j job.Job) string {
	for _, name := range j.Spec.EnvNames {
		found := false
		for _, kv := range h.cfg.Env {
			if k, _, _ := strings.Cut(kv, "="); k == name {
				found = true
				break
			}
		}
		if !found {
			return name
		}
	}
	return ""
}

// jobEnv is the host's environment plus the job's LAYOVER_* variables.
func (f *Jobs) jobEnv(j job.Job, attemptID string) []string {
	env := slices.DeleteFunc(slices.Clone(f.cfg.Env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "LAYOVER_JOB_ID", "LAYOVER_ATTEMPT_ID", "LAYOVER_FENCE", "LAYOVER_CHECKPOINT":
			return true
		case "LAYOVER_RUN_ID", "LAYOVER_TASK", "LAYOVER_IDEMPOTENCY_KEY":
			return j.Spec.Flow != nil
		}
		return false
	})
	env = append(env, "LAYOVER_JOB_ID="+j.ID, "LAYOVER_ATTEMPT_ID="+attemptID,
		"LAYOVER_FENCE="+strconv.FormatInt(j.Fence, 10))
	if fl := j.Spec.Flow; fl != nil {
		// A workflow task's job: the task's names, as an in-process run
		// gives them (docs/workflows.md).
		env = append(env, "LAYOVER_RUN_ID="+fl.Run, "LAYOVER_TASK="+fl.Task,
			"LAYOVER_IDEMPOTENCY_KEY="+fl.Run+":"+fl.Task)
	}
	if f.cfg.StoreLocation != "" {
		env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "LAYOVER_STORE=") }),
			"LAYOVER_STORE="+f.cfg.StoreLocation)
	}
	if j.Checkpoint != nil {
		path := filepath.Join(f.cfg.CheckpointDir, j.ID+".json")
		data := j.Checkpoint.Data
		if len(data) == 0 {
			data = []byte("null")
		}
		if err := os.WriteFile(path, data, 0o600); err == nil {
			env = append(env, "LAYOVER_CHECKPOINT="+path)
		}
	}
	return env
}

// shell runs a hook command with sh -c in the job's directory and
// environment, returning its exit code and stdout.
func (f *Jobs) shell(ctx context.Context, j job.Job, command string, extra []string) (int, []byte, error) {
	cmd := exec.CommandContext(ctx, f.cfg.Shell, "-c", command)
	cmd.Dir = j.Spec.Workdir
	cmd.Env = append(f.jobEnv(j, ""), extra...)
	// A process the hook left behind may hold its output open: once the
	// hook ended (or ctx did), its output is read no longer than this.
	cmd.WaitDelay = outputDelay
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.Bytes(), nil
	}
	if err != nil {
		return -1, nil, err
	}
	return 0, out.Bytes(), nil
}

// envLookup reads a variable from env (NAME=value entries, the last one
// winning), "" when it is not set.
func envLookup(env []string) func(string) string {
	return func(name string) string {
		v := ""
		for _, kv := range env {
			if k, val, ok := strings.Cut(kv, "="); ok && k == name {
				v = val
			}
		}
		return v
	}
}
