-- Each host records its own lease length, and liveness is judged by it
-- (job.Host.Live). A host registered before this migration gets 30 s, the
-- default lease, which was the one liveness was judged by then.
ALTER TABLE host ADD COLUMN lease_ms bigint NOT NULL DEFAULT 30000 CHECK (lease_ms >= 0);
