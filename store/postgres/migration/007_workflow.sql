-- Workflow runs (docs/workflows.md): each run, its tasks and each task's
-- history (package workflow/record). Times are bigint milliseconds since
-- the Unix epoch, UTC; 0 is "none". Every update is a compare-and-set on
-- version, under the row's lock. The tables are new: no row predates this
-- migration.

CREATE TABLE workflow_run (
    id            text    COLLATE "C" PRIMARY KEY,
    name          text    NOT NULL,
    definition    bytea   NOT NULL,  -- the definition as run, JSON byte for byte; never changes
    status        text    NOT NULL CHECK (status IN ('running', 'paused', 'complete', 'failed', 'cancelled')),
    durable       boolean NOT NULL,  -- flow submit: the durable host owns the run
    created_at_ms bigint  NOT NULL,
    updated_at_ms bigint  NOT NULL,
    deadline_ms   bigint  NOT NULL,
    starts        bigint  NOT NULL CHECK (starts >= 0),
    version       bigint  NOT NULL CHECK (version >= 1)
);

-- Runs lists the runs oldest first; CountRuns counts them per status.
CREATE INDEX workflow_run_created ON workflow_run (created_at_ms, id);
CREATE INDEX workflow_run_status ON workflow_run (status);

CREATE TABLE workflow_task (
    run_id           text    COLLATE "C" NOT NULL REFERENCES workflow_run (id),
    name             text    COLLATE "C" NOT NULL,
    position         bigint  NOT NULL,  -- its place in the run's tasks, from 0
    state            text    NOT NULL CHECK (state IN ('pending', 'running', 'waiting', 'paused', 'auth-wait',
                         'complete', 'failed', 'blocked', 'cancelled', 'skipped')),
    stage            text    NOT NULL,
    attempts         bigint  NOT NULL CHECK (attempts >= 0),
    starts           bigint  NOT NULL CHECK (starts >= 0),
    candidate        text    NOT NULL,
    session_id       text    NOT NULL,
    workdir          text    NOT NULL,
    quota            jsonb,             -- {provider, resource, reset_at_ms, message}; NULL: none
    limited          jsonb   NOT NULL,  -- {candidate: until_ms}
    waiting_on       text    NOT NULL,
    checkpoint_stage text,              -- NULL: no checkpoint
    checkpoint_data  bytea,             -- exactly as reported
    checkpoint_at_ms bigint,
    job_id           text    NOT NULL,
    updated_at_ms    bigint  NOT NULL,
    version          bigint  NOT NULL CHECK (version >= 1),
    -- The seq of the task's last event. Every write that appends one holds
    -- the task's row lock and bumps it, so seqs count 1, 2, 3... per task.
    event_seq        bigint  NOT NULL,
    PRIMARY KEY (run_id, name),
    UNIQUE (run_id, position)
);

-- A task's history; seq counts from 1 per task. Append-only.
CREATE TABLE workflow_task_event (
    run_id     text   COLLATE "C" NOT NULL,
    task       text   COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    at_ms      bigint NOT NULL,
    from_state text   NOT NULL,
    to_state   text   NOT NULL,
    reason     text   NOT NULL,
    attempt_id text   NOT NULL,
    exit_code  bigint,            -- NULL: no exit seen
    outcome    text   NOT NULL,
    candidate  text   NOT NULL,
    PRIMARY KEY (run_id, task, seq),
    FOREIGN KEY (run_id, task) REFERENCES workflow_task (run_id, name)
);

CREATE FUNCTION workflow_task_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'task events are append-only';
END
$$;
CREATE TRIGGER workflow_task_event_no_change BEFORE UPDATE OR DELETE ON workflow_task_event
    FOR EACH ROW EXECUTE FUNCTION workflow_task_event_append_only();
CREATE TRIGGER workflow_task_event_no_truncate BEFORE TRUNCATE ON workflow_task_event
    FOR EACH STATEMENT EXECUTE FUNCTION workflow_task_event_append_only();
