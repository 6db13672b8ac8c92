-- A bounded history of quota observations per key, for the console's burn
-- chart and burn rates (docs/metrics.md). RecordStates writes it in the
-- transaction that upserts quota_state: per key, one row per 10-second
-- bucket of observed_at_ms (store.ObservationSpacing), the newest
-- observation of the bucket winning, and it deletes the rows more than
-- store.ObservationsKept buckets older than the key's newest one. Times are
-- bigint milliseconds since the Unix epoch, UTC. The table is new: no row
-- predates this migration.
CREATE TABLE quota_observation (
    host           text   COLLATE "C" NOT NULL,
    principal      text   COLLATE "C" NOT NULL,
    resource       text   COLLATE "C" NOT NULL,
    bucket         bigint NOT NULL,  -- observed_at_ms / 10000
    observed_at_ms bigint NOT NULL,
    remaining      bigint NOT NULL,  -- -1: unknown
    limit_units    bigint NOT NULL,  -- -1: unknown
    reset_at_ms    bigint NOT NULL,
    observed_by    text   NOT NULL,  -- the hostname of the observer
    PRIMARY KEY (host, principal, resource, bucket)
);
