-- The quota ledger, logins, the activity log and waiting commands.
--
-- Times are bigint milliseconds since the Unix epoch, UTC, in columns named
-- *_ms; 0 means "none". Keys and ids are compared bytewise (COLLATE "C"), so
-- every backend orders them alike.

-- The last state seen for each (host, principal, resource).
CREATE TABLE quota_state (
    host           text    COLLATE "C" NOT NULL,
    principal      text    COLLATE "C" NOT NULL,
    resource       text    COLLATE "C" NOT NULL,
    limit_units    bigint  NOT NULL,  -- -1: unknown
    remaining      bigint  NOT NULL,  -- -1: unknown
    reset_at_ms    bigint  NOT NULL,  -- provider's reset on the observer's clock, or an assumed one
    reset_known    boolean NOT NULL,  -- false: reset_at_ms is assumed
    raw_reset      bigint  NOT NULL,  -- provider's raw reset value, 0: unknown
    observed_at_ms bigint  NOT NULL,  -- the most recent observation wins
    observed_by    text    NOT NULL,
    source         text    NOT NULL,
    cause          text    NOT NULL,  -- '', 'exhausted', 'below-reserve'
    PRIMARY KEY (host, principal, resource)
);

-- Logins learned for token fingerprints. Never a token.
CREATE TABLE principal_login (
    host          text   COLLATE "C" NOT NULL,
    fingerprint   text   COLLATE "C" NOT NULL,
    login         text   NOT NULL,
    learned_at_ms bigint NOT NULL,
    PRIMARY KEY (host, fingerprint)
);

CREATE TABLE activity (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms bigint NOT NULL,
    kind  text   NOT NULL,
    line  text   NOT NULL
);

-- The last skip reason written per scope, so a long wait writes one line.
CREATE TABLE skip_reason (
    scope      text   COLLATE "C" PRIMARY KEY,
    reason_key text   NOT NULL,
    at_ms      bigint NOT NULL
);

-- Commands waiting for a quota, for status.
CREATE TABLE waiter (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hostname      text   NOT NULL,
    pid           bigint NOT NULL,
    command       text   NOT NULL,
    host          text   NOT NULL,
    principal     text   NOT NULL,
    resource      text   NOT NULL,
    stage         text   NOT NULL,
    wait_until_ms bigint NOT NULL,
    started_at_ms bigint NOT NULL
);
