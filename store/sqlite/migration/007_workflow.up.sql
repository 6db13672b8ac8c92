-- Workflow runs (docs/workflows.md): each run, its tasks and each task's
-- history (package workflow/record). Times are milliseconds since the Unix
-- epoch, UTC; 0 is "none". Every update is a compare-and-set on version.
-- The tables are new: no row predates this migration.

CREATE TABLE workflow_run (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL,
    definition    BLOB    NOT NULL,  -- the definition as run, JSON byte for byte; never changes
    status        TEXT    NOT NULL,
    durable       INTEGER NOT NULL,  -- flow submit: the durable host owns the run
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    deadline_ms   INTEGER NOT NULL,
    starts        INTEGER NOT NULL,
    version       INTEGER NOT NULL
);

-- Runs lists the runs oldest first.
CREATE INDEX workflow_run_created ON workflow_run (created_at_ms, id);

CREATE TABLE workflow_task (
    run_id           TEXT    NOT NULL REFERENCES workflow_run (id),
    name             TEXT    NOT NULL,
    position         INTEGER NOT NULL,  -- its place in the run's tasks, from 0
    state            TEXT    NOT NULL,
    stage            TEXT    NOT NULL,
    attempts         INTEGER NOT NULL,
    starts           INTEGER NOT NULL,
    candidate        TEXT    NOT NULL,
    session_id       TEXT    NOT NULL,
    workdir          TEXT    NOT NULL,
    quota            TEXT,              -- JSON {provider, resource, reset_at_ms, message}; NULL: none
    limited          TEXT    NOT NULL,  -- JSON {candidate: until_ms}
    waiting_on       TEXT    NOT NULL,
    checkpoint_stage TEXT,              -- NULL: no checkpoint
    checkpoint_data  BLOB,
    checkpoint_at_ms INTEGER,
    job_id           TEXT    NOT NULL,
    updated_at_ms    INTEGER NOT NULL,
    version          INTEGER NOT NULL,
    event_seq        INTEGER NOT NULL,  -- the seq of its last event
    PRIMARY KEY (run_id, name),
    UNIQUE (run_id, position)
) WITHOUT ROWID;

-- A task's history; seq counts from 1 per task. Append-only.
CREATE TABLE workflow_task_event (
    run_id     TEXT    NOT NULL,
    task       TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL,
    from_state TEXT    NOT NULL,
    to_state   TEXT    NOT NULL,
    reason     TEXT    NOT NULL,
    attempt_id TEXT    NOT NULL,
    exit_code  INTEGER,            -- NULL: no exit seen
    outcome    TEXT    NOT NULL,
    candidate  TEXT    NOT NULL,
    PRIMARY KEY (run_id, task, seq),
    FOREIGN KEY (run_id, task) REFERENCES workflow_task (run_id, name)
) WITHOUT ROWID;

CREATE TRIGGER workflow_task_event_no_update BEFORE UPDATE ON workflow_task_event
BEGIN SELECT RAISE(ABORT, 'task events are append-only'); END;
CREATE TRIGGER workflow_task_event_no_delete BEFORE DELETE ON workflow_task_event
BEGIN SELECT RAISE(ABORT, 'task events are append-only'); END;
