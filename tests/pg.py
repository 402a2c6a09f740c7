"""A PostgreSQL server for tests: pgserver (PostgreSQL 16 with pgvector, from PyPI) started in a
directory the caller owns, a template database at the current schema, one fresh database per
test copied from it (about 70 ms)."""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

TEMPLATE = "companion_template"


class PgCluster:
    def __init__(self, root: Path):
        os.environ.setdefault("XDG_RUNTIME_DIR", str(root))  # platformdirs asks for it; keep it ours
        import pgserver
        import psycopg

        self.root = Path(root)
        # Outside pytest's tree (pytest keeps it 0700, and when run as root pgserver runs the
        # server as another account, which must reach its directory); the unix socket lives in
        # it, so the path stays short. Removed by stop().
        self.data = Path(tempfile.mkdtemp(prefix="companion-pg-"))
        self.server = pgserver.get_server(self.data, cleanup_mode="stop")
        self.uri = self.server.get_uri()
        self._n = itertools.count()
        self._psycopg = psycopg
        with psycopg.connect(self.uri, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {TEMPLATE} WITH (FORCE)")
            c.execute(f"CREATE DATABASE {TEMPLATE}")
        from memory.store import Store

        Store(self.root / "template-home", database=self.url(TEMPLATE)).close()  # the baseline, once

    def url(self, db: str) -> str:
        head, _, query = self.uri.partition("?")
        return f"{head.rsplit('/', 1)[0]}/{db}?{query}"

    def admin(self):
        return self._psycopg.connect(self.uri, autocommit=True)

    def fresh_database(self) -> str:
        name = f"t{os.getpid()}_{next(self._n)}"
        with self.admin() as c:
            c.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        return self.url(name)

    def drop(self, url: str) -> None:
        name = url.split("?")[0].rsplit("/", 1)[1]
        with self.admin() as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        import shutil

        self.server.cleanup()
        shutil.rmtree(self.data, ignore_errors=True)
