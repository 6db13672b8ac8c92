-- Durable jobs: their records, history, leases and the hosts that hold them.
-- Times are bigint milliseconds since the Unix epoch, UTC; 0 is "none".

CREATE TABLE jobs (
    id               text    COLLATE "C" PRIMARY KEY,
    spec             jsonb   NOT NULL,  -- job.Spec; never changes
    state            text    NOT NULL CHECK (state IN
                         ('ready', 'running', 'deferred', 'resumable', 'blocked', 'complete', 'failed', 'cancelled')),
    stage            text    NOT NULL,
    ownership        text    NOT NULL CHECK (ownership IN ('', 'retained', 'handoff')),
    priority         bigint  NOT NULL,  -- the spec's, for claim order
    deadline_ms      bigint  NOT NULL,  -- the spec's, for sweeping
    created_at_ms    bigint  NOT NULL,
    updated_at_ms    bigint  NOT NULL,
    run_at_ms        bigint  NOT NULL,
    resume_by_ms     bigint  NOT NULL,
    fence            bigint  NOT NULL CHECK (fence >= 0),  -- grows with every claim
    lease_owner      text    NOT NULL,  -- '': not claimed
    lease_until_ms   bigint  NOT NULL,
    progress_by_ms   bigint  NOT NULL,
    attempts         bigint  NOT NULL,
    probes           bigint  NOT NULL,
    approved         boolean NOT NULL,
    session_id       text    NOT NULL,
    checkpoint_stage text,              -- NULL: no checkpoint
    checkpoint_data  bytea,             -- exactly as reported
    checkpoint_at_ms bigint,
    -- The seq of the job's last transition and last receipt. Every write
    -- that appends one holds the job's row lock and bumps its counter, so
    -- seqs count 1, 2, 3... per job however writers interleave.
    transition_seq   bigint  NOT NULL,
    receipt_seq      bigint  NOT NULL,
    -- A job runs only while claimed.
    CHECK (state <> 'running' OR lease_owner <> '')
);

-- Claiming: unclaimed ready and resumable jobs in claim order (claimed
-- ones whose lease ran out are found through jobs_lease).
CREATE INDEX jobs_claim ON jobs (priority DESC, run_at_ms, created_at_ms, id)
    WHERE state IN ('ready', 'resumable') AND lease_owner = '';
-- The next claimable time.
CREATE INDEX jobs_claimable_at ON jobs (run_at_ms)
    WHERE state IN ('ready', 'resumable') AND lease_owner = '';
-- Wake-ups of retained deferrals.
CREATE INDEX jobs_wake ON jobs (run_at_ms)
    WHERE state = 'deferred' AND ownership = 'retained';
-- Sweeping: passed deadlines, expired receipts, lost leases and progress.
CREATE INDEX jobs_deadline ON jobs (deadline_ms)
    WHERE deadline_ms > 0 AND state IN ('ready', 'running', 'deferred', 'resumable', 'blocked');
CREATE INDEX jobs_resume_by ON jobs (resume_by_ms)
    WHERE resume_by_ms > 0 AND state IN ('deferred', 'resumable');
CREATE INDEX jobs_lease ON jobs (lease_until_ms) WHERE lease_owner <> '';
CREATE INDEX jobs_progress ON jobs (progress_by_ms) WHERE progress_by_ms > 0 AND state = 'running';
-- Listing and counting per state, oldest first.
CREATE INDEX jobs_state ON jobs (state, created_at_ms, id);

-- Runs of a job's process, upserted by attempt id, listed in insert order
-- (id: an attempt keeps its row, and so its place, when it is updated).
CREATE TABLE job_attempt (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id        text   COLLATE "C" NOT NULL REFERENCES jobs (id),
    attempt_id    text   NOT NULL,
    fence         bigint NOT NULL,
    started_at_ms bigint NOT NULL,
    ended_at_ms   bigint NOT NULL,  -- 0: still open
    outcome       text   NOT NULL,
    exit_code     bigint,           -- NULL: no exit seen
    waited_s      double precision NOT NULL,
    UNIQUE (job_id, attempt_id)
);
-- Closing the open attempts of one claim.
CREATE INDEX job_attempt_open ON job_attempt (job_id, fence) WHERE ended_at_ms = 0;

-- Every state change of a job; seq counts from 1 per job.
CREATE TABLE job_transition (
    job_id     text   COLLATE "C" NOT NULL REFERENCES jobs (id),
    seq        bigint NOT NULL,
    from_state text   NOT NULL,  -- '' for the submission
    to_state   text   NOT NULL,
    at_ms      bigint NOT NULL,
    reason     text   NOT NULL,
    PRIMARY KEY (job_id, seq)
);

-- Deferral receipts, byte for byte as issued; seq counts from 1 per job.
-- Receipts are evidence: append-only.
CREATE TABLE job_receipt (
    job_id       text   COLLATE "C" NOT NULL REFERENCES jobs (id),
    seq          bigint NOT NULL,
    json         bytea  NOT NULL,
    issued_at_ms bigint NOT NULL,
    PRIMARY KEY (job_id, seq)
);

CREATE FUNCTION job_receipt_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'receipts are append-only';
END
$$;
CREATE TRIGGER job_receipt_no_change BEFORE UPDATE OR DELETE ON job_receipt
    FOR EACH ROW EXECUTE FUNCTION job_receipt_append_only();
CREATE TRIGGER job_receipt_no_truncate BEFORE TRUNCATE ON job_receipt
    FOR EACH STATEMENT EXECUTE FUNCTION job_receipt_append_only();

-- Durable hosts (layover serve), with their heartbeat.
CREATE TABLE host (
    id            text   COLLATE "C" PRIMARY KEY,
    hostname      text   NOT NULL,
    pid           bigint NOT NULL,
    started_at_ms bigint NOT NULL,
    last_seen_ms  bigint NOT NULL
);
