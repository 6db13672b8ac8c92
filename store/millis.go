package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/layoverhq/layover/job"
)

// Both stores keep times as whole milliseconds since the Unix epoch, 0 for
// the zero time.

// MS is t in milliseconds since the epoch; 0 for the zero time.
func MS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMS is the UTC time of v milliseconds since the epoch; 0 is the zero
// time.
func FromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// MSTime is t as a store keeps it: cut to the millisecond, in UTC.
func MSTime(t time.Time) time.Time { return FromMS(MS(t)) }

// MSJob is j with every time as a store keeps it (MSTime).
func MSJob(j job.Job) job.Job {
	j.Spec.Deadline = MSTime(j.Spec.Deadline)
	j.CreatedAt, j.UpdatedAt, j.RunAt = MSTime(j.CreatedAt), MSTime(j.UpdatedAt), MSTime(j.RunAt)
	j.ResumeBy, j.LeaseUntil, j.ProgressBy = MSTime(j.ResumeBy), MSTime(j.LeaseUntil), MSTime(j.ProgressBy)
	if j.Checkpoint != nil {
		cp := *j.Checkpoint
		cp.At = MSTime(cp.At)
		j.Checkpoint = &cp
	}
	return j
}

// Submission is j as a store inserts it on SubmitJob at now: the submission
// rule applied (job.Job.Submitted), every time as a store keeps it (MSJob),
// and its spec encoded for the spec column.
func Submission(j job.Job, now time.Time) (job.Job, []byte, error) {
	j, err := j.Submitted(now)
	if err != nil {
		return job.Job{}, nil, err
	}
	j = MSJob(j)
	spec, err := json.Marshal(j.Spec)
	if err != nil {
		return job.Job{}, nil, fmt.Errorf("submit job %s: %w", j.ID, err)
	}
	return j, spec, nil
}
