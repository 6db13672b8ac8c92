package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
)

// testJobsByID holds JobsByID to Job's answers: each id that names a job
// comes back as Job returns it, as of the read (a job changed since its
// submission with its change); an id without a job is left out.
func testJobsByID(t *testing.T, setup jobsSetup) {
	t.Run("AsJobReturnsThem", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, newJob("a"), nil, at(0))
		mustSubmit(t, ctx, s, deferredJob("b", at(time.Hour)), nil, at(time.Second))
		mustSubmit(t, ctx, s, newJob("c"), nil, at(2*time.Second))
		mustSubmit(t, ctx, s, newJob("not-asked"), nil, at(3*time.Second))
		mustApply(t, ctx, s, "c", job.NoFence, job.Change{To: job.Cancelled, Now: at(time.Minute), Reason: "cancel"})

		got, err := s.JobsByID(ctx, []string{"c", "missing", "a", "b", "a"})
		if err != nil {
			t.Fatalf("JobsByID: %v", err)
		}
		if keys := sortedKeys(got); !slices.Equal(keys, []string{"a", "b", "c"}) {
			t.Fatalf("JobsByID(c, missing, a, b, a) holds %v, want [a b c]", keys)
		}
		for id, j := range got {
			checkJob(t, "JobsByID", j, mustJob(t, ctx, s, id))
		}
		if got["c"].State != job.Cancelled {
			t.Errorf("JobsByID: c is %s, want cancelled (its change)", got["c"].State)
		}
	})

	t.Run("NoneAndUnknown", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, newJob("a"), nil, at(0))
		for _, ids := range [][]string{nil, {}, {"x", "y"}} {
			got, err := s.JobsByID(ctx, ids)
			if err != nil || got == nil || len(got) != 0 {
				t.Errorf("JobsByID(%q) = %v, %v; want an empty map", ids, sortedKeys(got), err)
			}
		}
	})

	// More ids than SQLite's default limit of bound variables (32,766): one
	// call still reads every job named.
	t.Run("ManyIDs", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		var ids, want []string
		for i := range 40000 {
			ids = append(ids, fmt.Sprintf("j%05d", i))
		}
		for i := 0; i < len(ids); i += 4000 {
			mustSubmit(t, ctx, s, newJob(ids[i]), nil, at(time.Duration(i)*time.Millisecond))
			want = append(want, ids[i])
		}
		got, err := s.JobsByID(ctx, ids)
		if err != nil {
			t.Fatalf("JobsByID of %d ids: %v", len(ids), err)
		}
		if keys := sortedKeys(got); !slices.Equal(keys, want) {
			t.Errorf("JobsByID of %d ids holds %v, want %v", len(ids), keys, want)
		}
	})
}

func sortedKeys(m map[string]job.Job) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
