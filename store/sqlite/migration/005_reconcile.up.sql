-- Reconciling re-runs and waiting for credentials (docs/lifecycle.md).
-- A job counts the attempts it started (runs: one that starts again is a
-- re-run, which reconciles first) and its secondary-limit deferrals in a
-- row. Rows written before this migration read their attempts as runs and
-- 0 secondaries.
ALTER TABLE jobs ADD COLUMN runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN secondaries INTEGER NOT NULL DEFAULT 0;
-- A job that ran before this migration has run as many times as it has
-- attempts: its next start is a re-run, which reconciles first.
UPDATE jobs SET runs = (SELECT count(*) FROM job_attempt a WHERE a.job_id = jobs.id);

-- The host that issued a receipt and the fence of the claim it was issued
-- under (0: at submission). Receipts stored before this migration read ''
-- and 0. Adding a column fires no trigger: receipts stay append-only.
ALTER TABLE job_receipt ADD COLUMN host_id TEXT NOT NULL DEFAULT '';
ALTER TABLE job_receipt ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;

-- Reconcile checks (the job's check-cmd run before a re-run); seq counts
-- from 1 per job. A state of the jobs table needs no change here: state is
-- free text, and auth-wait jobs are swept and found through the indexes on
-- (state, ...) that exist.
CREATE TABLE job_check (
    job_id    TEXT    NOT NULL REFERENCES jobs (id),
    seq       INTEGER NOT NULL,
    fence     INTEGER NOT NULL,
    at_ms     INTEGER NOT NULL,
    triggered_by TEXT NOT NULL,  -- 'resume', 'transient retry', 'lease lost', ...
    exit_code INTEGER,           -- NULL: the check could not run
    result    TEXT    NOT NULL,  -- 'complete', 'run', 'blocked'
    detail    TEXT    NOT NULL,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
