-- A job's submission is said by the job's own row, not by a job_transition
-- row: its state then (ready or deferred), at created_at_ms, for the reason
-- "submitted". A submit writes one row fewer (docs/benchmarks-host.md, §4).
-- '' marks a job submitted before this migration: its submission is its
-- first job_transition row.
ALTER TABLE jobs ADD COLUMN submitted_state TEXT NOT NULL DEFAULT '';
