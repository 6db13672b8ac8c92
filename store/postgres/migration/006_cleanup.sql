-- Cleanup commands (docs/lifecycle.md, Cleanup): the state of a job's
-- cleanup, '' when it has none, 'armed' until a host runs it once the job
-- ended cancelled or failed, then 'running <host>', 'done' or
-- 'failed: <why>'. Rows written before this migration read ''; a column
-- with a constant default rewrites no row.
ALTER TABLE jobs ADD COLUMN cleanup text NOT NULL DEFAULT '';

-- PendingCleanups reads the armed cleanups, oldest update first; few jobs
-- are ever armed at once, so the index holds only those.
CREATE INDEX jobs_cleanup_armed ON jobs (updated_at_ms, id) WHERE cleanup = 'armed';
