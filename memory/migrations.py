"""Schema changes as a list of small numbered functions; applied names live in `_migrations`.

Never edit a migration that has shipped: add a new one. Each says why it exists.

Two engines, one history:
- SQLite runs every migration in order, as it always has (m001-m012 are SQLite DDL).
- PostgreSQL has no history before memory/schema.py: a new database is created from that module
  in one transaction (the **baseline**: extension, tables, indexes, the seed rows of `seed`) and
  every migration this code knows is recorded as applied. An existing PostgreSQL database runs
  the migrations added after it was created, like SQLite. So every migration from m020 on runs on
  both engines: write it once, portably (`conn.execute` of SQL both accept, or
  `add_table(conn, schema.some_table)` / `add_column(conn, "table", column)`, which compile a
  memory/schema.py definition for the connection's engine), and change memory/schema.py in the
  same commit. tests/test_store_schema.py proves the schema SQLite reaches and the one PostgreSQL
  is created with agree, table by table and column by column.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

MIGRATIONS: list[Callable] = []


def migration(fn: Callable) -> Callable:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_initial(conn):
    """The spine: participants, consent records, the message log with its keys, traces."""
    _script(
        conn,
        """
        CREATE TABLE participants (
            participant TEXT PRIMARY KEY,
            tz TEXT NOT NULL,
            pass_hash TEXT,
            created_at TEXT NOT NULL,
            first_local_date TEXT,          -- local date of the first message: day 1
            next_ordinal INTEGER NOT NULL DEFAULT 1,
            index_epoch INTEGER NOT NULL DEFAULT 0, -- bumped by every deletion: caches rebuild
            settings TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE consent_records (
            id INTEGER PRIMARY KEY,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            version TEXT NOT NULL,
            scopes TEXT NOT NULL,
            accepted_at TEXT NOT NULL,
            withdrawn_at TEXT
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,         -- stable across VACUUM: the vector index keys on it
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            dayid TEXT NOT NULL,
            day_n INTEGER NOT NULL,
            day_j INTEGER NOT NULL,
            sender TEXT NOT NULL CHECK (sender IN ('user', 'companion')),
            text TEXT NOT NULL,
            ts TEXT NOT NULL,
            context TEXT NOT NULL,
            UNIQUE (participant, ordinal),
            UNIQUE (participant, dayid)
        );
        -- Last j handed out per (participant, day): kept when messages are deleted,
        -- so a deletion never frees a key for reuse.
        CREATE TABLE day_counters (
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            day_n INTEGER NOT NULL,
            last_j INTEGER NOT NULL,
            PRIMARY KEY (participant, day_n)
        );
        CREATE TABLE traces (
            id INTEGER PRIMARY KEY,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            dayid TEXT,
            created_at TEXT NOT NULL,
            arm TEXT,
            gate TEXT,
            decision INTEGER,
            data TEXT NOT NULL
        );
        CREATE INDEX traces_by_participant ON traces(participant, id);
        """,
    )


@migration
def m002_message_vectors(conn):
    """Dense vectors (all-MiniLM-L6-v2, 384 floats) beside the messages, in sqlite-vec.

    rowid = messages.id. Queries scan a numpy copy (faster than vec0 KNN at this size); the
    table is the persistent truth that copy is loaded from, and rows leave with their message.
    """
    conn.execute(
        "CREATE VIRTUAL TABLE message_vectors USING vec0("
        "participant TEXT PARTITION KEY, ordinal INTEGER, embedding FLOAT[384])"
    )


@migration
def m003_trials(conn):
    """Live gate trials: a fixed arm or a seeded per-turn randomization per participant."""
    conn.execute(
        """CREATE TABLE trials (
            participant TEXT PRIMARY KEY REFERENCES participants(participant) ON DELETE CASCADE,
            mode TEXT NOT NULL CHECK (mode IN ('fixed', 'randomized')),
            arms TEXT NOT NULL,          -- JSON list of {gate, retriever, policy}
            seed INTEGER,
            turns INTEGER NOT NULL DEFAULT 0,  -- arms handed out so far: the randomization index
            created_at TEXT NOT NULL
        )"""
    )


@migration
def m004_consent_events(conn):
    """The consent audit log, kept when a participant is erased: so it names nobody.

    `subject` is a keyed hash of the participant name (key in `consent_meta`, made here once
    per data directory), never the name; `detail` holds versions, scopes and counts, never
    message content. No `participant` column, on purpose: erasure deletes from every table
    that has one.
    """
    import secrets

    conn.execute("CREATE TABLE consent_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO consent_meta VALUES ('audit_key', ?)", (secrets.token_hex(32),))
    conn.execute(
        """CREATE TABLE consent_events (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            event TEXT NOT NULL,     -- accepted | scope_withdrawn | withdrawn | erased | retention_sweep | exported
            subject TEXT,            -- keyed hash of the participant name; NULL for study-wide events
            version TEXT,
            scopes TEXT,             -- JSON list
            detail TEXT NOT NULL DEFAULT '{}'
        )"""
    )
    conn.execute("CREATE INDEX consent_events_by_subject ON consent_events(subject, id)")


@migration
def m005_export_records(conn):
    """Releases written by `companion export`, who is in them, and their surrogate maps.

    The surrogate map (original -> surrogate) is kept here, apart from the release, one row per
    participant whose text held the original, so erasing or withdrawing export consent removes
    that participant's originals (both tables have a `participant` column).
    """
    conn.execute(
        """CREATE TABLE exports (
            release TEXT PRIMARY KEY,     -- random id, also in the manifest
            created_at TEXT NOT NULL,
            path TEXT NOT NULL,
            seed INTEGER,
            n_participants INTEGER NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE export_members (
            release TEXT NOT NULL REFERENCES exports(release) ON DELETE CASCADE,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            pseudonym TEXT NOT NULL,      -- U01, U02 ... in the release
            PRIMARY KEY (release, participant)
        )"""
    )
    conn.execute(
        """CREATE TABLE export_surrogates (
            release TEXT NOT NULL REFERENCES exports(release) ON DELETE CASCADE,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            original TEXT NOT NULL,
            surrogate TEXT NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX export_surrogates_by_release ON export_surrogates(release, participant)")


@migration
def m006_derived_memory(conn):
    """Derived memory (issue 4): profile claims, preference cells, file-memory lines and versions.

    Every item carries its sources as JSON [[dayid, ordinal], ...] and a validity window in
    ordinals: it is current at `as_of` when valid_from < as_of and (valid_to IS NULL or
    as_of <= valid_to). A superseding item starts at the ordinal where the old one stops, so
    exactly one value of a slot is current at any bound. Every table has a `participant`
    column, so consent.erasure removes them all. `memory_tombstones` hold only hashes.
    """
    _script(
        conn,
        """
        CREATE TABLE memory_claims (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: versions and tombstones name ids
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            slot TEXT,                       -- what a contradiction is about (residence, age ...)
            text TEXT NOT NULL,
            norm TEXT NOT NULL,
            category TEXT NOT NULL,
            confidence REAL NOT NULL,
            context TEXT NOT NULL,
            sources TEXT NOT NULL,           -- JSON [[dayid, ordinal], ...]
            valid_from INTEGER NOT NULL,
            valid_to INTEGER,
            from_dayid TEXT NOT NULL,
            to_dayid TEXT,
            status TEXT NOT NULL CHECK (status IN ('current', 'superseded')),
            verdict TEXT NOT NULL,
            superseded_by INTEGER,
            origin TEXT NOT NULL,            -- extractor name or 'manual'
            created_at TEXT NOT NULL
        );
        CREATE INDEX memory_claims_by_participant ON memory_claims(participant, slot, status);
        CREATE TABLE memory_cells (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: versions and tombstones name ids
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            context TEXT NOT NULL,
            attribute TEXT NOT NULL,
            setting TEXT NOT NULL,
            evidence TEXT NOT NULL,
            sources TEXT NOT NULL,
            valid_from INTEGER NOT NULL,
            valid_to INTEGER,
            from_dayid TEXT NOT NULL,
            to_dayid TEXT,
            status TEXT NOT NULL CHECK (status IN ('current', 'superseded')),
            verdict TEXT NOT NULL,
            superseded_by INTEGER,
            origin TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX memory_cells_by_key ON memory_cells(participant, context, attribute, status);
        CREATE TABLE memory_file_lines (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: versions and tombstones name ids
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            scope TEXT NOT NULL,
            text TEXT NOT NULL,
            norm TEXT NOT NULL,
            since_dayid TEXT,
            sources TEXT NOT NULL,
            valid_from INTEGER NOT NULL,
            valid_to INTEGER,
            status TEXT NOT NULL CHECK (status IN ('current', 'replaced', 'removed')),
            origin TEXT NOT NULL,            -- 'claim:<id>', 'cell:<id>' or 'manual'
            pos INTEGER NOT NULL DEFAULT 0,  -- place in the document: a replacement takes its predecessor's
            created_at TEXT NOT NULL
        );
        CREATE INDEX memory_file_lines_by_participant ON memory_file_lines(participant, status);
        CREATE TABLE memory_file_versions (
            id INTEGER PRIMARY KEY,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            version INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            op TEXT NOT NULL,
            at_ordinal INTEGER NOT NULL,
            lines TEXT NOT NULL,             -- JSON snapshot of the current lines after `op`
            UNIQUE (participant, version)
        );
        CREATE TABLE memory_events (
            id INTEGER PRIMARY KEY,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            at TEXT NOT NULL,
            kind TEXT NOT NULL,              -- claim | cell | line | proposal
            item_id INTEGER,
            event TEXT NOT NULL,
            norm_hash TEXT,
            detail TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX memory_events_by_item ON memory_events(participant, kind, item_id);
        CREATE TABLE memory_tombstones (
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            dayid TEXT NOT NULL,
            norm_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (participant, dayid, norm_hash)
        );
        CREATE TABLE memory_injected (
            id INTEGER PRIMARY KEY,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,        -- the turn whose prompt carried the text
            text TEXT NOT NULL
        );
        CREATE INDEX memory_injected_by_participant ON memory_injected(participant, ordinal);
        CREATE TABLE memory_state (
            participant TEXT PRIMARY KEY REFERENCES participants(participant) ON DELETE CASCADE,
            processed_ordinal INTEGER NOT NULL DEFAULT 0,  -- high-water mark of consolidation
            updated_at TEXT NOT NULL
        )
        """,
    )


@migration
def m007_ix_wrapper(conn):
    """The IX Wrapper (issue 5): actions and their events, declared settings, sessions, queues.

    `actions` holds every action the wrapper saw (run, held, awaiting facts, rejected, dropped);
    `action_events` is append-only, so "no held action ran without an approval event" can be
    checked from the log. Every table has a `participant` column, so consent.erasure removes
    them all (held actions and the outbox included).
    """
    _script(
        conn,
        """
        CREATE TABLE actions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            context TEXT NOT NULL,
            kind TEXT NOT NULL,
            external INTEGER NOT NULL,
            payload TEXT NOT NULL,            -- JSON arguments
            status TEXT NOT NULL CHECK (status IN
                ('held', 'awaiting_facts', 'done', 'scheduled', 'delivered', 'rejected', 'dropped')),
            reason TEXT NOT NULL,
            requested INTEGER NOT NULL,       -- asked for in the participant's message of that turn
            origin TEXT NOT NULL,             -- model | intent | outreach | expansion
            dayid TEXT,                       -- the participant message of the turn that made it
            due_at TEXT,                      -- reminders and check-ins: when to deliver
            created_at TEXT NOT NULL,
            resolved_at TEXT
        );
        CREATE INDEX actions_by_participant ON actions(participant, status);
        CREATE TABLE action_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            action_id INTEGER NOT NULL,
            event TEXT NOT NULL,              -- proposed held awaiting_facts approved rejected run dropped delivered
            via TEXT NOT NULL,                -- turn | chat | ui | cli | scheduler
            dayid TEXT,
            at TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX action_events_by_action ON action_events(participant, action_id);
        CREATE TABLE ix_sessions (
            participant TEXT PRIMARY KEY REFERENCES participants(participant) ON DELETE CASCADE,
            session INTEGER NOT NULL,
            context TEXT NOT NULL,
            last_ts TEXT NOT NULL
        );
        CREATE TABLE ix_declarations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            session INTEGER NOT NULL,
            context TEXT NOT NULL,
            attribute TEXT NOT NULL,
            setting TEXT NOT NULL,
            by TEXT NOT NULL,                 -- model | selector
            source TEXT NOT NULL,
            dayid TEXT,
            at TEXT NOT NULL
        );
        CREATE INDEX ix_declarations_by_session ON ix_declarations(participant, session, attribute);
        CREATE TABLE ix_queue (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            context TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('question', 'topic')),
            text TEXT NOT NULL,
            dayid TEXT,
            delivered INTEGER NOT NULL DEFAULT 0
        );
        """,
    )


@migration
def m008_persona(conn):
    """Persona items (issue 4, item 3): Big Five traits, description aspects and quirks.

    Same timing and history rules as memory_claims (see m006): one current value per
    (participant, slot), superseded rows kept with valid_to and superseded_by. `sources` holds
    JSON [[dayid, ordinal, intensified 0|1, clause], ...]: strength is computed from the
    sources visible at a bound, so an as-of read never counts later evidence. Named m008:
    m007 is taken by the wrapper's migration.
    """
    _script(
        conn,
        """
        CREATE TABLE memory_persona (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: tombstones and events name ids
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('big_five', 'description', 'quirk')),
            slot TEXT NOT NULL,              -- big_five:extraversion, decision_making:speed, quirk:<clause> ...
            facet TEXT,                      -- the description facet its clauses are written into
            value TEXT NOT NULL,
            sources TEXT NOT NULL,
            valid_from INTEGER NOT NULL,
            valid_to INTEGER,
            from_dayid TEXT NOT NULL,
            to_dayid TEXT,
            status TEXT NOT NULL CHECK (status IN ('current', 'superseded')),
            verdict TEXT NOT NULL,
            superseded_by INTEGER,
            origin TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX memory_persona_by_slot ON memory_persona(participant, slot, status)
        """,
    )


def _script(conn, sql: str) -> None:
    # executescript() would COMMIT the surrounding transaction; run statements one by one.
    for statement in sql.split(";"):
        if statement.strip():
            conn.execute(statement)


def apply(conn) -> list[str]:
    if getattr(conn, "dialect", "sqlite") == "postgresql" and not _has_migrations_table(conn):
        return baseline(conn)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
    applied = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        fn(conn)
        conn.execute(
            "INSERT INTO _migrations VALUES (?, ?)",
            (fn.__name__, datetime.now(timezone.utc).isoformat()),
        )
        applied.append(fn.__name__)
    return applied


@migration
def m009_scheduler_jobs(conn):
    """APScheduler's job store (companion.scheduler.DbJobStore): reminders and check-ins survive
    a restart, in the same file as everything else. The table has no `participant` column, so
    erasure leaves it alone: a job must carry ids and dates (an action id, the data directory),
    never message text, and its function must cope with an id that no longer resolves.
    (IF NOT EXISTS: for a few minutes this table was committed as m007_scheduler_jobs.)"""
    conn.execute(
        """CREATE TABLE IF NOT EXISTS scheduler_jobs (
            id TEXT PRIMARY KEY,
            next_run_time REAL,          -- UTC timestamp; NULL: paused
            job_state BLOB NOT NULL      -- pickled Job.__getstate__()
        )"""
    )
    conn.execute("CREATE INDEX IF NOT EXISTS scheduler_jobs_by_time ON scheduler_jobs(next_run_time)")


@migration
def m010_release_ledger(conn):
    """Release ledger and per-participant release secrets (issue 13, items 6 and 15).

    `release_keys` (has a `participant` column, so erasure removes it): the secret shift of the
    participant's timeline in releases (whole weeks, so weekday, time of day and dayids hold) and
    a random key that seeds their probe sample; neither is ever written into a release.
    `release_ledger` and `release_ledger_members` have no `participant` column on purpose:
    erasure keeps the row saying that release R held pseudonym U03, and its ledger hook blanks
    `member_key` (a keyed hash of the name, HMAC with `release_meta.ledger_secret`) and sets
    `withdrawn_at`, so what is left identifies nobody but still says which releases to recall.
    """
    _script(
        conn,
        """
        CREATE TABLE release_keys (
            participant TEXT PRIMARY KEY REFERENCES participants(participant) ON DELETE CASCADE,
            shift_days INTEGER NOT NULL,     -- added to every timestamp in a release
            key TEXT NOT NULL                -- random, seeds the probe sample
        );
        CREATE TABLE release_meta (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE release_ledger (
            release TEXT PRIMARY KEY,        -- also in the manifest
            created_at TEXT NOT NULL,
            folder TEXT NOT NULL,
            staging TEXT NOT NULL,           -- the hidden folder the gates run on
            state TEXT NOT NULL CHECK (state IN ('staging', 'released', 'refused', 'abandoned')),
            seed INTEGER,
            params TEXT NOT NULL DEFAULT '{}',
            reissue_of TEXT
        );
        CREATE TABLE release_ledger_members (
            release TEXT NOT NULL REFERENCES release_ledger(release) ON DELETE CASCADE,
            pseudonym TEXT NOT NULL,
            member_key TEXT,                 -- HMAC of the participant, NULL once they are erased
            withdrawn_at TEXT,
            PRIMARY KEY (release, pseudonym)
        );
        CREATE INDEX release_ledger_members_by_key ON release_ledger_members(member_key);
        """,
    )


@migration
def m011_trial_feedback(conn):
    """Explicit feedback on companion replies (thumbs up/down with an optional tag), the outcome
    a live gate trial is measured by and the adaptive gate learns from. Append-only: a changed
    mind is a new row (rating 0 retracts), so what was known as of any ordinal can be read back
    (`after_ordinal`: the participant's last message when it was given). A `participant` column,
    so erasure and "Download my data" find it like every other table."""
    _script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS feedback (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            participant TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
            dayid TEXT NOT NULL,              -- the companion reply rated
            rating INTEGER NOT NULL CHECK (rating IN (-1, 0, 1)),  -- down, retracted, up
            tag TEXT,                         -- memory/data/feedback.json tags, or NULL
            trace_id INTEGER,                 -- the turn's trace (NULL: no research logging)
            arm TEXT,
            gate TEXT,
            after_ordinal INTEGER NOT NULL,   -- visible to turns with as_of > after_ordinal
            via TEXT NOT NULL,                -- app | cli
            created_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS feedback_by_reply ON feedback(participant, dayid, id);
        """,
    )


@migration
def m012_participant_uid_and_pending_compaction(conn):
    """Two security fixes (issue 13).
    `participants.uid`: a random identity minted when the row is created. An app session binds
    to it, not to the name, so a session opened before a withdrawal cannot act as (or download)
    a newcomer who later registers the same name.
    `maintenance`: work that must finish even if the process dies half way. Erasure records
    'compact' in its own transaction; the VACUUM and WAL truncation that follow remove the
    row, and a Store opened while the row is still there finishes the job first. No
    `participant` column: it names no one."""
    conn.execute("ALTER TABLE participants ADD COLUMN uid TEXT")
    conn.execute("UPDATE participants SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL")
    conn.execute(
        """CREATE TABLE maintenance (
            task TEXT PRIMARY KEY,       -- compact: VACUUM + wal_checkpoint(TRUNCATE) still owed
            requested_at TEXT NOT NULL
        )"""
    )


@migration
def m013_sessions_limits_one_row_per_change_name_keys(conn):
    """The app's security state in the database, so every process serving the data shares it
    (issue 22 items 3, 13, 14; issue 23 item 8; issue 26 item 2).

    `app_sessions`: what a browser tab's token stands for (a signed-in participant bound to the
    account's `uid`, or an open researcher page). Only the token's SHA-256 is stored. The
    `participant` column makes erasure end every session of a withdrawn account, in any process.
    `rate_events`: failed sign-ins and ratings counted per key (a SHA-256 digest of
    "kind:name@address" and the like) until `until`; no names in clear, pruned as they expire.
    `feedback.replaces`: the row this rating replaces (0 for the first), unique per reply, so two
    concurrent clicks that saw the same standing rating cannot both be stored.
    `participants.name_key`: the name case-folded (NFKC); unique, so "Ana" and "ana" are one
    account. Rows that already differ only in case keep their own names: the oldest gets the key,
    the others stay reachable by their exact name only."""
    import unicodedata

    _script(
        conn,
        """
        CREATE TABLE app_sessions (
            token_hash TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('participant', 'researcher')),
            participant TEXT REFERENCES participants(participant) ON DELETE CASCADE,
            uid TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (token_hash, kind)
        );
        CREATE TABLE rate_events (
            key TEXT NOT NULL,
            at TEXT NOT NULL,
            until TEXT NOT NULL
        );
        CREATE INDEX rate_events_by_key ON rate_events(key, at);
        CREATE INDEX rate_events_by_until ON rate_events(until);
        ALTER TABLE feedback ADD COLUMN replaces INTEGER NOT NULL DEFAULT 0;
        UPDATE feedback SET replaces = COALESCE((SELECT MAX(f2.id) FROM feedback f2
            WHERE f2.participant = feedback.participant AND f2.dayid = feedback.dayid AND f2.id < feedback.id), 0);
        CREATE UNIQUE INDEX feedback_one_row_per_change ON feedback(participant, dayid, replaces);
        ALTER TABLE participants ADD COLUMN name_key TEXT
        """,
    )
    seen = set()
    for r in conn.execute("SELECT participant FROM participants ORDER BY created_at, participant").fetchall():
        key = unicodedata.normalize("NFKC", r[0]).casefold()
        if key not in seen:
            seen.add(key)
            conn.execute("UPDATE participants SET name_key = ? WHERE participant = ?", (key, r[0]))
    conn.execute("CREATE UNIQUE INDEX participants_by_name_key ON participants(name_key)")


# ---------------------------------------------------------------- PostgreSQL: the baseline, portable helpers


def _has_migrations_table(conn) -> bool:
    return conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
                        "AND table_name = '_migrations'").fetchone() is not None


def _ddl(conn, element) -> str:
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = postgresql.dialect() if conn.dialect == "postgresql" else sqlite.dialect()
    return str(element.compile(dialect=dialect)).strip()


# SQLite functions the shipped SQL uses, defined on PostgreSQL under the same name and meaning
# (the only ones: anything else written must be portable): json_extract(doc, '$.a.b') as text;
# the two-argument scalar MAX(a, b) and MIN(a, b) (NULL if either is NULL, as in SQLite).
COMPAT_FUNCTIONS = (
    """CREATE OR REPLACE FUNCTION json_extract(doc text, path text) RETURNS text
       LANGUAGE sql IMMUTABLE AS
       $$ SELECT (doc::jsonb) #>> string_to_array(substr(path, 3), '.') $$""",
    """CREATE OR REPLACE FUNCTION max(a anycompatible, b anycompatible) RETURNS anycompatible
       LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL WHEN a >= b THEN a ELSE b END $$""",
    """CREATE OR REPLACE FUNCTION min(a anycompatible, b anycompatible) RETURNS anycompatible
       LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL WHEN a <= b THEN a ELSE b END $$""",
)


def seed(conn) -> None:
    """Rows a new database starts with (on SQLite, m004 wrote them)."""
    import secrets

    conn.execute("INSERT INTO consent_meta (key, value) VALUES ('audit_key', ?) ON CONFLICT (key) DO NOTHING",
                 (secrets.token_hex(32),))


def baseline(conn) -> list[str]:
    """Create a new PostgreSQL database at the current schema (memory/schema.py) and record every
    known migration as applied. Runs inside the store's first transaction (all or nothing)."""
    from sqlalchemy.schema import CreateIndex, CreateTable

    from memory import schema

    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as e:
        raise RuntimeError("PostgreSQL needs the pgvector extension: install it on the server and run "
                           f"CREATE EXTENSION vector as a superuser in this database ({e})") from e
    for table in schema.metadata.sorted_tables:
        conn.execute(_ddl(conn, CreateTable(table)))
        for index in sorted(table.indexes, key=lambda i: i.name):
            conn.execute(_ddl(conn, CreateIndex(index)))
    for fn in COMPAT_FUNCTIONS:
        conn.execute(fn)
    seed(conn)
    now = datetime.now(timezone.utc).isoformat()
    conn.executemany("INSERT INTO _migrations VALUES (?, ?)", [(fn.__name__, f"baseline {now}") for fn in MIGRATIONS])
    return ["baseline"]


@migration
def m020_message_parses(conn):
    """Each of a participant's messages parsed once and kept (memory.parses): the recall readers
    read a statement's parse instead of parsing it again in every turn it is a candidate in."""
    from memory import schema

    add_table(conn, schema.message_parses)


def add_table(conn, table) -> None:
    """A portable migration step: create a memory/schema.py table (and its indexes) as it is
    defined there, on either engine."""
    from sqlalchemy.schema import CreateIndex, CreateTable

    conn.execute(_ddl(conn, CreateTable(table)))
    for index in sorted(table.indexes, key=lambda i: i.name):
        conn.execute(_ddl(conn, CreateIndex(index)))


def add_column(conn, table: str, column) -> None:
    """A portable migration step: ALTER TABLE ... ADD COLUMN for a SQLAlchemy Column."""
    from sqlalchemy.schema import CreateColumn

    conn.execute(f'ALTER TABLE "{table}" ADD COLUMN {_ddl(conn, CreateColumn(column))}')
