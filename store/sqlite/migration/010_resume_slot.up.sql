-- The resume slots of docs/lifecycle.md (Resume pacing): per quota key, the
-- next time a resume may start, in microseconds since the Unix epoch, UTC.
-- TakeResumeSlot advances it by the resume interval in one statement, so
-- every process sharing the store counts the same per-key resume rate. The
-- table is new: no row predates this migration.
CREATE TABLE resume_slot (
    host      TEXT    NOT NULL,
    principal TEXT    NOT NULL,
    resource  TEXT    NOT NULL,
    next_us   INTEGER NOT NULL,
    PRIMARY KEY (host, principal, resource)
) WITHOUT ROWID;
