-- Schedules that serve runs (docs/schedules.md) and their claimed slots.
-- A slot is claimed once across every process: the primary key of
-- schedule_slot is (schedule, slot_at_ms), and a claim inserts with ON
-- CONFLICT DO NOTHING. argv and quota are JSON arrays of strings, policy a
-- JSON object of flag names to values. Times are milliseconds since the
-- Unix epoch, UTC. The tables are new: no row predates this migration.
CREATE TABLE schedule (
    name          TEXT    NOT NULL PRIMARY KEY,
    cron          TEXT    NOT NULL,
    tz            TEXT    NOT NULL,
    argv          TEXT    NOT NULL,  -- JSON array
    quota         TEXT    NOT NULL,  -- JSON array
    policy        TEXT    NOT NULL,  -- JSON object
    missed        TEXT    NOT NULL,  -- 'ran' or 'missed'
    created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE schedule_slot (
    schedule      TEXT    NOT NULL REFERENCES schedule (name) ON DELETE CASCADE,
    slot_at_ms    INTEGER NOT NULL,
    host_id       TEXT    NOT NULL,
    claimed_at_ms INTEGER NOT NULL,
    result        TEXT    NOT NULL,  -- running, ran, skipped, missed
    detail        TEXT    NOT NULL,
    late          INTEGER NOT NULL,  -- 1: claimed after its time passed unclaimed
    PRIMARY KEY (schedule, slot_at_ms)
) WITHOUT ROWID;
