package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/internal/groupcommit"
)

// Group commit. A durable commit costs a WAL flush, and every statement a
// round trip's share of the server's and the client's work, far more than
// the rows of one job change. So SubmitJob and ApplyJob calls share
// transactions (store/internal/groupcommit): a writer takes what is queued
// and writes it as one group, with set-based statements that take one
// array per column and write the rows of every job of the group at once.
// docs/benchmarks.md has what it buys.
//
// A group's changes are optimistic, a compare-and-set on each job's row
// version (its xmin, which every UPDATE of the row changes):
//
//  1. The group's jobs are read (readJobs), with no lock and outside any
//     transaction. Each change is checked against its job in Go
//     (job.Change.Apply, Mutate included). One round trip.
//  2. BEGIN; the new jobs are inserted (submitJobs); every change that
//     holds is written (writeJobs: its job, with its closed attempts,
//     transition, attempt and receipt) where the job's row is still the
//     version read; COMMIT. One round trip.
//
// A job changed by another transaction between the two (a claim, a sweep,
// another host) is not written, nor anything of its change; its change
// is checked and written again, by the locking way: BEGIN; the jobs are
// read and their rows locked (lockJobs, in id order); the changes are
// checked and written; COMMIT. So every change is checked against the
// version of its job it replaces, and the fence check and the write it
// guards are one atomic step, as with a lock, without a lock's cost (the
// server writes each locked row twice). A group of submissions alone is
// one round trip.
//
// A change that does not hold (a stale fence, a state it may not leave, no
// such job) fails alone, in Go, and writes nothing. A statement the server
// refuses (a value it cannot store, say) rolls back the whole group, and a
// set-based statement does not say whose row it was: then each write of
// the group runs again on its own, so that only the refused one fails. Any
// other failure (the connection lost) is every write's, since none of them
// is known to have committed or not; a deadlock or serialization failure
// runs the group again, as retry does any transaction.
//
// The writes of one group are of distinct jobs (rounds), so they commute.
// Rows are written in id order, and new jobs inserted in id order first:
// two groups never wait for each other in a cycle. Every caller returns
// only after the transaction holding its write committed.

const (
	// maxGroup bounds the job writes of one transaction.
	maxGroup = 256
	// groupWriters is how many groups one Store commits at once, each on a
	// connection of its own: while one group waits for its WAL flush,
	// another's statements run (docs/benchmarks.md has what each count
	// gave).
	groupWriters = 2
)

// jobWrite is one caller's job write: an ApplyJob (ch set) or a SubmitJob
// (sub set). The group sets the results.
type jobWrite struct {
	id    string
	fence int64
	ch    *job.Change
	sub   *submission

	out     job.Job // the job as changed (ApplyJob)
	created bool    // the job was inserted (SubmitJob)
	err     error   // this write's own failure, found in Go
	// lost: the job's row changed after it was read; nothing was written.
	lost bool
}

// submission is a new job as SubmitJob inserts it: the record, its spec's
// JSON and its first receipt, if any.
type submission struct {
	j    job.Job
	spec []byte
	rc   *job.Receipt
}

type jobCall = groupcommit.Call[*jobWrite]

// newJobWrites returns the group-commit queue of s's job writes.
func newJobWrites(s *Store) *groupcommit.Queue[*jobWrite] {
	return groupcommit.New(maxGroup, groupWriters, s.commitJobWrites)
}

// rowSet describes the rows a set-based statement takes: one array
// argument per column, of these SQL types, unnested under these names.
type rowSet struct {
	names, types []string
}

// unnest is `unnest($n::type[], …) AS alias (name, …)`, its arrays
// numbered from n.
func (r rowSet) unnest(alias string, n int) string {
	var b strings.Builder
	b.WriteString("unnest(")
	for i, t := range r.types {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(n+i) + "::" + t + "[]")
	}
	b.WriteString(") AS " + alias + " (" + strings.Join(r.names, ", ") + ")")
	return b.String()
}

// jobColumnTypes are the SQL types of jobColumnNames, in their order.
var jobColumnTypes = []string{"text", "jsonb", "text", "text", "text", "bigint", "bigint",
	"bigint", "bigint", "bigint", "text", "bigint", "bigint", "bigint",
	"bigint", "boolean", "text", "text", "bytea", "bigint", "bigint", "bigint", "text"}

var (
	// The rows of submitJobs: jobColumns, priority, deadline_ms and
	// receipt_seq (0 or 1), and the first receipts by job id, with their
	// issuing host and fence.
	newJobRows = rowSet{
		names: slices.Concat(jobColumnNames, []string{"priority", "deadline_ms", "receipt_seq"}),
		types: slices.Concat(jobColumnTypes, []string{"bigint", "bigint", "bigint"}),
	}
	newReceiptRows = rowSet{names: []string{"id", "json", "issued", "host_id", "fence"},
		types: []string{"text", "bytea", "bigint", "text", "bigint"}}

	// The rows of writeJobs: each job's new record (every column of jobs
	// but spec and created_at, and the history counters) with the row
	// version it replaces; the open attempts of a claim to close, but the
	// one the change writes (keep); the transitions, attempts and
	// receipts.
	jobRows = rowSet{
		names: slices.Concat([]string{"id"}, jobColumnNames[2:5], jobColumnNames[6:],
			[]string{"transition_seq", "receipt_seq", "check_seq", "read_xmin"}),
		types: slices.Concat([]string{"text"}, jobColumnTypes[2:5], jobColumnTypes[6:],
			[]string{"bigint", "bigint", "bigint", "text"}),
	}
	closedRows = rowSet{names: []string{"job_id", "fence", "at_ms", "outcome", "keep"},
		types: []string{"text", "bigint", "bigint", "text", "text"}}
	transitionRows = rowSet{names: []string{"job_id", "seq", "from_state", "to_state", "at_ms", "reason"},
		types: []string{"text", "bigint", "text", "text", "bigint", "text"}}
	attemptRows = rowSet{names: []string{"job_id", "attempt_id", "fence", "started_at_ms", "ended_at_ms", "outcome",
		"exit_code", "waited_s"}, types: []string{"text", "text", "bigint", "bigint", "bigint", "text", "bigint", "float8"}}
	receiptRows = rowSet{names: []string{"job_id", "seq", "json", "issued_at_ms", "host_id", "fence"},
		types: []string{"text", "bigint", "bytea", "bigint", "text", "bigint"}}
	checkRows = rowSet{names: []string{"job_id", "seq", "fence", "at_ms", "triggered_by", "exit_code", "result", "detail"},
		types: []string{"text", "bigint", "bigint", "bigint", "text", "bigint", "text", "text"}}
)

var (
	// readJobs reads the jobs $1 names, with their history counters and
	// row versions.
	readJobs = `SELECT ` + jobColumns + `, transition_seq, receipt_seq, check_seq, xmin::text FROM jobs
	WHERE id = ANY($1::text[])`
	// lockJobs is readJobs locking the rows, in id order, until the
	// transaction ends.
	lockJobs = readJobs + ` ORDER BY id FOR NO KEY UPDATE`

	// submitJobs inserts jobs in id order, with their first transitions
	// and receipts; a job whose id exists is left out, and nothing of it
	// written. It returns the ids inserted.
	submitJobs = `WITH ins AS (
	INSERT INTO jobs (` + jobColumns + `, priority, deadline_ms, receipt_seq, transition_seq)
	SELECT *, 1 FROM ` + newJobRows.unnest("u", 1) + `
	ORDER BY u.id COLLATE "C"
	ON CONFLICT (id) DO NOTHING
	RETURNING id, state, created_at_ms
), transition AS (
	INSERT INTO job_transition (job_id, seq, from_state, to_state, at_ms, reason)
	SELECT id, 1, '', state, created_at_ms, '` + job.ReasonSubmitted + `' FROM ins
), receipt AS (
	INSERT INTO job_receipt (job_id, seq, json, issued_at_ms, host_id, fence)
	SELECT r.id, 1, r.json, r.issued, r.host_id, r.fence FROM ` + newReceiptRows.unnest("r", len(newJobRows.types)+1) + `
	JOIN ins ON ins.id = r.id
)
SELECT id FROM ins`

	// writeJobs writes each job whose row is still the version read, and
	// the rows of its change, and returns the ids written; writeJobs[p]
	// has the parts p names (see writeParts) and takes their arrays, in
	// the order of writeParts. Closing a claim's attempts leaves out the
	// attempt the change writes (keep), so that no row is written twice:
	// the change's attempt replaces it whole anyway. Built on first use:
	// every layover command links this package, and most never write a
	// job to PostgreSQL.
	writeJobs = sync.OnceValue(func() (qs [1 << len(writeParts)]string) {
		set := make([]string, 0, len(jobRows.names))
		for _, n := range jobRows.names[1 : len(jobRows.names)-1] {
			set = append(set, n+" = u."+n)
		}
		for mask := range qs {
			n := 1
			next := func(r rowSet) int {
				at := n
				n += len(r.types)
				return at
			}
			q := `WITH upd AS (
	UPDATE jobs SET ` + strings.Join(set, ", ") + `
	FROM ` + jobRows.unnest("u", next(jobRows)) + `
	WHERE jobs.id = u.id AND jobs.xmin = u.read_xmin::xid
	RETURNING jobs.id
)`
			for i, part := range writeParts {
				if mask&(1<<i) != 0 {
					q += ", " + part.cte(part.rows.unnest(part.alias, next(*part.rows)))
				}
			}
			qs[mask] = q + `
SELECT id FROM upd`
		}
		return qs
	})
)

// writeParts are the parts of writeJobs after the jobs' own rows, in
// order: each writes its rows of the jobs written (upd).
var writeParts = [...]struct {
	rows  *rowSet
	alias string
	cte   func(from string) string
}{
	{&closedRows, "c", func(from string) string {
		return `closed AS (
	UPDATE job_attempt SET ended_at_ms = c.at_ms, outcome = c.outcome
	FROM ` + from + ` JOIN upd ON upd.id = c.job_id
	WHERE job_attempt.job_id = c.job_id AND job_attempt.fence = c.fence AND job_attempt.ended_at_ms = 0
		AND (c.keep IS NULL OR job_attempt.attempt_id <> c.keep)
)`
	}},
	{&transitionRows, "t", func(from string) string {
		return `transition AS (
	INSERT INTO job_transition (job_id, seq, from_state, to_state, at_ms, reason)
	SELECT t.* FROM ` + from + ` JOIN upd ON upd.id = t.job_id
)`
	}},
	{&attemptRows, "a", func(from string) string {
		return `attempt AS (
	INSERT INTO job_attempt (job_id, attempt_id, fence, started_at_ms, ended_at_ms, outcome, exit_code, waited_s)
	SELECT a.* FROM ` + from + ` JOIN upd ON upd.id = a.job_id
	ON CONFLICT (job_id, attempt_id) DO UPDATE SET fence = excluded.fence,
	started_at_ms = excluded.started_at_ms, ended_at_ms = excluded.ended_at_ms,
	outcome = excluded.outcome, exit_code = excluded.exit_code, waited_s = excluded.waited_s
)`
	}},
	{&receiptRows, "r", func(from string) string {
		return `receipt AS (
	INSERT INTO job_receipt (job_id, seq, json, issued_at_ms, host_id, fence)
	SELECT r.* FROM ` + from + ` JOIN upd ON upd.id = r.job_id
)`
	}},
	{&checkRows, "k", func(from string) string {
		return `checked AS (
	INSERT INTO job_check (job_id, seq, fence, at_ms, triggered_by, exit_code, result, detail)
	SELECT k.* FROM ` + from + ` JOIN upd ON upd.id = k.job_id
)`
	}},
}

// genericPlans has the server run the group's statements with the plans
// it keeps for them (prepared once per connection), for the rest of the
// transaction. Otherwise it plans writeJobs and submitJobs again at every
// execution, for the number of rows each array holds: with the few rows of
// a small group, planning took longer than writing (0.2–1.4 ms a
// statement). TestPlans checks the kept plans.
const genericPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// rows are rows of a rowSet, column by column.
type rows struct {
	set      *rowSet
	capacity int // rows expected, allocated at the first
	cols     [][]any
	n        int
}

func newRows(set *rowSet, capacity int) *rows { return &rows{set: set, capacity: max(1, capacity)} }

// add appends a row, a value per column. A column's values are all of one
// Go type.
func (r *rows) add(vals ...any) {
	if r.cols == nil {
		// One allocation for every column's values.
		all := make([]any, len(vals)*r.capacity)
		r.cols = make([][]any, len(vals))
		for i := range r.cols {
			r.cols[i] = all[i*r.capacity : i*r.capacity : (i+1)*r.capacity]
		}
	}
	for i, v := range vals {
		r.cols[i] = append(r.cols[i], v)
	}
	r.n++
}

// args are the arrays of the columns, slices of their values' own Go type,
// which pgx encodes whether or not it knows the statement's parameter
// types (default_query_exec_mode=exec does not).
func (r *rows) args() []any {
	args := make([]any, len(r.set.types))
	for i, t := range r.set.types {
		var col []any
		if r.cols != nil {
			col = r.cols[i]
		}
		args[i] = typed(col, t)
	}
	return args
}

// typed is vals, all of one Go type, as a slice of that type; an empty
// column is an empty slice of the SQL type's usual Go type.
func typed(vals []any, sqlType string) any {
	if len(vals) == 0 {
		switch sqlType {
		case "bigint":
			return []int64{}
		case "boolean":
			return []bool{}
		case "bytea":
			return [][]byte{}
		case "jsonb":
			return []json.RawMessage{}
		case "float8":
			return []float64{}
		default:
			return []string{}
		}
	}
	switch v := vals[0].(type) {
	case string:
		return as[string](vals)
	case int64:
		return as[int64](vals)
	case int:
		return as[int](vals)
	case bool:
		return as[bool](vals)
	case float64:
		return as[float64](vals)
	case []byte:
		return as[[]byte](vals)
	case json.RawMessage:
		return as[json.RawMessage](vals)
	case *string:
		return as[*string](vals)
	case *int64:
		return as[*int64](vals)
	default:
		panic(fmt.Sprintf("postgres: no array of %T for a set-based statement", v))
	}
}

func as[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}

// commitJobWrites commits a batch of job writes, in rounds of distinct
// jobs.
func (s *Store) commitJobWrites(ctx context.Context, calls []*jobCall) {
	for _, round := range rounds(calls) {
		s.commitRound(ctx, round, false)
	}
}

// rounds splits calls into groups of distinct jobs, in queue order, the
// n-th write of a job in the n-th group: the writes of one job commit in
// the order they were queued, each seeing those before it, and the writes
// of different jobs commute.
func rounds(calls []*jobCall) [][]*jobCall {
	seen := make(map[string]int, len(calls))
	var out [][]*jobCall
	for _, c := range calls {
		n := seen[c.Value.id]
		seen[c.Value.id] = n + 1
		if n == len(out) {
			out = append(out, nil)
		}
		out[n] = append(out[n], c)
	}
	return out
}

// commitRound commits the writes of distinct jobs in one transaction
// (lock: the locking way) and sets each call's error. The changes whose
// jobs changed after they were read go again, the locking way; when the
// server refuses a statement of a group of several, each write runs again
// on its own.
func (s *Store) commitRound(ctx context.Context, calls []*jobCall, lock bool) {
	err := retry(ctx, func() error { return s.commitGroup(ctx, calls, lock) })
	var pe *pgconn.PgError
	if err != nil && len(calls) > 1 && errors.As(err, &pe) {
		for i := range calls {
			s.commitRound(ctx, calls[i:i+1], lock)
		}
		return
	}
	var lost []*jobCall
	for _, c := range calls {
		w := c.Value
		switch {
		case c.Panicked():
		case err != nil:
			c.SetErr(firstErr(w.err, err))
		case w.lost && !lock:
			lost = append(lost, c)
		case w.lost:
			// Not while its row is locked: a bug, not the caller's.
			c.SetErr(fmt.Errorf("job %s changed while locked", w.id))
		case w.err != nil:
			c.SetErr(w.err)
		}
	}
	if len(lost) > 0 {
		s.commitRound(ctx, lost, true)
	}
}

// firstErr is the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readJob is a job as readJobs read it, or the error of reading it.
type readJob struct {
	job                                 job.Job
	transitionSeq, receiptSeq, checkSeq int64
	xmin                                string
	err                                 error
}

// commitGroup writes calls, of distinct jobs, in one transaction (lock:
// the locking way): see the top of this file. It returns the transaction's
// error; a write's own failure, or its lost row, goes to its jobWrite.
func (s *Store) commitGroup(ctx context.Context, calls []*jobCall, lock bool) error {
	var applies []*jobCall
	var ids []string
	newJobs := newRows(&newJobRows, len(calls))
	newReceipts := newRows(&newReceiptRows, len(calls))
	for _, c := range calls {
		w := c.Value
		w.out, w.created, w.err, w.lost = job.Job{}, false, nil, false
		switch {
		case c.Panicked(): // already failed, in an earlier try
		case w.ch != nil:
			applies = append(applies, c)
			ids = append(ids, w.id)
		default:
			j, receipts := w.sub.j, 0
			if rc := w.sub.rc; rc != nil {
				newReceipts.add(j.ID, receiptJSON(rc), store.MS(rc.IssuedAt), rc.HostID, rc.Fence)
				receipts = 1
			}
			newJobs.add(append(jobArgs(j, w.sub.spec), j.Spec.Priority, store.MS(j.Spec.Deadline), receipts)...)
		}
	}
	if len(applies) == 0 && newJobs.n == 0 {
		return nil
	}
	// Rows are written in id order (see the top of this file).
	slices.SortFunc(applies, func(a, b *jobCall) int { return strings.Compare(a.Value.id, b.Value.id) })
	for i, c := range applies {
		ids[i] = c.Value.id
	}

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection still in a transaction (a ROLLBACK that failed) is
	// closed on release, not reused.
	defer conn.Release()
	send := func(b *pgx.Batch) error {
		// A statement that fails aborts the transaction, and the server
		// skips what follows it, the COMMIT too.
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			rollback(ctx, conn)
			return err
		}
		return nil
	}

	inTx := false
	g := newGroupWrites(len(applies))
	if len(applies) > 0 {
		read := make(map[string]readJob, len(ids))
		query := readJobs
		b := &pgx.Batch{}
		if lock {
			b.Queue("BEGIN")
			b.Queue(genericPlans)
			query, inTx = lockJobs, true
		}
		b.Queue(query, ids).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r readJob
				r.job, r.err = scanJob(rows, &r.transitionSeq, &r.receiptSeq, &r.checkSeq, &r.xmin)
				id := r.job.ID
				if r.err != nil {
					// A row that does not decode (a damaged spec) fails
					// the change to its job alone.
					id = string(rows.RawValues()[0])
				}
				read[id] = r
			}
			return rows.Err()
		})
		if err := send(b); err != nil {
			return err
		}
		if s.afterRead != nil && !lock {
			s.afterRead()
		}
		for _, c := range applies {
			w := c.Value
			r, ok := read[w.id]
			switch {
			case !ok:
				w.err = job.ErrNotFound
			case r.err != nil:
				w.err = r.err
			default:
				w.err = c.Guard(func() error {
					var err error
					w.out, err = g.add(r, w.fence, *w.ch)
					return err
				})
			}
		}
	}

	b := &pgx.Batch{}
	if !inTx {
		if newJobs.n == 0 && g.jobs.n == 0 {
			return nil // every change was refused
		}
		b.Queue("BEGIN")
		b.Queue(genericPlans)
	}
	inserted := map[string]bool{}
	if newJobs.n > 0 {
		b.Queue(submitJobs, append(newJobs.args(), newReceipts.args()...)...).Query(func(rows pgx.Rows) error {
			return collectIDs(rows, inserted)
		})
	}
	written := map[string]bool{}
	if g.jobs.n > 0 {
		query, args := g.query()
		b.Queue(query, args...).Query(func(rows pgx.Rows) error {
			return collectIDs(rows, written)
		})
	}
	if newJobs.n == 0 && g.jobs.n == 0 {
		b.Queue("ROLLBACK") // nothing to keep: every change was refused
	} else {
		if newJobs.n > 0 || dueWork(applies) {
			b.Queue(notifyJobs) // delivered at the commit (changes.go)
		}
		b.Queue("COMMIT")
	}
	if err := send(b); err != nil {
		return err
	}
	for _, c := range calls {
		w := c.Value
		switch {
		case w.sub != nil:
			if inserted[w.id] {
				w.created, w.out = true, w.sub.j
			}
		case w.err == nil && !c.Panicked() && !written[w.id]:
			w.lost = true
		}
	}
	return nil
}

// dueWork reports whether one of the changes applied leaves its job with
// work for a scheduler (store.DueWork): the watchers are to hear of it.
func dueWork(applies []*jobCall) bool {
	for _, c := range applies {
		if w := c.Value; w.err == nil && !c.Panicked() && store.DueWork(w.out) {
			return true
		}
	}
	return false
}

// collectIDs adds the ids rows return to set.
func collectIDs(rows pgx.Rows, set map[string]bool) error {
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		set[id] = true
	}
	return rows.Err()
}

// receiptJSON is rc's JSON as stored: never NULL.
func receiptJSON(rc *job.Receipt) []byte {
	if rc.JSON == nil {
		return []byte{}
	}
	return rc.JSON
}

// groupWrites are the rows a group's changes write, per part of
// writeJobs.
type groupWrites struct {
	jobs, closed, transitions, attempts, receipts, checks *rows
}

func newGroupWrites(n int) *groupWrites {
	return &groupWrites{jobs: newRows(&jobRows, n), closed: newRows(&closedRows, 0),
		transitions: newRows(&transitionRows, n), attempts: newRows(&attemptRows, n), receipts: newRows(&receiptRows, n),
		checks: newRows(&checkRows, 0)}
}

// add checks ch against r, the job as read, and adds the rows that store
// it, its closed attempts, transition, attempt, receipt and check. It returns the
// changed job.
func (g *groupWrites) add(r readJob, fence int64, ch job.Change) (job.Job, error) {
	old := r.job
	id := old.ID
	j, taken, err := ch.Apply(old, fence)
	if err != nil {
		return job.Job{}, err
	}
	j = store.MSJob(j)
	transitionSeq, receiptSeq, checkSeq := r.transitionSeq, r.receiptSeq, r.checkSeq
	if ch.To != "" {
		transitionSeq++
	}
	if ch.Receipt != nil {
		receiptSeq++
	}
	if ch.Checked != nil {
		checkSeq++
	}
	// jobRows takes every column of jobArgs but spec and created_at.
	a := jobArgs(j, nil)
	g.jobs.add(slices.Concat(a[:1], a[2:5], a[6:], []any{transitionSeq, receiptSeq, checkSeq, r.xmin})...)
	if taken {
		outcome := job.OutcomeLeaseLost
		if j.State == job.Cancelled {
			outcome = job.OutcomeKilled
		}
		var keep *string
		if ch.Attempt != nil {
			keep = &ch.Attempt.ID
		}
		g.closed.add(id, old.Fence, store.MS(j.UpdatedAt), outcome, keep)
	}
	if ch.To != "" {
		g.transitions.add(id, transitionSeq, string(old.State), string(ch.To), store.MS(ch.Now), ch.Reason)
	}
	if a := ch.Attempt; a != nil {
		g.attempts.add(id, a.ID, a.Fence, store.MS(a.StartedAt), store.MS(a.EndedAt), a.Outcome, int64OrNil(a.ExitCode),
			a.WaitedS)
	}
	if rc := ch.Receipt; rc != nil {
		g.receipts.add(id, receiptSeq, receiptJSON(rc), store.MS(rc.IssuedAt), rc.HostID, rc.Fence)
	}
	if c := ch.Checked; c != nil {
		g.checks.add(id, checkSeq, c.Fence, store.MS(c.At), c.Trigger, int64OrNil(c.ExitCode), c.Result, c.Detail)
	}
	return j, nil
}

// query and args are the writeJobs statement of g's rows, with the parts
// that have rows, and its arguments.
func (g *groupWrites) query() (string, []any) {
	args := g.jobs.args()
	mask := 0
	for i, part := range [...]*rows{g.closed, g.transitions, g.attempts, g.receipts, g.checks} {
		if part.n > 0 {
			mask |= 1 << i
			args = append(args, part.args()...)
		}
	}
	return writeJobs()[mask], args
}
