"""The schema SQLite reaches through its numbered migrations and the one a new PostgreSQL database
is created with (memory/schema.py, the baseline) agree, table by table and column by column:
names and order, type family, NOT NULL, primary key, defaults, unique constraints, foreign keys
and named indexes. And a migration written after the baseline applies on both engines."""

from __future__ import annotations

import re

import pytest

from memory import migrations, schema
from memory.store import Store


FAMILY = {"integer": "int", "bigint": "int", "text": "text", "real": "real", "double precision": "real",
          "blob": "blob", "bytea": "blob", "user-defined": "vector", "": "vector"}
VIRTUAL = {t.name for t in schema.metadata.sorted_tables if t.info.get("virtual_on_sqlite")}
IMPLICIT = {(t.name, c.name) for t in schema.metadata.sorted_tables for c in t.c if c.info.get("implicit_on_sqlite")}


def _default(d):
    if d is None or "nextval(" in str(d):
        return None
    return re.sub(r"::[a-z ]+$", "", str(d)).strip("()")


def sqlite_schema(conn) -> dict:
    out = {}
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    for t in tables:
        if t.startswith("sqlite_") or any(t.startswith(v + "_") for v in VIRTUAL):
            continue
        cols = []
        for c in conn.execute(f'PRAGMA table_info("{t}")'):
            if t in VIRTUAL:
                cols.append((c["name"], "vector" if c["name"] == "embedding" else "*", None, None, None))
                continue
            cols.append((c["name"], FAMILY[c["type"].lower()], bool(c["notnull"] or c["pk"]), c["pk"] > 0,
                         _default(c["dflt_value"])))
        uniques, indexes = set(), set()
        if t not in VIRTUAL:
            for ix in conn.execute(f'PRAGMA index_list("{t}")'):
                names = tuple(r["name"] for r in conn.execute(f'PRAGMA index_info("{ix["name"]}")'))
                if ix["origin"] == "u":
                    uniques.add(names)
                elif ix["origin"] == "c":
                    indexes.add((ix["name"], names))
        fks = {(f["from"], f["table"], f["to"], f["on_delete"]) for f in conn.execute(f'PRAGMA foreign_key_list("{t}")')}
        out[t] = {"columns": cols, "unique": uniques, "indexes": indexes, "fks": fks}
    return out


def postgres_schema(conn) -> dict:
    out = {}
    tables = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                         "current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name")]
    for t in tables:
        pk = {r[0] for r in conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = ?::regclass AND i.indisprimary", (t,))}
        cols = []
        for c in conn.execute("SELECT column_name, data_type, is_nullable, column_default, is_identity "
                              "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? "
                              "ORDER BY ordinal_position", (t,)):
            name = c[0]
            if (t, name) in IMPLICIT and t not in VIRTUAL:
                continue  # SQLite's implicit rowid, explicit here (memory/schema.py)
            if t in VIRTUAL:
                cols.append((name, "vector" if name == "embedding" else "*", None, None, None))
                continue
            cols.append((name, FAMILY[c[1].lower()], c[2] == "NO", name in pk, _default(c[3])))
        uniques = {tuple(r[0].split(",")) for r in conn.execute(
            "SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM pg_constraint con "
            "CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum "
            "WHERE con.conrelid = ?::regclass AND con.contype = 'u' GROUP BY con.oid", (t,))}
        indexes = set()
        backing = {r[0] for r in conn.execute("SELECT conname FROM pg_constraint WHERE conrelid = ?::regclass", (t,))}
        for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?", (t,)):
            ix = r[0]
            if ix in backing or t in VIRTUAL:  # primary keys and unique constraints are compared above
                continue
            cols_ = tuple(x[0] for x in conn.execute(
                "SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
                "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
                "WHERE i.indexrelid = ?::regclass ORDER BY k.n", (ix,)))
            indexes.add((ix, cols_))
        fks = set()
        for r in conn.execute(
                "SELECT kcu.column_name, ccu.table_name, ccu.column_name, rc.delete_rule "
                "FROM information_schema.referential_constraints rc "
                "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = rc.constraint_name "
                "JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = rc.unique_constraint_name "
                "WHERE kcu.table_name = ? AND kcu.table_schema = current_schema()", (t,)):
            if t in VIRTUAL:
                continue  # SQLite's virtual table has none; rows leave with their message on both
            fks.add(tuple(r))
        out[t] = {"columns": cols, "unique": uniques, "indexes": indexes, "fks": fks}
    return out


@pytest.fixture
def both(tmp_path, request):
    """(SQLite schema after every migration, PostgreSQL schema of a new database)."""
    lite = Store(tmp_path / "lite", database="sqlite")
    pg_url = request.getfixturevalue("pg_server").fresh_database()
    pg = Store(tmp_path / "pg", database=pg_url)
    yield lite, pg
    lite.close()
    pg.close()
    request.getfixturevalue("pg_server").drop(pg_url)


def test_sqlite_migrations_and_the_postgres_baseline_agree_table_by_table(both):
    lite, pg = both
    a, b = sqlite_schema(lite.conn), postgres_schema(pg.conn)
    assert sorted(a) == sorted(b), f"tables only on SQLite: {sorted(set(a) - set(b))}, only on PostgreSQL: {sorted(set(b) - set(a))}"
    assert len(a) >= 30  # every table of m001-m012, not an empty comparison
    for t in sorted(a):
        for part in ("columns", "unique", "indexes", "fks"):
            assert a[t][part] == b[t][part], f"{t}: {part} differ\n  SQLite:     {a[t][part]}\n  PostgreSQL: {b[t][part]}"
    # every migration is recorded on both
    names = [fn.__name__ for fn in migrations.MIGRATIONS]
    for s in (lite, pg):
        assert [r[0] for r in s.conn.execute("SELECT name FROM _migrations ORDER BY name")] == sorted(names)


def test_the_schema_module_is_what_postgres_was_created_from(both):
    _, pg = both
    got = postgres_schema(pg.conn)
    for t in schema.metadata.sorted_tables:
        assert [c[0] for c in got[t.name]["columns"]] == [
            c.name for c in t.c if (t.name, c.name) not in IMPLICIT or t.name in VIRTUAL]


@pytest.mark.both_backends
def test_a_migration_added_after_the_baseline_runs_on_both_engines(home, monkeypatch):
    """A later migration, written once with the portable helpers, reaches an existing database of
    either engine (the store was opened before the migration existed)."""
    from sqlalchemy import Column, MetaData, Table

    Store(home).close()  # the database exists, at the current schema
    extra = MetaData()
    probe = Table("zz_probe", extra, Column("id", schema.INT, primary_key=True),
                  Column("participant", schema.TEXT, nullable=False))

    def m999_probe(conn):
        migrations.add_table(conn, probe)
        migrations.add_column(conn, "zz_probe", Column("note", schema.TEXT, nullable=True))

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m999_probe])
    s = Store(home)
    try:
        with s.transaction() as conn:
            conn.execute("INSERT INTO zz_probe (participant, note) VALUES (?, ?)", ("ana", "hello"))
        assert [tuple(r) for r in s.conn.execute("SELECT id, participant, note FROM zz_probe")] == [(1, "ana", "hello")]
        assert s.conn.execute("SELECT name FROM _migrations WHERE name='m999_probe'").fetchone() is not None
    finally:
        s.close()
    Store(home).close()  # applied once: opening again changes nothing
