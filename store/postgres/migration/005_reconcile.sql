-- Reconciling re-runs and waiting for credentials (docs/lifecycle.md).

-- auth-wait: waiting for working credentials, never for a quota reset.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check CHECK (state IN
    ('ready', 'running', 'deferred', 'resumable', 'auth-wait', 'blocked', 'complete', 'failed', 'cancelled'));

-- A job counts the attempts it started (runs: one that starts again is a
-- re-run, which reconciles first) and its secondary-limit deferrals in a
-- row. Rows written before this migration read their attempts as runs and
-- 0 secondaries. bigint, as
-- attempts and probes: any count one backend keeps the other keeps too.
-- check_seq is the seq of the job's last reconcile check, kept as
-- transition_seq is.
ALTER TABLE jobs ADD COLUMN runs bigint NOT NULL DEFAULT 0,
    ADD COLUMN secondaries bigint NOT NULL DEFAULT 0,
    ADD COLUMN check_seq bigint NOT NULL DEFAULT 0;
-- A job that ran before this migration has run as many times as it has
-- attempts: its next start is a re-run, which reconciles first.
UPDATE jobs SET runs = (SELECT count(*) FROM job_attempt a WHERE a.job_id = jobs.id);

-- The sweep fails an auth-wait job past its deadline; NextJobDue reads the
-- next credential re-check (run_at_ms) and the next such deadline.
-- jobs_deadline, whose state list leaves auth-wait out, is kept as it is.
CREATE INDEX jobs_auth_deadline ON jobs (deadline_ms) WHERE deadline_ms > 0 AND state = 'auth-wait';
CREATE INDEX jobs_auth_recheck ON jobs (run_at_ms) WHERE run_at_ms > 0 AND state = 'auth-wait';

-- The host that issued a receipt and the fence of the claim it was issued
-- under (0: at submission). Receipts stored before this migration read ''
-- and 0. Adding a column with a constant default rewrites no row and fires
-- no trigger: receipts stay append-only.
ALTER TABLE job_receipt ADD COLUMN host_id text NOT NULL DEFAULT '',
    ADD COLUMN fence bigint NOT NULL DEFAULT 0;

-- Reconcile checks (the job's check-cmd run before a re-run); seq counts
-- from 1 per job.
CREATE TABLE job_check (
    job_id       text   COLLATE "C" NOT NULL REFERENCES jobs (id),
    seq          bigint NOT NULL,
    fence        bigint NOT NULL,
    at_ms        bigint NOT NULL,
    triggered_by text   NOT NULL,  -- 'resume', 'transient retry', 'lease lost', ...
    exit_code    bigint,           -- NULL: the check could not run
    result       text   NOT NULL,  -- 'complete', 'run', 'blocked'
    detail       text   NOT NULL,
    PRIMARY KEY (job_id, seq)
);
