package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// Jobs keep their times in whole milliseconds, UTC, like the ledger (the
// spec's deadline too), and a zero time as 0. Beyond store.Store's doc
// comments, which storetest.RunJobs checks, the store keeps these rules
// (store/sqlite keeps the same):
//
//   - ID, Spec, CreatedAt, Fence, LeaseOwner and LeaseUntil belong to the
//     store: Mutate cannot change them, nor State (Change.To does).
//   - A change that moves a job to any state but running ends its lease and
//     its progress deadline. Only ready, resumable and running jobs are ever
//     claimed, and a job can only be running while claimed (a CHECK
//     constraint holds the database to it too).
//   - When the store takes a job from the host running it (an operator
//     change, a sweep), it closes that run's open attempts: "killed" when
//     the job is cancelled, else "lease-lost".
//   - The sweep clears the Stage of the jobs it moves; the host writes a
//     new one with its next change.
//
// Every write that changes a job holds its row lock: ApplyJob writes the
// row only if it is still the version its change was checked against (a
// compare-and-set on xmin, else the change is checked again against the
// row locked FOR NO KEY UPDATE: groupcommit.go), ClaimJobs and SweepJobs
// lock the rows they take with SKIP LOCKED (a job another transaction holds
// is left to the next claim or sweep, and NextJobDue keeps reporting it
// due), RenewLeases locks its rows in id order. So the fence check and the
// write it guards are one atomic step, and a transition's or receipt's seq,
// taken from a counter on the row it replaces, never repeats.

// jobColumnNames are the columns of a job record, in the order scanJob
// reads them.
var jobColumnNames = []string{"id", "spec", "state", "stage", "ownership", "created_at_ms", "updated_at_ms",
	"run_at_ms", "resume_by_ms", "fence", "lease_owner", "lease_until_ms", "progress_by_ms", "attempts",
	"probes", "approved", "session_id", "checkpoint_stage", "checkpoint_data", "checkpoint_at_ms", "runs", "secondaries",
	"cleanup"}

var (
	jobColumns = strings.Join(jobColumnNames, ", ")
	// qualifiedJobColumns are jobColumns of the table jobs, for statements
	// that join it.
	qualifiedJobColumns = "jobs." + strings.Join(jobColumnNames, ", jobs.")
)

// The job state lists the sweep and NextJobDue filter on; each matches an
// index's predicate word for word.
const (
	unfinishedStates = `('ready', 'running', 'deferred', 'resumable', 'blocked')`
	waitingStates    = `('deferred', 'resumable')`
	claimableStates  = `('ready', 'resumable')`
)

var (
	selectJob = `SELECT ` + jobColumns + ` FROM jobs WHERE id = $1`
	// selectJobsByID reads the jobs whose ids the array $1 holds.
	selectJobsByID = `SELECT ` + jobColumns + ` FROM jobs WHERE id = ANY($1::text[])`
	// claimJobs takes up to $4 due jobs with no live lease, in claim order
	// (highest priority, then earliest run_at, oldest, id), skipping the
	// rows other transactions hold; each claim bumps the fence. Unclaimed
	// jobs are read from jobs_claim in that order, so the cost does not
	// grow with the number of jobs claimed and not yet running; jobs whose
	// lease ran out (a host died between claim and run, and no sweep has
	// freed them yet) from jobs_lease. Of the two, the first $4 in claim
	// order are taken; the other rows locked are let go when the statement
	// ends. RETURNING gives no order: ClaimJobs sorts.
	claimJobs = `WITH unclaimed AS (
	SELECT id, priority, run_at_ms, created_at_ms FROM jobs
	WHERE state IN ` + claimableStates + ` AND lease_owner = '' AND (state = 'resumable' OR run_at_ms <= $3)
	ORDER BY priority DESC, run_at_ms, created_at_ms, id
	LIMIT $4
	FOR NO KEY UPDATE SKIP LOCKED
), lapsed AS (
	SELECT id, priority, run_at_ms, created_at_ms FROM jobs
	WHERE lease_owner <> '' AND lease_until_ms <= $3 AND state IN ` + claimableStates + `
		AND (state = 'resumable' OR run_at_ms <= $3)
	ORDER BY priority DESC, run_at_ms, created_at_ms, id
	LIMIT $4
	FOR NO KEY UPDATE SKIP LOCKED
), due AS (
	SELECT id FROM (SELECT * FROM unclaimed UNION ALL SELECT * FROM lapsed) AS candidate
	ORDER BY priority DESC, run_at_ms, created_at_ms, id
	LIMIT $4
)
UPDATE jobs SET fence = jobs.fence + 1, lease_owner = $1, lease_until_ms = $2, updated_at_ms = $3
FROM due WHERE jobs.id = due.id
RETURNING ` + qualifiedJobColumns

	// renewLeases extends to $4 the leases $1 holds among the ids $2 at
	// the fences $3, locking them in id order; it returns the ids renewed.
	renewLeases = `WITH held AS (
	SELECT j.id FROM jobs j JOIN unnest($2::text[], $3::bigint[]) AS h (id, fence)
		ON j.id = h.id AND j.fence = h.fence
	WHERE j.lease_owner = $1
	ORDER BY j.id
	FOR NO KEY UPDATE OF j
)
UPDATE jobs SET lease_until_ms = $4 FROM held WHERE jobs.id = held.id RETURNING jobs.id`

	listJobs        = `SELECT ` + jobColumns + ` FROM jobs ORDER BY created_at_ms, id`
	listJobsInState = `SELECT ` + jobColumns + ` FROM jobs WHERE state = $1 ORDER BY created_at_ms, id`
	countJobs       = `SELECT state, count(*) FROM jobs GROUP BY state`
	// pendingCleanups reads the armed cleanups of ended jobs (through
	// jobs_cleanup_armed), oldest update first.
	pendingCleanups = `SELECT ` + jobColumns + ` FROM jobs
	WHERE cleanup = 'armed' AND state IN ('cancelled', 'failed') ORDER BY updated_at_ms, id LIMIT $1`

	selectAttempts = `SELECT attempt_id, fence, started_at_ms, ended_at_ms, outcome, exit_code, waited_s
	FROM job_attempt WHERE job_id = $1 ORDER BY id`
	selectTransitions = `SELECT from_state, to_state, at_ms, reason FROM job_transition
	WHERE job_id = $1 ORDER BY seq`
	selectReceipts = `SELECT seq, json, issued_at_ms, host_id, fence FROM job_receipt WHERE job_id = $1 ORDER BY seq`
	selectChecks   = `SELECT fence, at_ms, triggered_by, exit_code, result, detail FROM job_check
	WHERE job_id = $1 ORDER BY seq`

	// nextJobDue is the earliest of what SweepJobs and ClaimJobs look for,
	// and of the credential re-checks of auth-wait jobs (their RunAt; none
	// when it is 0), one index look-up each (NULL: nothing). A deadline, resume_by or
	// progress deadline is passed one millisecond after it (the sweep's
	// "<"). "fence >= 0", true of every job, matches jobs_claimable_at's
	// predicate (see migration 003).
	nextJobDue = `SELECT LEAST(
	(SELECT min(run_at_ms) FROM jobs WHERE state IN ` + claimableStates + ` AND lease_owner = '' AND fence >= 0),
	(SELECT min(run_at_ms) FROM jobs WHERE state = 'deferred' AND ownership = 'retained'),
	(SELECT min(lease_until_ms) FROM jobs WHERE lease_owner <> ''),
	(SELECT min(progress_by_ms) + 1 FROM jobs WHERE progress_by_ms > 0 AND state = 'running'),
	(SELECT min(resume_by_ms) + 1 FROM jobs WHERE resume_by_ms > 0 AND state IN ` + waitingStates + `),
	(SELECT min(deadline_ms) + 1 FROM jobs WHERE deadline_ms > 0 AND state IN ` + unfinishedStates + `),
	(SELECT min(run_at_ms) FROM jobs WHERE run_at_ms > 0 AND state = 'auth-wait'),
	(SELECT min(deadline_ms) + 1 FROM jobs WHERE deadline_ms > 0 AND state = 'auth-wait'))`

	upsertHost = `INSERT INTO host (id, hostname, pid, started_at_ms, last_seen_ms, lease_ms) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid,
	started_at_ms = excluded.started_at_ms, last_seen_ms = excluded.last_seen_ms, lease_ms = excluded.lease_ms`
	// A heartbeat that commits late never moves last_seen back.
	heartbeatHost = `UPDATE host SET last_seen_ms = GREATEST(last_seen_ms, $2) WHERE id = $1`
	deleteHost    = `DELETE FROM host WHERE id = $1`
	selectHosts   = `SELECT id, hostname, pid, started_at_ms, last_seen_ms, lease_ms FROM host ORDER BY id`
)

// sweepStep is one rule of the sweep: the jobs cond selects ($1 is now,
// in ms) are moved by set, which may read the row's old values. A job
// whose state changes gets a transition for reason; the open attempts of
// the claim it had are closed with outcome ("": none to close).
type sweepStep struct {
	cond, set, reason, outcome string
	// fails says the step fails jobs: the first of their ids are
	// SweepResult.Failed.
	fails bool
}

// The sweep's rules, in the order it applies them; a job moved by one is
// out of the reach of those after it. A deadline or resume_by has passed
// when it is before now: a receipt is still resumable at its resume_by
// (receipt.Validate). A lease is lost at its end.
var sweepSteps = [...]sweepStep{
	{ // PastDue
		cond:    `deadline_ms > 0 AND state IN ` + unfinishedStates + ` AND deadline_ms < $1`,
		set:     cancelSet,
		reason:  job.ReasonPastDue,
		outcome: job.OutcomeKilled,
	},
	{ // PastDue: a job still waiting for credentials at its deadline
		// failed. It holds no claim (leaving running ended it).
		cond:   `deadline_ms > 0 AND state = 'auth-wait' AND deadline_ms < $1`,
		set:    `state = 'failed', stage = '', updated_at_ms = $1, transition_seq = transition_seq + 1`,
		reason: job.ReasonPastDue,
		fails:  true,
	},
	{ // Expired
		cond:    `resume_by_ms > 0 AND state IN ` + waitingStates + ` AND resume_by_ms < $1`,
		set:     cancelSet,
		reason:  job.ReasonExpired,
		outcome: job.OutcomeKilled,
	},
	{ // Reclaimed: a lease ran out. Only a running job changes state.
		cond: `lease_owner <> '' AND lease_until_ms <= $1`,
		set: `state = CASE state WHEN 'running' THEN 'ready' ELSE state END,
		stage = CASE state WHEN 'running' THEN '' ELSE stage END, updated_at_ms = $1,
		lease_owner = '', lease_until_ms = 0, progress_by_ms = 0,
		transition_seq = transition_seq + CASE state WHEN 'running' THEN 1 ELSE 0 END`,
		reason:  job.ReasonLeaseLost,
		outcome: job.OutcomeLeaseLost,
	},
	{ // Reclaimed: a progress deadline passed. The job may still hold a
		// live lease: it may start again only once that lease would have
		// ended, so that the process it had is gone (its host kills it on
		// losing the lease) before another starts.
		cond: `progress_by_ms > 0 AND state = 'running' AND progress_by_ms < $1`,
		set: `state = 'ready', stage = '', updated_at_ms = $1, run_at_ms = GREATEST(run_at_ms, lease_until_ms),
		lease_owner = '', lease_until_ms = 0, progress_by_ms = 0, transition_seq = transition_seq + 1`,
		reason:  job.ReasonProgress,
		outcome: job.OutcomeLeaseLost,
	},
	{ // Woken
		cond:   `state = 'deferred' AND ownership = 'retained' AND run_at_ms <= $1`,
		set:    `state = 'resumable', stage = '', updated_at_ms = $1, transition_seq = transition_seq + 1`,
		reason: job.ReasonWakeUp,
	},
}

// cancelSet cancels a job, taking its claim if it has one (a new fence).
const cancelSet = `state = 'cancelled', stage = '', updated_at_ms = $1,
	fence = fence + CASE WHEN lease_owner <> '' THEN 1 ELSE 0 END,
	lease_owner = '', lease_until_ms = 0, progress_by_ms = 0, transition_seq = transition_seq + 1`

// sweepSQL is step's statement: it locks the jobs it selects (skipping
// those another transaction holds), moves them, records the transitions
// ($2: reason) and closes the attempts ($3: outcome), and counts the jobs
// moved.
func sweepSQL(step sweepStep) string {
	// due's columns have names of their own, so that set reads the job's.
	q := `WITH due AS (
	SELECT id AS due_id, state AS from_state, fence AS old_fence, lease_owner AS old_owner
	FROM jobs WHERE ` + step.cond + `
	ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
), moved AS (
	UPDATE jobs SET ` + step.set + ` FROM due WHERE jobs.id = due.due_id
	RETURNING jobs.id, due.from_state, jobs.state AS to_state, jobs.transition_seq AS seq,
		due.old_fence, due.old_owner
), transition AS (
	INSERT INTO job_transition (job_id, seq, from_state, to_state, at_ms, reason)
	SELECT id, seq, from_state, to_state, $1, $2 FROM moved WHERE from_state <> to_state
)`
	if step.outcome != "" {
		q += `, attempt AS (
	UPDATE job_attempt SET ended_at_ms = $1, outcome = $3 FROM moved
	WHERE job_attempt.job_id = moved.id AND job_attempt.fence = moved.old_fence
		AND moved.old_owner <> '' AND job_attempt.ended_at_ms = 0
)`
	}
	// The first moved ids, for SweepResult.Failed.
	return q + `
SELECT (SELECT count(*) FROM moved),
	ARRAY(SELECT id FROM moved ORDER BY id LIMIT ` + strconv.Itoa(store.MaxSweptFailed) + `)`
}

// sweepQueries are the statements of sweepSteps, built on first use.
var sweepQueries = sync.OnceValue(func() (qs [len(sweepSteps)]string) {
	for i, st := range sweepSteps {
		qs[i] = sweepSQL(st)
	}
	return qs
})

// SubmitJob implements store.Store, group-committed with other job writes
// (see groupcommit.go): the job as job.Job.Submitted makes it. The job,
// its transition and its receipt are one statement.
func (s *Store) SubmitJob(ctx context.Context, j job.Job, rc *job.Receipt, now time.Time) (job.Job, bool, error) {
	sub, err := newSubmission(j, rc, now)
	if err != nil {
		return job.Job{}, false, err
	}
	j = sub.j
	w := &jobWrite{id: j.ID, sub: sub}
	if err := s.writes.Do(ctx, w); err != nil {
		return job.Job{}, false, wrapErr("submit job "+j.ID, err)
	}
	if w.created {
		return j, true, nil
	}
	old, err := s.Job(ctx, j.ID)
	switch {
	case err != nil:
		return job.Job{}, false, err
	case !old.Spec.Equal(j.Spec):
		return job.Job{}, false, wrapErr("submit job "+j.ID, job.ErrConflict)
	}
	return old, false, nil
}

// newSubmission is j as SubmitJob inserts it at now, with its receipt.
func newSubmission(j job.Job, rc *job.Receipt, now time.Time) (*submission, error) {
	j, spec, err := store.Submission(j, now)
	if err != nil {
		return nil, err
	}
	return &submission{j: j, spec: spec, rc: rc}, nil
}

// Job implements store.Store.
func (s *Store) Job(ctx context.Context, id string) (job.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, selectJob, id))
	if err != nil {
		return job.Job{}, wrapErr("job "+id, notFound(err))
	}
	return j, nil
}

// JobsByID implements store.Store.
func (s *Store) JobsByID(ctx context.Context, ids []string) (map[string]job.Job, error) {
	out := make(map[string]job.Job, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	jobs, err := collectJobs(s.pool.Query(ctx, selectJobsByID, ids))
	if err != nil {
		return nil, wrapErr("jobs by id", err)
	}
	for _, j := range jobs {
		out[j.ID] = j
	}
	return out, nil
}

// ListJobs implements store.Store.
func (s *Store) ListJobs(ctx context.Context, state job.State) ([]job.Job, error) {
	query, args := listJobs, []any(nil)
	if state != "" {
		query, args = listJobsInState, []any{string(state)}
	}
	jobs, err := collectJobs(s.pool.Query(ctx, query, args...))
	return jobs, wrapErr("list jobs", err)
}

// PendingCleanups implements store.Store.
func (s *Store) PendingCleanups(ctx context.Context, limit int) ([]job.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	jobs, err := collectJobs(s.pool.Query(ctx, pendingCleanups, limit))
	return jobs, wrapErr("pending cleanups", err)
}

// CountJobs implements store.Store. States without jobs are left out.
func (s *Store) CountJobs(ctx context.Context) (map[job.State]int, error) {
	rows, err := s.pool.Query(ctx, countJobs)
	if err != nil {
		return nil, wrapErr("count jobs", err)
	}
	out := map[job.State]int{}
	var st string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		out[job.State(st)] = n
		return nil
	})
	if err != nil {
		return nil, wrapErr("count jobs", err)
	}
	return out, nil
}

// JobHistory implements store.Store. The four lists are read from one
// snapshot (a read-only REPEATABLE READ transaction).
func (s *Store) JobHistory(ctx context.Context, id string) (job.History, error) {
	var h job.History
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			h = job.History{}
			exists := false
			b := &pgx.Batch{}
			b.Queue(`SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1)`, id).QueryRow(func(row pgx.Row) error {
				return row.Scan(&exists)
			})
			b.Queue(selectAttempts, id).Query(func(rows pgx.Rows) error {
				var err error
				h.Attempts, err = pgx.CollectRows(rows, scanAttempt)
				return err
			})
			b.Queue(selectTransitions, id).Query(func(rows pgx.Rows) error {
				var err error
				h.Transitions, err = pgx.CollectRows(rows, scanTransition)
				return err
			})
			b.Queue(selectReceipts, id).Query(func(rows pgx.Rows) error {
				var err error
				h.Receipts, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (job.Receipt, error) {
					rc := job.Receipt{JobID: id}
					var issued int64
					err := row.Scan(&rc.Seq, &rc.JSON, &issued, &rc.HostID, &rc.Fence)
					rc.IssuedAt = store.FromMS(issued)
					return rc, err
				})
				return err
			})
			b.Queue(selectChecks, id).Query(func(rows pgx.Rows) error {
				var err error
				h.Checks, err = pgx.CollectRows(rows, scanCheck)
				return err
			})
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			if !exists {
				return job.ErrNotFound
			}
			return nil
		})
	if err != nil {
		return job.History{}, wrapErr("history of job "+id, err)
	}
	return h, nil
}

func scanAttempt(row pgx.CollectableRow) (job.Attempt, error) {
	var a job.Attempt
	var started, ended int64
	var exit *int64
	if err := row.Scan(&a.ID, &a.Fence, &started, &ended, &a.Outcome, &exit, &a.WaitedS); err != nil {
		return job.Attempt{}, err
	}
	a.StartedAt, a.EndedAt, a.ExitCode = store.FromMS(started), store.FromMS(ended), intOrNil(exit)
	return a, nil
}

func scanCheck(row pgx.CollectableRow) (job.Check, error) {
	var c job.Check
	var at int64
	var exit *int64
	err := row.Scan(&c.Fence, &at, &c.Trigger, &exit, &c.Result, &c.Detail)
	c.At, c.ExitCode = store.FromMS(at), intOrNil(exit)
	return c, err
}

// intOrNil is an exit code as read: nil for NULL.
func intOrNil(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// int64OrNil is an exit code as written: nil for none.
func int64OrNil(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}

func scanTransition(row pgx.CollectableRow) (job.Transition, error) {
	var tr job.Transition
	var from, to string
	var at int64
	err := row.Scan(&from, &to, &at, &tr.Reason)
	tr.From, tr.To, tr.At = job.State(from), job.State(to), store.FromMS(at)
	return tr, err
}

// ApplyJob implements store.Store, group-committed with other job writes
// (see groupcommit.go): in one transaction that locks the job's row, the
// fence and the change are checked against it, and the record is written
// with its transition, attempt and receipt. Mutate runs inside that
// transaction, holding the row lock, on the store's writer: it must be
// quick and must not call the store's writing methods, which would wait
// for the very transaction it holds open. Should the server roll the
// transaction back (a deadlock, a value it cannot store in another write
// of the group), the change is applied again from a fresh read, Mutate
// included.
func (s *Store) ApplyJob(ctx context.Context, id string, fence int64, ch job.Change) (job.Job, error) {
	w := &jobWrite{id: id, fence: fence, ch: &ch}
	if err := s.writes.Do(ctx, w); err != nil {
		return job.Job{}, wrapErr("apply to job "+id, err)
	}
	return w.out, nil
}

// rollback ends the transaction c is in, if any.
func rollback(ctx context.Context, c *pgxpool.Conn) {
	if c.Conn().PgConn().TxStatus() != 'I' {
		// Best effort: the caller returns the error that got here. Should
		// the ROLLBACK fail, the connection is still in a transaction and
		// Release closes it rather than reuse it.
		_, _ = c.Exec(ctx, "ROLLBACK")
	}
}

// ClaimJobs implements store.Store: one statement, in a transaction that
// also sets claimPlan, all in one round trip. The claims and their fences
// are one transaction. Jobs another transaction holds are skipped, so
// concurrent claimers on any host never wait for, nor share, a job.
func (s *Store) ClaimJobs(ctx context.Context, hostID string, now time.Time, lease time.Duration, limit int) ([]job.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []job.Job
	err := s.txBatch(ctx, func(b *pgx.Batch) {
		b.Queue(claimPlan)
		b.Queue(claimJobs, hostID, store.MS(now.Add(lease)), store.MS(now), limit).Query(func(rows pgx.Rows) error {
			var err error
			out, err = collectJobs(rows, nil)
			return err
		})
	})
	if err != nil {
		return nil, wrapErr("claim jobs", err)
	}
	slices.SortFunc(out, func(a, b job.Job) int {
		return cmp.Or(-cmp.Compare(a.Spec.Priority, b.Spec.Priority), a.RunAt.Compare(b.RunAt),
			a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// claimPlan makes the claim read jobs_claim in claim order and stop at its
// limit, as it must for its cost not to grow with the queue. The planner
// picks that plan by itself once it has statistics; without them (a new
// store), or with stale ones (a burst of submissions into an idle store),
// it may think a handful of jobs are claimable and sort them all instead,
// every claim, until autovacuum next analyzes the table (seen with 40,000
// jobs queued: 0.3 s a claim rather than 1 ms). With sorts priced out, the
// index order is the plan left; the two sorts the claim cannot avoid, of
// at most 2×limit candidates, still run. Pricing them out makes the plan's
// estimated cost huge, which would have the server compile it to machine
// code (JIT) at every claim: JIT is off too. Both only for the claim's
// transaction.
const claimPlan = `SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true)`

// txBatch runs the queries build queues in one explicit transaction, sent
// with its BEGIN and COMMIT in one round trip. A transaction the server
// rolled back for a deadlock or a serialization failure is built and sent
// again.
func (s *Store) txBatch(ctx context.Context, build func(*pgx.Batch)) error {
	return retry(ctx, func() error {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		build(b)
		// A query that fails aborts the transaction, and the server skips
		// what follows it, the COMMIT too.
		b.Queue("COMMIT")
		if err := c.SendBatch(ctx, b).Close(); err != nil {
			rollback(ctx, c)
			return err
		}
		return nil
	})
}

// RenewLeases implements store.Store: one statement. lost is sorted.
func (s *Store) RenewLeases(ctx context.Context, hostID string, held map[string]int64, now time.Time, lease time.Duration) ([]string, error) {
	if len(held) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(held))
	for id := range held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fences := make([]int64, len(ids))
	for i, id := range ids {
		fences[i] = held[id]
	}
	var renewed []string
	err := retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, renewLeases, hostID, ids, fences, store.MS(now.Add(lease)))
		if err != nil {
			return err
		}
		renewed, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, wrapErr("renew leases", err)
	}
	kept := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		kept[id] = true
	}
	var lost []string
	for _, id := range ids {
		if !kept[id] {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// SweepJobs implements store.Store: cancels the jobs past their deadline
// (fails those waiting for credentials), then those whose receipt expired, takes back lost claims and passed
// progress deadlines, then wakes the due retained deferrals, all in one
// transaction (one round trip, with sweepPlan). Each job is counted once, by the first
// rule that moved it. A job another transaction holds at that moment is
// left to the next sweep.
func (s *Store) SweepJobs(ctx context.Context, now time.Time) (store.SweepResult, error) {
	var res store.SweepResult
	at := store.MS(now)
	// The count each rule of sweepSteps adds to.
	counts := [len(sweepSteps)]*int{&res.PastDue, &res.PastDue, &res.Expired, &res.Reclaimed, &res.Reclaimed, &res.Woken}
	err := s.txBatch(ctx, func(b *pgx.Batch) {
		res = store.SweepResult{}
		b.Queue(sweepPlan)
		for i, st := range sweepSteps {
			args := []any{at, st.reason}
			if st.outcome != "" {
				args = append(args, st.outcome)
			}
			b.Queue(sweepQueries()[i], args...).QueryRow(func(row pgx.Row) error {
				var n int
				var ids []string
				err := row.Scan(&n, &ids)
				*counts[i] += n
				if st.fails {
					res.AuthFailed += n
					res.Failed = append(res.Failed, ids...)
				}
				return err
			})
		}
	})
	if err != nil {
		return store.SweepResult{}, wrapErr("sweep jobs", err)
	}
	return res, nil
}

// sweepPlan has the sweep read the jobs each rule selects through that
// rule's partial index, and reach their rows, attempts and transitions by
// key, one at a time, as befits the few jobs a sweep moves. Without
// statistics the planner takes nearly every job for claimed (a lease owner
// that is not empty) and scans the whole table, at every sweep; with scans of whole tables and
// hash and merge joins priced out it cannot. JIT is off, as in claimPlan.
// Only for the sweep's transaction.
const sweepPlan = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true)`

// NextJobDue implements store.Store. A time at or before now means work is
// due now; a ready job with no RunAt is due since the zero time.
func (s *Store) NextJobDue(ctx context.Context) (time.Time, bool, error) {
	var at *int64
	if err := s.pool.QueryRow(ctx, nextJobDue).Scan(&at); err != nil {
		return time.Time{}, false, wrapErr("next job due", err)
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return store.FromMS(*at), true, nil
}

// RegisterHost implements store.Store. Registering an id again replaces its
// record; a record job.Host.Validate refuses is not stored.
func (s *Store) RegisterHost(ctx context.Context, h job.Host) error {
	if err := h.Validate(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, upsertHost, h.ID, h.Hostname, h.PID, store.MS(h.StartedAt), store.MS(h.LastSeen), h.Lease.Milliseconds())
	return wrapErr("register host "+h.ID, err)
}

// HostHeartbeat implements store.Store. An unregistered host is
// job.ErrNotFound; a heartbeat older than the last one changes nothing.
func (s *Store) HostHeartbeat(ctx context.Context, id string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, heartbeatHost, id, store.MS(now))
	if err == nil && tag.RowsAffected() == 0 {
		err = job.ErrNotFound
	}
	return wrapErr("heartbeat of host "+id, err)
}

// UnregisterHost implements store.Store. Removing a host that is gone is no
// error.
func (s *Store) UnregisterHost(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, deleteHost, id)
	return wrapErr("unregister host "+id, err)
}

// Hosts implements store.Store, ordered by id.
func (s *Store) Hosts(ctx context.Context) ([]job.Host, error) {
	rows, err := s.pool.Query(ctx, selectHosts)
	if err != nil {
		return nil, wrapErr("hosts", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (job.Host, error) {
		var h job.Host
		var started, seen, lease int64
		err := row.Scan(&h.ID, &h.Hostname, &h.PID, &started, &seen, &lease)
		h.StartedAt, h.LastSeen, h.Lease = store.FromMS(started), store.FromMS(seen), time.Duration(lease)*time.Millisecond
		return h, err
	})
	return out, wrapErr("hosts", err)
}

// notFound translates a missing row into job.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return job.ErrNotFound
	}
	return err
}

// jobArgs are the values of jobColumns for j, whose spec is given as JSON.
func jobArgs(j job.Job, spec []byte) []any {
	cpStage, cpData, cpAt := store.CheckpointValues(j.Checkpoint)
	return []any{j.ID, json.RawMessage(spec), string(j.State), j.Stage, string(j.Ownership), store.MS(j.CreatedAt),
		store.MS(j.UpdatedAt), store.MS(j.RunAt), store.MS(j.ResumeBy), j.Fence, j.LeaseOwner, store.MS(j.LeaseUntil),
		store.MS(j.ProgressBy), j.Attempts, j.Probes, j.Approved, j.SessionID, cpStage, cpData, cpAt, j.Runs, j.Secondaries,
		j.Cleanup}
}

// scanJob reads a row of jobColumns, then any extra columns into extra.
func scanJob(row pgx.Row, extra ...any) (job.Job, error) {
	var j job.Job
	var spec []byte
	var state, ownership string
	var created, updated, runAt, resumeBy, leaseUntil, progressBy int64
	var cpStage *string
	var cpData []byte
	var cpAt *int64
	dest := append([]any{&j.ID, &spec, &state, &j.Stage, &ownership, &created, &updated, &runAt,
		&resumeBy, &j.Fence, &j.LeaseOwner, &leaseUntil, &progressBy, &j.Attempts, &j.Probes,
		&j.Approved, &j.SessionID, &cpStage, &cpData, &cpAt, &j.Runs, &j.Secondaries, &j.Cleanup}, extra...)
	if err := row.Scan(dest...); err != nil {
		return job.Job{}, err
	}
	if err := json.Unmarshal(spec, &j.Spec); err != nil {
		return job.Job{}, fmt.Errorf("job %s: stored spec: %w", j.ID, err)
	}
	j.State, j.Ownership = job.State(state), job.Ownership(ownership)
	j.CreatedAt, j.UpdatedAt, j.RunAt = store.FromMS(created), store.FromMS(updated), store.FromMS(runAt)
	j.ResumeBy, j.LeaseUntil, j.ProgressBy = store.FromMS(resumeBy), store.FromMS(leaseUntil), store.FromMS(progressBy)
	j.Checkpoint = store.ReadCheckpoint(cpStage, cpData, cpAt)
	return j, nil
}

func collectJobs(rows pgx.Rows, err error) ([]job.Job, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (job.Job, error) { return scanJob(row) })
}
