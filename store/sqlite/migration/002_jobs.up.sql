-- Durable jobs: their records, history, leases and the hosts that hold them.
-- Times are milliseconds since the Unix epoch, UTC; 0 is "none".

CREATE TABLE jobs (
    id               TEXT    NOT NULL PRIMARY KEY,
    spec             TEXT    NOT NULL,  -- job.Spec as JSON; never changes
    state            TEXT    NOT NULL,
    stage            TEXT    NOT NULL,
    ownership        TEXT    NOT NULL,  -- '', 'retained', 'handoff'
    priority         INTEGER NOT NULL,  -- the spec's, for claim order
    deadline_ms      INTEGER NOT NULL,  -- the spec's, for sweeping
    created_at_ms    INTEGER NOT NULL,
    updated_at_ms    INTEGER NOT NULL,
    run_at_ms        INTEGER NOT NULL,
    resume_by_ms     INTEGER NOT NULL,
    fence            INTEGER NOT NULL,
    lease_owner      TEXT    NOT NULL,  -- '': not claimed
    lease_until_ms   INTEGER NOT NULL,
    progress_by_ms   INTEGER NOT NULL,
    attempts         INTEGER NOT NULL,
    probes           INTEGER NOT NULL,
    approved         INTEGER NOT NULL,
    session_id       TEXT    NOT NULL,
    checkpoint_stage TEXT,              -- NULL: no checkpoint
    checkpoint_data  BLOB,
    checkpoint_at_ms INTEGER
);

-- Claiming: due ready and resumable jobs, highest priority first.
CREATE INDEX jobs_claim ON jobs (state, priority DESC, run_at_ms, created_at_ms, id);
-- Wake-ups and the next due time.
CREATE INDEX jobs_run_at ON jobs (state, run_at_ms);
-- Sweeping: expired receipts, passed deadlines, lost leases and progress.
CREATE INDEX jobs_resume_by ON jobs (state, resume_by_ms) WHERE resume_by_ms > 0;
CREATE INDEX jobs_deadline ON jobs (state, deadline_ms) WHERE deadline_ms > 0;
CREATE INDEX jobs_lease ON jobs (lease_until_ms) WHERE lease_owner <> '';
CREATE INDEX jobs_progress ON jobs (progress_by_ms) WHERE progress_by_ms > 0;

-- Runs of a job's process, upserted by attempt id, listed in insert order.
CREATE TABLE job_attempt (
    job_id        TEXT    NOT NULL REFERENCES jobs (id),
    attempt_id    TEXT    NOT NULL,
    fence         INTEGER NOT NULL,
    started_at_ms INTEGER NOT NULL,
    ended_at_ms   INTEGER NOT NULL,
    outcome       TEXT    NOT NULL,
    exit_code     INTEGER,            -- NULL: no exit seen
    waited_s      REAL    NOT NULL,
    UNIQUE (job_id, attempt_id)
);

-- Every state change of a job; seq counts from 1 per job.
CREATE TABLE job_transition (
    job_id     TEXT    NOT NULL REFERENCES jobs (id),
    seq        INTEGER NOT NULL,
    from_state TEXT    NOT NULL,      -- '' for the submission
    to_state   TEXT    NOT NULL,
    at_ms      INTEGER NOT NULL,
    reason     TEXT    NOT NULL,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

-- Deferral receipts, exactly as issued; seq counts from 1 per job.
-- Receipts are evidence: append-only.
CREATE TABLE job_receipt (
    job_id       TEXT    NOT NULL REFERENCES jobs (id),
    seq          INTEGER NOT NULL,
    json         BLOB    NOT NULL,
    issued_at_ms INTEGER NOT NULL,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

CREATE TRIGGER job_receipt_no_update BEFORE UPDATE ON job_receipt
BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER job_receipt_no_delete BEFORE DELETE ON job_receipt
BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;

-- Durable hosts (layover serve), with their heartbeat.
CREATE TABLE host (
    id            TEXT    NOT NULL PRIMARY KEY,
    hostname      TEXT    NOT NULL,
    pid           INTEGER NOT NULL,
    started_at_ms INTEGER NOT NULL,
    last_seen_ms  INTEGER NOT NULL
) WITHOUT ROWID;
