"""The schema, defined once: every table of the store as SQLAlchemy Core `Table`s.

What this module is for:
- a new PostgreSQL database is created from it (`memory.migrations.apply`: "baseline"), in one
  transaction, and every migration this code knows is recorded as applied;
- `tests/test_store_schema.py` proves that the SQLite schema the numbered migrations reach
  (m001 ... the last) and the PostgreSQL schema created from here agree, table by table and
  column by column (name, order, type family, NOT NULL, primary key, default), indexes and
  foreign keys included. A migration that changes the schema changes this module in the same
  commit, or that test names what is missing.

Column order is the order SQLite has after its migrations (a column added by ALTER TABLE is
last), so `INSERT INTO t VALUES (...)` without a column list means the same on both engines.
Types: SQLite's INTEGER is BIGINT here, TEXT is TEXT COLLATE "C" (byte order, as SQLite compares
and sorts), REAL is DOUBLE PRECISION, BLOB is BYTEA.

Two named differences, both about rows SQLite keys implicitly:
- `message_vectors` is a sqlite-vec virtual table on SQLite (m002) and an ordinary table with a
  pgvector `vector(384)` column and an HNSW index here; its key is called `rowid` on both.
- `export_surrogates` has no key on SQLite and is read in insertion order `ORDER BY rowid`; here
  it has an explicit trailing `rowid` identity column (filled by default, so a 5-value INSERT
  still fits). Columns with `info={"implicit_on_sqlite": True}` are these.
"""

from __future__ import annotations

from sqlalchemy import (BigInteger, CheckConstraint, Column, Float, ForeignKey, Identity, Index, Integer,
                        LargeBinary, MetaData, PrimaryKeyConstraint, Table, Text, UniqueConstraint, text)
from sqlalchemy.types import UserDefinedType

metadata = MetaData()
DIM = 384


class Vector(UserDefinedType):
    """pgvector's `vector(n)` (only ever compiled for PostgreSQL)."""

    cache_ok = True

    def __init__(self, dim: int):
        self.dim = dim

    def get_col_spec(self, **kw):
        return f"vector({self.dim})"


# The column types a portable migration uses (memory.migrations.add_table / add_column compile them
# for either engine): on SQLite INTEGER (an INTEGER PRIMARY KEY is the rowid) and TEXT.
INT = BigInteger().with_variant(Integer(), "sqlite")
TEXT = Text().with_variant(Text(collation="C"), "postgresql")


def _text(name, nullable=False, default=None, **kw):
    return Column(name, TEXT, nullable=nullable,
                  server_default=text(default) if default is not None else None, **kw)


def _int(name, nullable=False, default=None, **kw):
    return Column(name, INT, nullable=nullable,
                  server_default=text(default) if default is not None else None, **kw)


def _id():
    return Column("id", INT, primary_key=True, autoincrement=True)


def _who(nullable=False, **kw):
    return Column("participant", TEXT,
                  ForeignKey("participants.participant", ondelete="CASCADE"), nullable=nullable, **kw)


def _in(column: str, values: tuple) -> CheckConstraint:
    return CheckConstraint(f"{column} IN ({', '.join(repr(v) for v in values)})")


migrations_table = Table("_migrations", metadata, _text("name", primary_key=True), _text("applied_at"))

participants = Table(
    "participants", metadata,
    _text("participant", primary_key=True), _text("tz"), _text("pass_hash", True), _text("created_at"),
    _text("first_local_date", True), _int("next_ordinal", default="1"), _int("index_epoch", default="0"),
    _text("settings", default="'{}'"), _text("uid", True),
    _text("name_key", True),  # m013: the name case-folded (NFKC), so "Ana" and "ana" are one account
    Index("participants_by_name_key", "name_key", unique=True),
)

consent_records = Table(
    "consent_records", metadata,
    _id(), _who(), _text("version"), _text("scopes"), _text("accepted_at"), _text("withdrawn_at", True),
)

messages = Table(
    "messages", metadata,
    _id(), _who(), _int("ordinal"), _text("dayid"), _int("day_n"), _int("day_j"), _text("sender"),
    _text("text"), _text("ts"), _text("context"),
    UniqueConstraint("participant", "ordinal"), UniqueConstraint("participant", "dayid"),
    _in("sender", ("user", "companion")),
)

day_counters = Table(
    "day_counters", metadata,
    _who(primary_key=True), _int("day_n", primary_key=True), _int("last_j"),
)

traces = Table(
    "traces", metadata,
    _id(), _who(), _text("dayid", True), _text("created_at"), _text("arm", True), _text("gate", True),
    _int("decision", True), _text("data"),
    Index("traces_by_participant", "participant", "id"),
)

message_vectors = Table(
    "message_vectors", metadata,
    Column("rowid", BigInteger, ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True,
           autoincrement=False, info={"implicit_on_sqlite": True}),
    _text("participant"), _int("ordinal"), Column("embedding", Vector(DIM), nullable=False),
    Index("message_vectors_by_participant", "participant", "ordinal"),
    Index("message_vectors_hnsw", "embedding", postgresql_using="hnsw",
          postgresql_ops={"embedding": "vector_ip_ops"}),
    info={"virtual_on_sqlite": True},
)

message_parses = Table(  # m020: a participant's message as parsed once (memory.parses), deleted with it
    "message_parses", metadata,
    Column("message_id", INT, ForeignKey("messages.id", ondelete="CASCADE"), nullable=False),
    _who(), _text("sha"), _text("model"), Column("doc", LargeBinary, nullable=False),
    PrimaryKeyConstraint("message_id", "sha"),
    Index("message_parses_by_participant", "participant", "sha"),
)

trials = Table(
    "trials", metadata,
    _who(primary_key=True), _text("mode"), _text("arms"), _int("seed", True), _int("turns", default="0"),
    _text("created_at"), _in("mode", ("fixed", "randomized")),
)

consent_meta = Table("consent_meta", metadata, _text("key", primary_key=True), _text("value"))

consent_events = Table(
    "consent_events", metadata,
    _id(), _text("at"), _text("event"), _text("subject", True), _text("version", True), _text("scopes", True),
    _text("detail", default="'{}'"),
    Index("consent_events_by_subject", "subject", "id"),
)

exports = Table(
    "exports", metadata,
    _text("release", primary_key=True), _text("created_at"), _text("path"), _int("seed", True),
    _int("n_participants"),
)

export_members = Table(
    "export_members", metadata,
    Column("release", TEXT, ForeignKey("exports.release", ondelete="CASCADE"), nullable=False),
    _who(), _text("pseudonym"),
    PrimaryKeyConstraint("release", "participant"),
)

export_surrogates = Table(
    "export_surrogates", metadata,
    Column("release", TEXT, ForeignKey("exports.release", ondelete="CASCADE"), nullable=False),
    _who(), _text("kind"), _text("original"), _text("surrogate"),
    Column("rowid", BigInteger, Identity(), nullable=False, info={"implicit_on_sqlite": True}),
    Index("export_surrogates_by_release", "release", "participant"),
)


def _derived(name, *middle, index=None, status=("current", "superseded")):
    """The shape of claims, cells and persona items (m006, m008): validity window, verdict, origin."""
    return Table(
        name, metadata,
        _id(), _who(), *middle, _text("sources"), _int("valid_from"), _int("valid_to", True),
        _text("from_dayid"), _text("to_dayid", True), _text("status"), _text("verdict"),
        _int("superseded_by", True), _text("origin"), _text("created_at"),
        _in("status", status), *([index] if index is not None else []),
    )


memory_claims = Table(
    "memory_claims", metadata,
    _id(), _who(), _text("slot", True), _text("text"), _text("norm"), _text("category"),
    Column("confidence", Float(53), nullable=False), _text("context"), _text("sources"), _int("valid_from"),
    _int("valid_to", True), _text("from_dayid"), _text("to_dayid", True), _text("status"), _text("verdict"),
    _int("superseded_by", True), _text("origin"), _text("created_at"),
    _in("status", ("current", "superseded")),
    Index("memory_claims_by_participant", "participant", "slot", "status"),
)

memory_cells = _derived(
    "memory_cells", _text("context"), _text("attribute"), _text("setting"), _text("evidence"),
    index=Index("memory_cells_by_key", "participant", "context", "attribute", "status"),
)

memory_file_lines = Table(
    "memory_file_lines", metadata,
    _id(), _who(), _text("scope"), _text("text"), _text("norm"), _text("since_dayid", True), _text("sources"),
    _int("valid_from"), _int("valid_to", True), _text("status"), _text("origin"), _int("pos", default="0"),
    _text("created_at"),
    _in("status", ("current", "replaced", "removed")),
    Index("memory_file_lines_by_participant", "participant", "status"),
)

memory_file_versions = Table(
    "memory_file_versions", metadata,
    _id(), _who(), _int("version"), _text("created_at"), _text("op"), _int("at_ordinal"), _text("lines"),
    UniqueConstraint("participant", "version"),
)

memory_events = Table(
    "memory_events", metadata,
    _id(), _who(), _text("at"), _text("kind"), _int("item_id", True), _text("event"), _text("norm_hash", True),
    _text("detail", default="'{}'"),
    Index("memory_events_by_item", "participant", "kind", "item_id"),
)

memory_tombstones = Table(
    "memory_tombstones", metadata,
    _who(primary_key=True), _text("dayid", primary_key=True), _text("norm_hash", primary_key=True),
    _text("created_at"),
)

memory_injected = Table(
    "memory_injected", metadata,
    _id(), _who(), _int("ordinal"), _text("text"),
    Index("memory_injected_by_participant", "participant", "ordinal"),
)

memory_state = Table(
    "memory_state", metadata,
    _who(primary_key=True), _int("processed_ordinal", default="0"), _text("updated_at"),
)

actions = Table(
    "actions", metadata,
    _id(), _who(), _text("context"), _text("kind"), _int("external"), _text("payload"), _text("status"),
    _text("reason"), _int("requested"), _text("origin"), _text("dayid", True), _text("due_at", True),
    _text("created_at"), _text("resolved_at", True),
    _in("status", ("held", "awaiting_facts", "done", "scheduled", "delivered", "rejected", "dropped")),
    Index("actions_by_participant", "participant", "status"),
)

action_events = Table(
    "action_events", metadata,
    _id(), _who(), _int("action_id"), _text("event"), _text("via"), _text("dayid", True), _text("at"),
    _text("detail", default="''"),
    Index("action_events_by_action", "participant", "action_id"),
)

ix_sessions = Table(
    "ix_sessions", metadata,
    _who(primary_key=True), _int("session"), _text("context"), _text("last_ts"),
)

ix_declarations = Table(
    "ix_declarations", metadata,
    _id(), _who(), _int("session"), _text("context"), _text("attribute"), _text("setting"), _text("by"),
    _text("source"), _text("dayid", True), _text("at"),
    Index("ix_declarations_by_session", "participant", "session", "attribute"),
)

ix_queue = Table(
    "ix_queue", metadata,
    _id(), _who(), _text("context"), _text("kind"), _text("text"), _text("dayid", True),
    _int("delivered", default="0"),
    _in("kind", ("question", "topic")),
)

memory_persona = _derived(
    "memory_persona", _text("kind"), _text("slot"), _text("facet", True), _text("value"),
    index=Index("memory_persona_by_slot", "participant", "slot", "status"),
)
memory_persona.append_constraint(_in("kind", ("big_five", "description", "quirk")))

scheduler_jobs = Table(
    "scheduler_jobs", metadata,
    _text("id", primary_key=True), Column("next_run_time", Float(53), nullable=True),
    Column("job_state", LargeBinary, nullable=False),
    Index("scheduler_jobs_by_time", "next_run_time"),
)

release_keys = Table(
    "release_keys", metadata,
    _who(primary_key=True), _int("shift_days"), _text("key"),
)

release_meta = Table("release_meta", metadata, _text("name", primary_key=True), _text("value"))

release_ledger = Table(
    "release_ledger", metadata,
    _text("release", primary_key=True), _text("created_at"), _text("folder"), _text("staging"), _text("state"),
    _int("seed", True), _text("params", default="'{}'"), _text("reissue_of", True),
    _in("state", ("staging", "released", "refused", "abandoned")),
)

release_ledger_members = Table(
    "release_ledger_members", metadata,
    Column("release", TEXT, ForeignKey("release_ledger.release", ondelete="CASCADE"),
           nullable=False),
    _text("pseudonym"), _text("member_key", True), _text("withdrawn_at", True),
    PrimaryKeyConstraint("release", "pseudonym"),
    Index("release_ledger_members_by_key", "member_key"),
)

feedback = Table(
    "feedback", metadata,
    _id(), _who(), _text("dayid"), _int("rating"), _text("tag", True), _int("trace_id", True), _text("arm", True),
    _text("gate", True), _int("after_ordinal"), _text("via"), _text("created_at"),
    _int("replaces", default="0"),  # m013: the row this rating replaces (0 for the first)
    CheckConstraint("rating IN (-1, 0, 1)"),
    Index("feedback_by_reply", "participant", "dayid", "id"),
    Index("feedback_one_row_per_change", "participant", "dayid", "replaces", unique=True),
)

# m013: what a browser tab's token stands for (only its SHA-256), and rate-limited events per key
app_sessions = Table(
    "app_sessions", metadata,
    _text("token_hash", primary_key=True), _text("kind", primary_key=True), _who(nullable=True),
    _text("uid", True), _text("created_at"),
    _in("kind", ("participant", "researcher")),
)

rate_events = Table(
    "rate_events", metadata,
    _text("key"), _text("at"), _text("until"),
    Index("rate_events_by_key", "key", "at"), Index("rate_events_by_until", "until"),
)

maintenance = Table("maintenance", metadata, _text("task", primary_key=True), _text("requested_at"))


def tables_with_id() -> frozenset[str]:
    """Tables whose key is a generated integer `id` (an INSERT into them reports `lastrowid`)."""
    return frozenset(t.name for t in metadata.sorted_tables
                     if "id" in t.c and t.c.id.primary_key and t.c.id.autoincrement is not False
                     and isinstance(t.c.id.type, BigInteger))
