package postgres

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

var groupNow = time.Date(2026, 11, 10, 14, 0, 0, 0, time.UTC)

func openGroupStore(t *testing.T) (*Store, string) {
	t.Helper()
	dsn := pgtest.Schema(t)
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dsn
}

// submitted submits ready jobs with these ids.
func submitted(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, _, err := s.SubmitJob(t.Context(), storetest.BenchJob(id, groupNow), nil, groupNow); err != nil {
			t.Fatal(err)
		}
	}
}

// setStage is a change that sets a job's stage.
func setStage(stage string) job.Change {
	return job.Change{Now: groupNow.Add(time.Second), Mutate: func(j *job.Job) { j.Stage = stage }}
}

func applyWrite(id string, fence int64, ch job.Change) *jobCall {
	return &jobCall{Value: &jobWrite{id: id, fence: fence, ch: &ch}}
}

func submitWrite(t *testing.T, id string) *jobCall {
	t.Helper()
	sub, err := newSubmission(storetest.BenchJob(id, groupNow), &job.Receipt{JSON: storetest.Receipt, IssuedAt: groupNow}, groupNow)
	if err != nil {
		t.Fatal(err)
	}
	return &jobCall{Value: &jobWrite{id: id, sub: sub}}
}

func stageOf(t *testing.T, s *Store, id string) string {
	t.Helper()
	j, err := s.Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j.Stage
}

// A value the server refuses (text with a NUL) in one write of a group
// fails that write alone: the group's other changes and submissions
// commit.
func TestGroupRefusedWriteFailsAlone(t *testing.T) {
	t.Parallel()
	s, _ := openGroupStore(t)
	submitted(t, s, "a", "b", "c")
	calls := []*jobCall{
		applyWrite("a", 0, setStage("a done")),
		applyWrite("b", 0, setStage("b\x00")),
		submitWrite(t, "d"),
		applyWrite("c", 0, setStage("c done")),
	}
	s.commitJobWrites(t.Context(), calls)

	var pe *pgconn.PgError
	if err := calls[1].Err(); !errors.As(err, &pe) {
		t.Errorf("the refused write: %v, want the server's error", err)
	}
	for _, i := range []int{0, 2, 3} {
		if err := calls[i].Err(); err != nil {
			t.Errorf("write %d (%s) failed with its group: %v", i, calls[i].Value.id, err)
		}
	}
	if got := stageOf(t, s, "a") + "|" + stageOf(t, s, "b") + "|" + stageOf(t, s, "c"); got != "a done||c done" {
		t.Errorf("stages a|b|c = %q, want %q", got, "a done||c done")
	}
	if !calls[2].Value.created {
		t.Error("the submission in the group was not created")
	}
	h, err := s.JobHistory(t.Context(), "d")
	if err != nil || len(h.Receipts) != 1 || len(h.Transitions) != 1 {
		t.Errorf("history of the submitted job: %+v, %v", h, err)
	}
}

// A job changed by another transaction between the group's read and its
// write is not overwritten: the change is checked and applied again on
// the new version. A concurrent renewal is kept; a concurrent operator
// cancel (a new fence) makes the holder's change fail as stale.
func TestGroupChangedAfterReadIsCheckedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, dsn := openGroupStore(t)
	other, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	submitted(t, s, "renewed", "cancelled")
	claimed, err := s.ClaimJobs(ctx, "host-a", groupNow, time.Minute, 2)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("ClaimJobs = %v, %v", claimed, err)
	}

	var once sync.Once
	s.afterRead = func() {
		once.Do(func() {
			held := map[string]int64{"renewed": 1}
			if lost, err := other.RenewLeases(ctx, "host-a", held, groupNow.Add(time.Second), time.Hour); err != nil || len(lost) != 0 {
				t.Errorf("RenewLeases = %v, %v", lost, err)
			}
			if _, err := other.ApplyJob(ctx, "cancelled", -1, job.Change{To: job.Cancelled, Reason: "operator",
				Now: groupNow.Add(time.Second)}); err != nil {
				t.Error(err)
			}
		})
	}
	calls := []*jobCall{applyWrite("renewed", 1, setStage("working")), applyWrite("cancelled", 1, setStage("working"))}
	s.commitJobWrites(ctx, calls)

	if err := calls[0].Err(); err != nil {
		t.Fatalf("the change to the renewed job: %v", err)
	}
	j, err := s.Job(ctx, "renewed")
	if err != nil {
		t.Fatal(err)
	}
	if want := groupNow.Add(time.Second + time.Hour); !j.LeaseUntil.Equal(want) || j.Stage != "working" {
		t.Errorf("renewed job: lease until %v, stage %q; want the renewal's %v kept and stage working", j.LeaseUntil, j.Stage, want)
	}
	if out := calls[0].Value.out; !out.LeaseUntil.Equal(j.LeaseUntil) || out.Stage != "working" {
		t.Errorf("ApplyJob's result: lease until %v, stage %q; want the job as stored", out.LeaseUntil, out.Stage)
	}
	if err := calls[1].Err(); !errors.Is(err, job.ErrStaleFence) {
		t.Errorf("the holder's change to the job the operator cancelled: %v, want job.ErrStaleFence", err)
	}
	if j, err := s.Job(ctx, "cancelled"); err != nil || j.State != job.Cancelled || j.Stage == "working" {
		t.Errorf("cancelled job: %+v, %v", j, err)
	}
}

// Writes of one job in one batch apply in queue order, each seeing those
// before it, a submission included.
func TestGroupSameJobInQueueOrder(t *testing.T) {
	t.Parallel()
	s, _ := openGroupStore(t)
	submitted(t, s, "a")
	appendStage := func(x string) job.Change {
		return job.Change{Now: groupNow, Mutate: func(j *job.Job) { j.Stage += x }}
	}
	calls := []*jobCall{
		applyWrite("a", 0, appendStage("1")),
		applyWrite("b", 0, appendStage("!")), // not yet submitted
		submitWrite(t, "b"),
		applyWrite("a", 0, appendStage("2")),
		applyWrite("b", 0, appendStage("3")),
	}
	s.commitJobWrites(t.Context(), calls)
	if err := calls[1].Err(); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("a change queued before its job's submission: %v, want job.ErrNotFound", err)
	}
	for _, i := range []int{0, 2, 3, 4} {
		if err := calls[i].Err(); err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if got := calls[0].Value.out.Stage + " " + calls[3].Value.out.Stage; got != "1 12" {
		t.Errorf("a's stages as returned: %q, want %q", got, "1 12")
	}
	if got := stageOf(t, s, "a") + " " + stageOf(t, s, "b"); got != "12 3" {
		t.Errorf("stored stages: %q, want %q", got, "12 3")
	}
}

// A Mutate that panics fails its own call (whose caller panics); a job
// whose stored spec does not decode fails the change to it alone; the
// group's other changes commit.
func TestGroupBadChangesFailAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := openGroupStore(t)
	submitted(t, s, "a", "b", "c")
	if _, err := s.pool.Exec(ctx, `UPDATE jobs SET spec = '{"argv":"not a list"}' WHERE id = 'c'`); err != nil {
		t.Fatal(err)
	}
	calls := []*jobCall{
		applyWrite("a", 0, job.Change{Now: groupNow, Mutate: func(*job.Job) { panic("bad mutate") }}),
		applyWrite("b", 0, setStage("b done")),
		applyWrite("c", 0, setStage("c done")),
	}
	s.commitJobWrites(ctx, calls)
	if !calls[0].Panicked() {
		t.Error("the panicking change did not panic its call")
	}
	if err := calls[1].Err(); err != nil || stageOf(t, s, "b") != "b done" {
		t.Errorf("the good change: %v, stage %q", err, stageOf(t, s, "b"))
	}
	if err := calls[2].Err(); err == nil {
		t.Error("the change to the job with a damaged spec succeeded")
	}
	if got := stageOf(t, s, "a"); got != "" {
		t.Errorf("the panicking change wrote stage %q", got)
	}
}

// Many callers of two stores changing the same few jobs at once lose no
// change: each adds one to a job's probes.
func TestGroupNoLostChanges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, dsn := openGroupStore(t)
	other, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const jobs, callers, each = 4, 32, 10
	var ids []string
	for i := range jobs {
		ids = append(ids, "j"+strconv.Itoa(i))
	}
	submitted(t, s, ids...)
	var wg sync.WaitGroup
	for c := range callers {
		st := s
		if c%2 == 1 {
			st = other
		}
		wg.Go(func() {
			for i := range each {
				id := ids[(c+i)%jobs]
				if _, err := st.ApplyJob(ctx, id, 0, job.Change{Now: groupNow, Mutate: func(j *job.Job) { j.Probes++ }}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, id := range ids {
		j, err := s.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		total += j.Probes
	}
	if total != callers*each {
		t.Errorf("probes add up to %d, want %d: changes were lost", total, callers*each)
	}
}
