-- A bounded history of quota observations per key, for the console's burn
-- chart and burn rates (docs/metrics.md). RecordStates writes it in the
-- transaction that upserts quota_state: per key, one row per 10-second
-- bucket of observed_at_ms (store.ObservationSpacing), the newest
-- observation of the bucket winning, and it deletes the rows more than
-- store.ObservationsKept buckets older than the key's newest one. Times are
-- milliseconds since the Unix epoch, UTC. The table is new: no row
-- predates this migration.
CREATE TABLE quota_observation (
    host           TEXT    NOT NULL,
    principal      TEXT    NOT NULL,
    resource       TEXT    NOT NULL,
    bucket         INTEGER NOT NULL,  -- observed_at_ms / 10000
    observed_at_ms INTEGER NOT NULL,
    remaining      INTEGER NOT NULL,  -- -1: unknown
    limit_units    INTEGER NOT NULL,  -- -1: unknown
    reset_at_ms    INTEGER NOT NULL,
    observed_by    TEXT    NOT NULL,  -- the hostname of the observer
    PRIMARY KEY (host, principal, resource, bucket)
) WITHOUT ROWID;
