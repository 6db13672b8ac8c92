-- ClaimJobs reads unclaimed jobs in claim order through jobs_claim. When the
-- statistics are missing or stale (a burst of submissions into a new or idle
-- store), the planner took jobs_claimable_at instead, whose predicate is the
-- same, and sorted every claimable job at every claim. "fence >= 0" holds for
-- every job (a CHECK of jobs); written into this index's predicate, and into
-- NextJobDue's query, it keeps ClaimJobs, which does not say it, off this
-- index.
DROP INDEX jobs_claimable_at;
CREATE INDEX jobs_claimable_at ON jobs (run_at_ms)
    WHERE state IN ('ready', 'resumable') AND lease_owner = '' AND fence >= 0;
