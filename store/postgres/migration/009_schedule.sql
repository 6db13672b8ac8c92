-- Schedules that serve runs (docs/schedules.md) and their claimed slots.
-- A slot is claimed once across the fleet: the primary key of
-- schedule_slot is (schedule, slot_at_ms), and a claim inserts with ON
-- CONFLICT DO NOTHING. argv and quota are JSON arrays of strings, policy a
-- JSON object of flag names to values. Times are bigint milliseconds since
-- the Unix epoch, UTC. The tables are new: no row predates this migration.
CREATE TABLE schedule (
    name          text   COLLATE "C" NOT NULL PRIMARY KEY,
    cron          text   NOT NULL,
    tz            text   NOT NULL,
    argv          text   NOT NULL,  -- JSON array
    quota         text   NOT NULL,  -- JSON array
    policy        text   NOT NULL,  -- JSON object
    missed        text   NOT NULL,  -- 'ran' or 'missed'
    created_at_ms bigint NOT NULL
);

CREATE TABLE schedule_slot (
    schedule      text    COLLATE "C" NOT NULL REFERENCES schedule (name) ON DELETE CASCADE,
    slot_at_ms    bigint  NOT NULL,
    host_id       text    NOT NULL,
    claimed_at_ms bigint  NOT NULL,
    result        text    NOT NULL,  -- running, ran, skipped, missed
    detail        text    NOT NULL,
    late          boolean NOT NULL,  -- claimed after its time passed unclaimed
    PRIMARY KEY (schedule, slot_at_ms)
);
