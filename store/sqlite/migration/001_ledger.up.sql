-- The quota ledger: the last state seen for each (host, principal, resource).
-- Times are milliseconds since the Unix epoch, UTC.
CREATE TABLE quota_state (
    host           TEXT    NOT NULL,
    principal      TEXT    NOT NULL,
    resource       TEXT    NOT NULL,
    limit_units    INTEGER NOT NULL,  -- -1: unknown
    remaining      INTEGER NOT NULL,  -- -1: unknown
    reset_at_ms    INTEGER NOT NULL,  -- provider's reset on this machine's clock, or an assumed one
    reset_known    INTEGER NOT NULL,  -- 0: reset_at_ms is assumed
    raw_reset      INTEGER NOT NULL,  -- provider's raw reset value, 0: unknown
    observed_at_ms INTEGER NOT NULL,
    observed_by    TEXT    NOT NULL,
    source         TEXT    NOT NULL,
    cause          TEXT    NOT NULL,  -- '', 'exhausted', 'below-reserve'
    PRIMARY KEY (host, principal, resource)
) WITHOUT ROWID;

-- Logins learned for token fingerprints. Never a token.
CREATE TABLE principal_login (
    host          TEXT    NOT NULL,
    fingerprint   TEXT    NOT NULL,
    login         TEXT    NOT NULL,
    learned_at_ms INTEGER NOT NULL,
    PRIMARY KEY (host, fingerprint)
) WITHOUT ROWID;

CREATE TABLE activity (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms INTEGER NOT NULL,
    kind  TEXT    NOT NULL,
    line  TEXT    NOT NULL
);

-- The last skip reason written per scope, so a long wait writes one line.
CREATE TABLE skip_reason (
    scope      TEXT    PRIMARY KEY,
    reason_key TEXT    NOT NULL,
    at_ms      INTEGER NOT NULL
) WITHOUT ROWID;

-- Commands waiting for a quota, for status.
CREATE TABLE waiter (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    hostname      TEXT    NOT NULL,
    pid           INTEGER NOT NULL,
    command       TEXT    NOT NULL,
    host          TEXT    NOT NULL,
    principal     TEXT    NOT NULL,
    resource      TEXT    NOT NULL,
    stage         TEXT    NOT NULL,
    wait_until_ms INTEGER NOT NULL,
    started_at_ms INTEGER NOT NULL
);
