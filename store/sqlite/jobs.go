package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// Jobs keep their times in whole milliseconds, UTC, like the ledger (the
// spec's deadline too), and a zero time as 0. Beyond store.Store's doc
// comments, which storetest.RunJobs checks, the store keeps these rules:
//
//   - ID, Spec, CreatedAt, Fence, LeaseOwner and LeaseUntil belong to the
//     store: Mutate cannot change them, nor State (Change.To does).
//   - A change that moves a job to any state but running ends its lease and
//     its progress deadline. Only ready, resumable and running jobs are ever
//     claimed, and a job can only be running while claimed.
//   - When the store takes a job from the host running it (an operator
//     change, a sweep), it closes that run's open attempts: "killed" when
//     the job is cancelled, else "lease-lost".
//   - The sweep clears the Stage of the jobs it moves; the host writes a
//     new one with its next change.

const jobColumns = `id, spec, state, stage, ownership, created_at_ms, updated_at_ms, run_at_ms,
	resume_by_ms, fence, lease_owner, lease_until_ms, progress_by_ms, attempts, probes, approved,
	session_id, checkpoint_stage, checkpoint_data, checkpoint_at_ms, runs, secondaries, cleanup`

const (
	selectJob = `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`
	// selectJobsByID reads the jobs whose ids the JSON array ?1 holds: one
	// variable however many ids, so SQLite's variable limit never applies.
	selectJobsByID = `SELECT ` + jobColumns + ` FROM jobs WHERE id IN (SELECT value FROM json_each(?1))`

	// insertJob inserts a new job, or nothing when its id is taken (no
	// row changed): SubmitJob then reads the stored one. submitted_state
	// records the submission (see selectSubmission).
	insertJob = `INSERT INTO jobs (` + jobColumns + `, priority, deadline_ms, submitted_state)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`

	updateJob = `UPDATE jobs SET state = ?, stage = ?, ownership = ?, updated_at_ms = ?, run_at_ms = ?,
	resume_by_ms = ?, fence = ?, lease_owner = ?, lease_until_ms = ?, progress_by_ms = ?, attempts = ?,
	probes = ?, approved = ?, session_id = ?, checkpoint_stage = ?, checkpoint_data = ?,
	checkpoint_at_ms = ?, runs = ?, secondaries = ?, cleanup = ? WHERE id = ?`

	// Transitions and receipts number from 1 per job. A job's submission
	// is not a job_transition row but its own row's submitted_state (since
	// migration 003).
	insertTransition = `INSERT INTO job_transition (job_id, seq, from_state, to_state, at_ms, reason)
	SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5 FROM job_transition WHERE job_id = ?1`

	insertReceipt = `INSERT INTO job_receipt (job_id, seq, json, issued_at_ms, host_id, fence)
	SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5 FROM job_receipt WHERE job_id = ?1`

	insertCheck = `INSERT INTO job_check (job_id, seq, fence, at_ms, triggered_by, exit_code, result, detail)
	SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7 FROM job_check WHERE job_id = ?1`

	// A job SubmitJob has just inserted has no receipt yet: its first is
	// seq 1, with no look-up.
	insertFirstReceipt = `INSERT INTO job_receipt (job_id, seq, json, issued_at_ms, host_id, fence) VALUES (?, 1, ?, ?, ?, ?)`

	upsertAttempt = `INSERT INTO job_attempt (job_id, attempt_id, fence, started_at_ms, ended_at_ms,
	outcome, exit_code, waited_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (job_id, attempt_id) DO UPDATE SET fence = excluded.fence,
	started_at_ms = excluded.started_at_ms, ended_at_ms = excluded.ended_at_ms,
	outcome = excluded.outcome, exit_code = excluded.exit_code, waited_s = excluded.waited_s`

	// closeAttempts ends the open attempts of one claim of a job.
	closeAttempts = `UPDATE job_attempt SET ended_at_ms = ?, outcome = ?
	WHERE job_id = ? AND fence = ? AND ended_at_ms = 0`

	// claimJobs takes the due jobs with no live lease, highest priority
	// first, then earliest run_at, then oldest. Each state is read in the
	// order of jobs_claim, stopping at the limit, however many are due:
	// INDEXED BY says so, as without statistics SQLite would pick
	// jobs_run_at for the ready jobs' run_at_ms range and sort every due
	// job at each claim (a burst of 10,000 drained at 450/s,
	// docs/benchmarks.md). RETURNING gives no order; ClaimJobs sorts.
	claimJobs = `UPDATE jobs SET fence = fence + 1, lease_owner = ?1, lease_until_ms = ?2, updated_at_ms = ?3
	WHERE id IN (SELECT id FROM (
		SELECT * FROM (SELECT id, priority, run_at_ms, created_at_ms FROM jobs INDEXED BY jobs_claim
			WHERE state = 'ready' AND run_at_ms <= ?3 AND lease_until_ms <= ?3
			ORDER BY priority DESC, run_at_ms, created_at_ms, id LIMIT ?4)
		UNION ALL
		SELECT * FROM (SELECT id, priority, run_at_ms, created_at_ms FROM jobs INDEXED BY jobs_claim
			WHERE state = 'resumable' AND lease_until_ms <= ?3
			ORDER BY priority DESC, run_at_ms, created_at_ms, id LIMIT ?4)
	) ORDER BY priority DESC, run_at_ms, created_at_ms, id LIMIT ?4)
	RETURNING ` + jobColumns

	renewLease = `UPDATE jobs SET lease_until_ms = ? WHERE id = ? AND fence = ? AND lease_owner = ?`

	listJobs        = `SELECT ` + jobColumns + ` FROM jobs ORDER BY created_at_ms, id`
	listJobsInState = `SELECT ` + jobColumns + ` FROM jobs WHERE state = ? ORDER BY created_at_ms, id`
	countJobs       = `SELECT state, count(*) FROM jobs GROUP BY state`
	// pendingCleanups reads the armed cleanups of ended jobs through
	// jobs_cleanup_armed, oldest update first.
	pendingCleanups = `SELECT ` + jobColumns + ` FROM jobs INDEXED BY jobs_cleanup_armed
	WHERE cleanup = 'armed' AND state IN ('cancelled', 'failed') ORDER BY updated_at_ms, id LIMIT ?`
	// selectSubmission reads how a job was submitted: the state it was
	// submitted in, when. '' is a job submitted before migration 003, whose
	// submission is its first job_transition row.
	selectSubmission = `SELECT submitted_state, created_at_ms FROM jobs WHERE id = ?`

	selectAttempts = `SELECT attempt_id, fence, started_at_ms, ended_at_ms, outcome, exit_code, waited_s
	FROM job_attempt WHERE job_id = ? ORDER BY rowid`
	selectTransitions = `SELECT from_state, to_state, at_ms, reason FROM job_transition
	WHERE job_id = ? ORDER BY seq`
	selectReceipts = `SELECT seq, json, issued_at_ms, host_id, fence FROM job_receipt WHERE job_id = ? ORDER BY seq`
	selectChecks   = `SELECT fence, at_ms, triggered_by, exit_code, result, detail FROM job_check
	WHERE job_id = ? ORDER BY seq`

	// nextJobDue is the earliest of what SweepJobs and ClaimJobs look for,
	// and of the credential re-checks of auth-wait jobs (their RunAt; none
	// when it is 0), one indexed look-up each. A deadline, resume_by or
	// progress deadline is passed one millisecond after it (the sweep's
	// "<").
	nextJobDue = `SELECT MIN(t) FROM (
		SELECT (SELECT run_at_ms FROM jobs WHERE state = 'ready' AND lease_owner = ''
			ORDER BY run_at_ms LIMIT 1) AS t
		UNION ALL SELECT (SELECT run_at_ms FROM jobs WHERE state = 'resumable' AND lease_owner = ''
			ORDER BY run_at_ms LIMIT 1)
		UNION ALL SELECT (SELECT run_at_ms FROM jobs WHERE state = 'deferred' AND ownership = 'retained'
			ORDER BY run_at_ms LIMIT 1)
		UNION ALL SELECT (SELECT lease_until_ms FROM jobs WHERE lease_owner <> ''
			ORDER BY lease_until_ms LIMIT 1)
		UNION ALL SELECT (SELECT progress_by_ms + 1 FROM jobs WHERE progress_by_ms > 0 AND state = 'running'
			ORDER BY progress_by_ms LIMIT 1)
		UNION ALL SELECT (SELECT resume_by_ms + 1 FROM jobs WHERE state = 'deferred' AND resume_by_ms > 0
			ORDER BY resume_by_ms LIMIT 1)
		UNION ALL SELECT (SELECT resume_by_ms + 1 FROM jobs WHERE state = 'resumable' AND resume_by_ms > 0
			ORDER BY resume_by_ms LIMIT 1)
		UNION ALL SELECT (SELECT deadline_ms + 1 FROM jobs WHERE state = 'ready' AND deadline_ms > 0
			ORDER BY deadline_ms LIMIT 1)
		UNION ALL SELECT (SELECT deadline_ms + 1 FROM jobs WHERE state = 'running' AND deadline_ms > 0
			ORDER BY deadline_ms LIMIT 1)
		UNION ALL SELECT (SELECT deadline_ms + 1 FROM jobs WHERE state = 'deferred' AND deadline_ms > 0
			ORDER BY deadline_ms LIMIT 1)
		UNION ALL SELECT (SELECT deadline_ms + 1 FROM jobs WHERE state = 'resumable' AND deadline_ms > 0
			ORDER BY deadline_ms LIMIT 1)
		UNION ALL SELECT (SELECT deadline_ms + 1 FROM jobs WHERE state = 'blocked' AND deadline_ms > 0
			ORDER BY deadline_ms LIMIT 1)
		UNION ALL SELECT (SELECT run_at_ms FROM jobs WHERE state = 'auth-wait' AND run_at_ms > 0
			ORDER BY run_at_ms LIMIT 1)
		UNION ALL SELECT (SELECT deadline_ms + 1 FROM jobs WHERE state = 'auth-wait' AND deadline_ms > 0
			ORDER BY deadline_ms LIMIT 1)
	)`

	upsertHost = `INSERT INTO host (id, hostname, pid, started_at_ms, last_seen_ms, lease_ms) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid,
	started_at_ms = excluded.started_at_ms, last_seen_ms = excluded.last_seen_ms, lease_ms = excluded.lease_ms`
	// A heartbeat that commits late never moves last_seen back.
	heartbeatHost = `UPDATE host SET last_seen_ms = MAX(last_seen_ms, ?) WHERE id = ?`
	deleteHost    = `DELETE FROM host WHERE id = ?`
	selectHosts   = `SELECT id, hostname, pid, started_at_ms, last_seen_ms, lease_ms FROM host ORDER BY id`
)

// The sweep's rules, in the order it applies them; a job moved by one is
// out of the reach of those after it. ?1 is now. A deadline or resume_by
// has passed when it is before now: a receipt is still resumable at its
// resume_by (receipt.Validate).
const (
	sweepPastDue = `state IN ('ready', 'running', 'deferred', 'resumable', 'blocked')
	AND deadline_ms > 0 AND deadline_ms < ?1`
	// A job still waiting for credentials at its deadline failed: it never
	// got to run with working ones.
	sweepAuthPastDue = `state = 'auth-wait' AND deadline_ms > 0 AND deadline_ms < ?1`
	sweepExpired     = `state IN ('deferred', 'resumable') AND resume_by_ms > 0 AND resume_by_ms < ?1`
	sweepLease       = `lease_owner <> '' AND lease_until_ms <= ?1`
	// A running job past its progress deadline may still hold a live
	// lease: it may start again only once that lease would have ended, so
	// that the process it had is gone (its host kills it on losing the
	// lease) before another starts.
	sweepProgress = `state = 'running' AND progress_by_ms > 0 AND progress_by_ms < ?1`
	sweepWake     = `state = 'deferred' AND ownership = 'retained' AND run_at_ms <= ?1`

	// sweepTransitions records cond's moves to ?2, for reason ?3.
	sweepTransitions = `INSERT INTO job_transition (job_id, seq, from_state, to_state, at_ms, reason)
	SELECT id, (SELECT COALESCE(MAX(t.seq), 0) + 1 FROM job_transition t WHERE t.job_id = jobs.id),
	state, ?2, ?1, ?3 FROM jobs WHERE `
	// sweepAttempts closes the open attempts of the claims cond ends, with
	// outcome ?2.
	sweepAttempts = `UPDATE job_attempt SET ended_at_ms = ?1, outcome = ?2 WHERE ended_at_ms = 0
	AND (job_id, fence) IN (SELECT id, fence FROM jobs WHERE lease_owner <> '' AND `

	sweepCancel = `UPDATE jobs SET state = 'cancelled', stage = '', updated_at_ms = ?1,
	fence = fence + (lease_owner <> ''), lease_owner = '', lease_until_ms = 0, progress_by_ms = 0 WHERE `
	// An auth-wait job holds no claim (leaving running ended it).
	sweepFail = `UPDATE jobs SET state = 'failed', stage = '', updated_at_ms = ?1 WHERE ` + sweepAuthPastDue
	// sweepFailing names the first jobs sweepFail fails (?2 of them).
	sweepFailing = `SELECT id FROM jobs WHERE ` + sweepAuthPastDue + ` ORDER BY id LIMIT ?2`
	sweepUnclaim = `UPDATE jobs SET state = CASE state WHEN 'running' THEN 'ready' ELSE state END,
	stage = CASE state WHEN 'running' THEN '' ELSE stage END, updated_at_ms = ?1,
	lease_owner = '', lease_until_ms = 0, progress_by_ms = 0 WHERE ` + sweepLease
	sweepRequeue = `UPDATE jobs SET state = 'ready', stage = '', updated_at_ms = ?1,
	run_at_ms = MAX(run_at_ms, lease_until_ms), lease_owner = '', lease_until_ms = 0,
	progress_by_ms = 0 WHERE ` + sweepProgress
	sweepWakeUp = `UPDATE jobs SET state = 'resumable', stage = '', updated_at_ms = ?1 WHERE ` + sweepWake

	// sweepDue tells, in one indexed look-up per rule, which rules have
	// work, so that a sweep with little to do runs few statements. A rule
	// only ever takes jobs out of the reach of the rules after it, so a rule
	// with nothing to do here has nothing to do after them either.
	sweepDue = `SELECT EXISTS (SELECT 1 FROM jobs WHERE ` + sweepPastDue + `),
	EXISTS (SELECT 1 FROM jobs WHERE ` + sweepAuthPastDue + `),
	EXISTS (SELECT 1 FROM jobs WHERE ` + sweepExpired + `),
	EXISTS (SELECT 1 FROM jobs WHERE ` + sweepLease + `),
	EXISTS (SELECT 1 FROM jobs WHERE ` + sweepProgress + `),
	EXISTS (SELECT 1 FROM jobs WHERE ` + sweepWake + `)`
)

// sweepSteps are the sweep's rules, in sweepDue's order, each with its
// statements built once, so that they are the same texts, prepared once
// per Store, at every sweep.
var sweepSteps = [...]struct {
	to          job.State
	reason      string
	outcome     string // of the open attempts of the claims it ends; "": none
	transitions string // records the moves of the jobs whose state changes (to to)
	attempts    string // closes those attempts; "" when outcome is ""
	update      string // moves the jobs
}{
	{job.Cancelled, job.ReasonPastDue, job.OutcomeKilled, sweepTransitions + sweepPastDue,
		sweepAttempts + sweepPastDue + `)`, sweepCancel + sweepPastDue},
	{job.Failed, job.ReasonPastDue, "", sweepTransitions + sweepAuthPastDue, "", sweepFail},
	{job.Cancelled, job.ReasonExpired, job.OutcomeKilled, sweepTransitions + sweepExpired,
		sweepAttempts + sweepExpired + `)`, sweepCancel + sweepExpired},
	{job.Ready, job.ReasonLeaseLost, job.OutcomeLeaseLost, sweepTransitions + sweepLease + ` AND state = 'running'`,
		sweepAttempts + sweepLease + `)`, sweepUnclaim},
	{job.Ready, job.ReasonProgress, job.OutcomeLeaseLost, sweepTransitions + sweepProgress,
		sweepAttempts + sweepProgress + `)`, sweepRequeue},
	{job.Resumable, job.ReasonWakeUp, "", sweepTransitions + sweepWake, "", sweepWakeUp},
}

// SubmitJob implements store.Store: the job as job.Job.Submitted makes it.
func (s *Store) SubmitJob(ctx context.Context, j job.Job, rc *job.Receipt, now time.Time) (job.Job, bool, error) {
	j, spec, err := store.Submission(j, now)
	if err != nil {
		return job.Job{}, false, err
	}

	var out job.Job
	var created bool
	args := append(jobArgs(j, spec), j.Spec.Priority, store.MS(j.Spec.Deadline), string(j.State))
	err = s.write(ctx, func(b *batch) error {
		// Insert first and read only when the id is taken: a new job, the
		// common case, costs no look-up.
		res, err := b.Exec(insertJob, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			old, err := loadJob(b, j.ID)
			switch {
			case err != nil:
				return err
			case old.Spec.Equal(j.Spec):
				out, created = old, false
				return nil
			default:
				return job.ErrConflict
			}
		}
		if rc != nil {
			if _, err := b.Exec(insertFirstReceipt, j.ID, rc.JSON, store.MS(rc.IssuedAt), rc.HostID, rc.Fence); err != nil {
				return err
			}
		}
		out, created = j, true
		return nil
	})
	if err != nil {
		return job.Job{}, false, wrapErr("submit job "+j.ID, err)
	}
	return out, created, nil
}

// Job implements store.Store.
func (s *Store) Job(ctx context.Context, id string) (job.Job, error) {
	st, err := s.stmt(ctx, selectJob)
	if err != nil {
		return job.Job{}, wrapErr("job "+id, err)
	}
	j, err := scanJob(st.QueryRowContext(ctx, id))
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
	arg, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("jobs by id: %w", err)
	}
	st, err := s.stmt(ctx, selectJobsByID)
	if err != nil {
		return nil, wrapErr("jobs by id", err)
	}
	jobs, err := collectJobs(st.QueryContext(ctx, string(arg)))
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
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, wrapErr("list jobs", err)
	}
	jobs, err := collectJobs(st.QueryContext(ctx, args...))
	return jobs, wrapErr("list jobs", err)
}

// PendingCleanups implements store.Store.
func (s *Store) PendingCleanups(ctx context.Context, limit int) ([]job.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	st, err := s.stmt(ctx, pendingCleanups)
	if err != nil {
		return nil, wrapErr("pending cleanups", err)
	}
	jobs, err := collectJobs(st.QueryContext(ctx, limit))
	return jobs, wrapErr("pending cleanups", err)
}

// CountJobs implements store.Store. States without jobs are left out.
func (s *Store) CountJobs(ctx context.Context) (map[job.State]int, error) {
	st, err := s.stmt(ctx, countJobs)
	if err != nil {
		return nil, wrapErr("count jobs", err)
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, wrapErr("count jobs", err)
	}
	defer rows.Close()
	out := map[job.State]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, wrapErr("count jobs", err)
		}
		out[job.State(st)] = n
	}
	return out, wrapErr("count jobs", rows.Err())
}

// JobHistory implements store.Store. The four lists are read from one
// snapshot.
func (s *Store) JobHistory(ctx context.Context, id string) (job.History, error) {
	h, err := s.jobHistory(ctx, id)
	return h, wrapErr("history of job "+id, err)
}

func (s *Store) jobHistory(ctx context.Context, id string) (job.History, error) {
	// A read-only transaction is a plain (deferred) BEGIN: it takes no
	// write lock.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return job.History{}, err
	}
	// A read-only transaction: ending it keeps or loses nothing, so its
	// error does not matter.
	defer func() { _ = tx.Rollback() }()
	// The Store's statements, bound to tx (which closes the bindings).
	query := func(q string) (*sql.Rows, error) {
		st, err := s.txStmt(ctx, tx, q)
		if err != nil {
			return nil, err
		}
		return st.QueryContext(ctx, id)
	}
	submission, err := s.txStmt(ctx, tx, selectSubmission)
	if err != nil {
		return job.History{}, err
	}
	var submitted string
	var created int64
	if err := submission.QueryRowContext(ctx, id).Scan(&submitted, &created); err != nil {
		return job.History{}, notFound(err)
	}
	var h job.History
	if submitted != "" {
		h.Transitions = []job.Transition{{To: job.State(submitted), At: store.FromMS(created), Reason: job.ReasonSubmitted}}
	}
	rows, err := query(selectAttempts)
	if err != nil {
		return job.History{}, err
	}
	for rows.Next() {
		var a job.Attempt
		var started, ended int64
		var exit sql.NullInt64
		if err := rows.Scan(&a.ID, &a.Fence, &started, &ended, &a.Outcome, &exit, &a.WaitedS); err != nil {
			rows.Close()
			return job.History{}, err
		}
		a.StartedAt, a.EndedAt, a.ExitCode = store.FromMS(started), store.FromMS(ended), intOrNil(exit)
		h.Attempts = append(h.Attempts, a)
	}
	if err := closeRows(rows); err != nil {
		return job.History{}, err
	}
	if rows, err = query(selectTransitions); err != nil {
		return job.History{}, err
	}
	for rows.Next() {
		var tr job.Transition
		var from, to string
		var at int64
		if err := rows.Scan(&from, &to, &at, &tr.Reason); err != nil {
			rows.Close()
			return job.History{}, err
		}
		tr.From, tr.To, tr.At = job.State(from), job.State(to), store.FromMS(at)
		h.Transitions = append(h.Transitions, tr)
	}
	if err := closeRows(rows); err != nil {
		return job.History{}, err
	}
	if rows, err = query(selectReceipts); err != nil {
		return job.History{}, err
	}
	for rows.Next() {
		rc := job.Receipt{JobID: id}
		var issued int64
		if err := rows.Scan(&rc.Seq, &rc.JSON, &issued, &rc.HostID, &rc.Fence); err != nil {
			rows.Close()
			return job.History{}, err
		}
		rc.IssuedAt = store.FromMS(issued)
		h.Receipts = append(h.Receipts, rc)
	}
	if err := closeRows(rows); err != nil {
		return job.History{}, err
	}
	if rows, err = query(selectChecks); err != nil {
		return job.History{}, err
	}
	for rows.Next() {
		var c job.Check
		var at int64
		var exit sql.NullInt64
		if err := rows.Scan(&c.Fence, &at, &c.Trigger, &exit, &c.Result, &c.Detail); err != nil {
			rows.Close()
			return job.History{}, err
		}
		c.At, c.ExitCode = store.FromMS(at), intOrNil(exit)
		h.Checks = append(h.Checks, c)
	}
	return h, closeRows(rows)
}

// nullableInt is *p, or NULL when p is nil.
func nullableInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// intOrNil is v as an exit code: nil for NULL.
func intOrNil(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	n := int(v.Int64)
	return &n
}

func closeRows(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

// ApplyJob implements store.Store, group-committed with other job writes.
// Mutate runs on the store's writer, inside the transaction: it must be
// quick and must not call the store's writing methods, which would wait for
// the very transaction it holds open.
func (s *Store) ApplyJob(ctx context.Context, id string, fence int64, ch job.Change) (job.Job, error) {
	var out job.Job
	err := s.write(ctx, func(b *batch) error {
		var err error
		out, err = applyJob(b, id, fence, ch)
		return err
	})
	if err != nil {
		return job.Job{}, wrapErr("apply to job "+id, err)
	}
	return out, nil
}

func applyJob(b *batch, id string, fence int64, ch job.Change) (job.Job, error) {
	old, err := loadJob(b, id)
	if err != nil {
		return job.Job{}, err
	}
	j, taken, err := ch.Apply(old, fence)
	if err != nil {
		return job.Job{}, err
	}
	j = store.MSJob(j)

	// updateJob sets every column of jobArgs but id, spec and created_at,
	// then takes the id.
	a := jobArgs(j, nil)
	if _, err := b.Exec(updateJob, slices.Concat(a[2:5], a[6:], []any{id})...); err != nil {
		return job.Job{}, err
	}
	if taken {
		outcome := job.OutcomeLeaseLost
		if j.State == job.Cancelled {
			outcome = job.OutcomeKilled
		}
		if _, err := b.Exec(closeAttempts, store.MS(j.UpdatedAt), outcome, id, old.Fence); err != nil {
			return job.Job{}, err
		}
	}
	if ch.To != "" {
		if _, err := b.Exec(insertTransition, id, string(old.State), string(ch.To), store.MS(ch.Now), ch.Reason); err != nil {
			return job.Job{}, err
		}
	}
	if a := ch.Attempt; a != nil {
		if _, err := b.Exec(upsertAttempt, id, a.ID, a.Fence, store.MS(a.StartedAt), store.MS(a.EndedAt), a.Outcome,
			nullableInt(a.ExitCode), a.WaitedS); err != nil {
			return job.Job{}, err
		}
	}
	if rc := ch.Receipt; rc != nil {
		if _, err := b.Exec(insertReceipt, id, rc.JSON, store.MS(rc.IssuedAt), rc.HostID, rc.Fence); err != nil {
			return job.Job{}, err
		}
	}
	if c := ch.Checked; c != nil {
		if _, err := b.Exec(insertCheck, id, c.Fence, store.MS(c.At), c.Trigger, nullableInt(c.ExitCode), c.Result,
			c.Detail); err != nil {
			return job.Job{}, err
		}
	}
	return j, nil
}

// ClaimJobs implements store.Store.
func (s *Store) ClaimJobs(ctx context.Context, hostID string, now time.Time, lease time.Duration, limit int) ([]job.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []job.Job
	err := s.write(ctx, func(b *batch) error {
		rows, err := b.Query(claimJobs, hostID, store.MS(now.Add(lease)), store.MS(now), limit)
		out, err = collectJobs(rows, err)
		return err
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

// RenewLeases implements store.Store. lost is sorted.
func (s *Store) RenewLeases(ctx context.Context, hostID string, held map[string]int64, now time.Time, lease time.Duration) ([]string, error) {
	if len(held) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(held))
	for id := range held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var lost []string
	err := s.write(ctx, func(b *batch) error {
		lost = lost[:0]
		until := store.MS(now.Add(lease))
		for _, id := range ids {
			res, err := b.Exec(renewLease, until, id, held[id], hostID)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				lost = append(lost, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("renew leases", err)
	}
	return lost, nil
}

// SweepJobs implements store.Store: cancels the jobs past their deadline
// (fails those waiting for credentials), then those whose receipt expired, takes back lost claims and passed
// progress deadlines, then wakes the due retained deferrals, all in one
// transaction. Each job is counted once, by the first rule that moved it.
func (s *Store) SweepJobs(ctx context.Context, now time.Time) (store.SweepResult, error) {
	var res store.SweepResult
	at := store.MS(now)
	err := s.write(ctx, func(b *batch) error {
		res = store.SweepResult{}
		// The count each rule of sweepSteps adds to.
		counts := [len(sweepSteps)]*int{&res.PastDue, &res.PastDue, &res.Expired, &res.Reclaimed, &res.Reclaimed, &res.Woken}
		var due [len(sweepSteps)]bool
		if err := b.QueryRow(sweepDue, at).Scan(&due[0], &due[1], &due[2], &due[3], &due[4], &due[5]); err != nil {
			return err
		}
		for i, st := range sweepSteps {
			if !due[i] {
				continue
			}
			if st.to == job.Failed {
				ids, err := b.Query(sweepFailing, at, store.MaxSweptFailed)
				if err != nil {
					return err
				}
				for ids.Next() {
					var id string
					if err := ids.Scan(&id); err != nil {
						_ = ids.Close()
						return err
					}
					res.Failed = append(res.Failed, id)
				}
				if err := errors.Join(ids.Err(), ids.Close()); err != nil {
					return err
				}
			}
			if _, err := b.Exec(st.transitions, at, string(st.to), st.reason); err != nil {
				return err
			}
			if st.attempts != "" {
				if _, err := b.Exec(st.attempts, at, st.outcome); err != nil {
					return err
				}
			}
			r, err := b.Exec(st.update, at)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			*counts[i] += int(n)
			if st.to == job.Failed {
				res.AuthFailed += int(n)
			}
		}
		return nil
	})
	if err != nil {
		return store.SweepResult{}, wrapErr("sweep jobs", err)
	}
	return res, nil
}

// NextJobDue implements store.Store. A time at or before now means work is
// due now; a ready job with no RunAt is due since the zero time.
func (s *Store) NextJobDue(ctx context.Context) (time.Time, bool, error) {
	st, err := s.stmt(ctx, nextJobDue)
	if err != nil {
		return time.Time{}, false, wrapErr("next job due", err)
	}
	var at sql.NullInt64
	if err := st.QueryRowContext(ctx).Scan(&at); err != nil {
		return time.Time{}, false, wrapErr("next job due", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return store.FromMS(at.Int64), true, nil
}

// RegisterHost implements store.Store. Registering an id again replaces its
// record; a record job.Host.Validate refuses is not stored.
func (s *Store) RegisterHost(ctx context.Context, h job.Host) error {
	if err := h.Validate(); err != nil {
		return err
	}
	err := s.write(ctx, func(b *batch) error {
		_, err := b.Exec(upsertHost, h.ID, h.Hostname, h.PID, store.MS(h.StartedAt), store.MS(h.LastSeen), h.Lease.Milliseconds())
		return err
	})
	return wrapErr("register host "+h.ID, err)
}

// HostHeartbeat implements store.Store. An unregistered host is
// job.ErrNotFound; a heartbeat older than the last one changes nothing.
func (s *Store) HostHeartbeat(ctx context.Context, id string, now time.Time) error {
	err := s.write(ctx, func(b *batch) error {
		r, err := b.Exec(heartbeatHost, store.MS(now), id)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return job.ErrNotFound
		}
		return nil
	})
	return wrapErr("heartbeat of host "+id, err)
}

// UnregisterHost implements store.Store. Removing a host that is gone is no
// error.
func (s *Store) UnregisterHost(ctx context.Context, id string) error {
	err := s.write(ctx, func(b *batch) error {
		_, err := b.Exec(deleteHost, id)
		return err
	})
	return wrapErr("unregister host "+id, err)
}

// Hosts implements store.Store, ordered by id.
func (s *Store) Hosts(ctx context.Context) ([]job.Host, error) {
	st, err := s.stmt(ctx, selectHosts)
	if err != nil {
		return nil, wrapErr("hosts", err)
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, wrapErr("hosts", err)
	}
	defer rows.Close()
	var out []job.Host
	for rows.Next() {
		var h job.Host
		var started, seen, lease int64
		if err := rows.Scan(&h.ID, &h.Hostname, &h.PID, &started, &seen, &lease); err != nil {
			return nil, wrapErr("hosts", err)
		}
		h.StartedAt, h.LastSeen, h.Lease = store.FromMS(started), store.FromMS(seen), time.Duration(lease)*time.Millisecond
		out = append(out, h)
	}
	return out, wrapErr("hosts", rows.Err())
}

// loadJob reads one job in a batch, or job.ErrNotFound.
func loadJob(b *batch, id string) (job.Job, error) {
	j, err := scanJob(b.QueryRow(selectJob, id))
	return j, notFound(err)
}

// notFound translates a missing row into job.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return job.ErrNotFound
	}
	return err
}

// jobArgs are the values of jobColumns for j, whose spec is given as JSON.
func jobArgs(j job.Job, spec []byte) []any {
	cpStage, cpData, cpAt := store.CheckpointValues(j.Checkpoint)
	return []any{j.ID, string(spec), string(j.State), j.Stage, string(j.Ownership), store.MS(j.CreatedAt),
		store.MS(j.UpdatedAt), store.MS(j.RunAt), store.MS(j.ResumeBy), j.Fence, j.LeaseOwner, store.MS(j.LeaseUntil),
		store.MS(j.ProgressBy), j.Attempts, j.Probes, j.Approved, j.SessionID, cpStage, cpData, cpAt, j.Runs, j.Secondaries,
		j.Cleanup}
}

func scanJob(row rowScanner) (job.Job, error) {
	var j job.Job
	var spec, state, ownership string
	var created, updated, runAt, resumeBy, leaseUntil, progressBy int64
	var cpStage *string
	var cpData []byte
	var cpAt *int64
	if err := row.Scan(&j.ID, &spec, &state, &j.Stage, &ownership, &created, &updated, &runAt,
		&resumeBy, &j.Fence, &j.LeaseOwner, &leaseUntil, &progressBy, &j.Attempts, &j.Probes,
		&j.Approved, &j.SessionID, &cpStage, &cpData, &cpAt, &j.Runs, &j.Secondaries, &j.Cleanup); err != nil {
		return job.Job{}, err
	}
	if err := json.Unmarshal([]byte(spec), &j.Spec); err != nil {
		return job.Job{}, fmt.Errorf("job %s: stored spec: %w", j.ID, err)
	}
	j.State, j.Ownership = job.State(state), job.Ownership(ownership)
	j.CreatedAt, j.UpdatedAt, j.RunAt = store.FromMS(created), store.FromMS(updated), store.FromMS(runAt)
	j.ResumeBy, j.LeaseUntil, j.ProgressBy = store.FromMS(resumeBy), store.FromMS(leaseUntil), store.FromMS(progressBy)
	j.Checkpoint = store.ReadCheckpoint(cpStage, cpData, cpAt)
	return j, nil
}

func collectJobs(rows *sql.Rows, err error) ([]job.Job, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []job.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
