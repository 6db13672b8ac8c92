-- The resume slots of docs/lifecycle.md (Resume pacing): per quota key, the
-- next time a resume may start, in bigint microseconds since the Unix epoch,
-- UTC. TakeResumeSlot advances it by the resume interval in one statement
-- (the upsert locks the row), so every host of the fleet counts the same
-- per-key resume rate. The table is new: no row predates this migration.
CREATE TABLE resume_slot (
    host      text   COLLATE "C" NOT NULL,
    principal text   COLLATE "C" NOT NULL,
    resource  text   COLLATE "C" NOT NULL,
    next_us   bigint NOT NULL,
    PRIMARY KEY (host, principal, resource)
);
