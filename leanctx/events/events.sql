-- lean-ctx: the event log. One row per event; nothing here is ever updated or deleted.
-- Loaded by leanctx/events/sqlite_store.py (idempotent: every statement is IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS events (
    position        INTEGER PRIMARY KEY,              -- global order, gap-free (writers are serialized)
    stream          TEXT    NOT NULL,                 -- aggregate: 'type:id'
    version         INTEGER NOT NULL CHECK (version >= 1),
    kind            TEXT    NOT NULL,                 -- dotted, past tense: 'agent.registered'
    schema_version  INTEGER NOT NULL,
    ts              TEXT    NOT NULL,                 -- UTC, fixed-width ISO-8601 ('...T..:..:...ffffffZ')
    actor           TEXT,
    to_agent        TEXT,                             -- NULL = broadcast
    project         TEXT,
    channel         TEXT,
    consistency     TEXT    NOT NULL CHECK (consistency IN ('strong', 'eventual')),
    correlation_id  TEXT,
    causation_id    INTEGER,                          -- position of the event that caused this one
    idempotency_key TEXT,
    payload         BLOB    NOT NULL,                 -- msgspec JSON of the kind's Struct
    prev_hash       TEXT    NOT NULL,
    hash            TEXT    NOT NULL,                 -- sha256(prev_hash || canonical bytes)
    UNIQUE (stream, version)
);

CREATE UNIQUE INDEX IF NOT EXISTS events_idempotency_key
    ON events (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE INDEX IF NOT EXISTS events_causation
    ON events (causation_id) WHERE causation_id IS NOT NULL;

-- Immutability is enforced by the database, not only by convention.
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'EVENT_IMMUTABLE: the event log is append-only; events cannot be updated');
END;

CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'EVENT_IMMUTABLE: the event log is append-only; events cannot be deleted');
END;

-- Full-text index of each event's searchable text, kept as a catch-up index
-- (see docs/architecture.md: indexing inside the append transaction costs 2-3x ingest).
-- Contentless: the text lives in events.payload; rowid = events.position.
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(
    kind, stream, who, body,
    content = '',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE IF NOT EXISTS events_fts_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    position INTEGER NOT NULL                        -- last position indexed
);
INSERT OR IGNORE INTO events_fts_state (id, position) VALUES (1, 0);

-- Checkpoints of the projections (see leanctx/projections/): last position applied and
-- the projection version that wrote the rows; written in the same transaction as the rows.
CREATE TABLE IF NOT EXISTS projection_checkpoints (
    name     TEXT PRIMARY KEY,
    version  INTEGER NOT NULL,
    position INTEGER NOT NULL
);
