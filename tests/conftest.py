from __future__ import annotations


import pytest

from companion.settings import Settings
from consent import records as consent
from memory import registry
from memory.store import Store


def pytest_addoption(parser):
    parser.addoption("--backend", choices=("sqlite", "postgres"), default="sqlite",
                     help="the store engine of every test that does not choose (default sqlite); tests "
                          "marked both_backends run on both anyway")


def pytest_configure(config):
    config.addinivalue_line("markers", "both_backends: run the test on SQLite and on PostgreSQL")


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_backends"):
        metafunc.parametrize("backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """A real PostgreSQL (with pgvector) for this test session, started from PyPI's pgserver in a
    temporary directory the session owns, stopped at its end. Yields a `PgCluster`."""
    from tests.pg import PgCluster

    cluster = PgCluster(tmp_path_factory.mktemp("pg"))
    yield cluster
    cluster.stop()


@pytest.fixture
def backend(request):
    """"sqlite" or "postgres": the engine of this test's store (see --backend, both_backends)."""
    return getattr(request, "param", None) or request.config.getoption("--backend")


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch, backend, request):
    """Every test gets its own data directory (and on PostgreSQL its own database); nothing
    touches ~/.companion."""
    h = tmp_path / "home"
    monkeypatch.setenv("COMPANION_HOME", str(h))
    monkeypatch.delenv("COMPANION_DATABASE_URL", raising=False)
    if backend == "postgres":
        cluster = request.getfixturevalue("pg_server")
        url = cluster.fresh_database()
        monkeypatch.setenv("COMPANION_DATABASE_URL", url)
        yield h
        cluster.drop(url)
        return
    yield h


@pytest.fixture
def store(home):
    s = Store(home)
    yield s
    s.close()


@pytest.fixture
def settings(home):
    return Settings(home=home, model="echo")


@pytest.fixture
def ana(store):
    consent.accept(store, "ana", tz="Europe/Berlin")
    return "ana"


@pytest.fixture
def install_plugin(tmp_path, monkeypatch):
    """Install entry points the way a third-party distribution would (a dist-info on sys.path)."""
    made = []

    def install(dist: str, groups: dict[str, dict[str, str]]) -> None:
        root = tmp_path / f"site-{dist}"
        info = root / f"{dist}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        lines = []
        for group, eps in groups.items():
            lines.append(f"[{group}]")
            lines += [f"{name} = {target}" for name, target in eps.items()]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        monkeypatch.syspath_prepend(str(root))
        made.append(root)
        registry.refresh()

    yield install
    registry.refresh()


@pytest.fixture
def fault_models(install_plugin):
    install_plugin("fault-models", {"companion.models": {
        "failing": "tests.plugins.models:Failing",
        "slow": "tests.plugins.models:Slow",
        "empty": "tests.plugins.models:Empty",
        "flaky": "tests.plugins.models:Flaky",
    }})


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve_app(home):
    """Start the app in-process on a free loopback port; returns (url, store). Echo model,
    always-retrieve gate, BM25, no recent window, unless overridden."""
    from companion import app

    started = []

    def start(embedder=None, scheduled=False, **overrides):
        """scheduled: the app gets a (paused) companion.scheduler scheduler, as `serve` gives it."""
        opts = dict(home=home, model="echo", gate="always", retriever="bm25", recent_window=0)
        s = Store(home)
        if embedder is not None:
            s.vectors.embedder = embedder
        scheduler = None
        if scheduled:
            from companion import scheduler as jobs

            scheduler = jobs.build(Settings(**{**opts, **overrides}), s)
            scheduler.start(paused=True)
            schedulers.append(scheduler)
        demo = app.build(Settings(**{**opts, **overrides}), s, scheduler)
        demo.queue()
        port = free_port()
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                    ssr_mode=False, mcp_server=False)
        started.append((demo, s))
        return f"http://127.0.0.1:{port}/", s

    schedulers: list = []
    yield start
    for scheduler in schedulers:
        scheduler.remove_all_jobs()  # a paused scheduler runs due jobs once on shutdown
        scheduler.shutdown(wait=False)
    for demo, s in started:
        demo.close()
        s.close()


def export_garden_chat(store, out, lines) -> None:
    """A consented chat of `lines` (each answered "You said: ..."), four minutes apart, exported to
    `out` with every message a probe: the release the annotation tests start from."""
    from datetime import datetime, timedelta, timezone

    from consent import export as exporter
    from memory import messages

    consent.accept(store, "ana", tz="UTC")
    t = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
    rows = []
    for i, line in enumerate(lines):
        rows += [dict(sender="user", text=line, context="personal", ts=t + timedelta(minutes=4 * i)),
                 dict(sender="companion", text=f"You said: {line}", context="personal",
                      ts=t + timedelta(minutes=4 * i + 1))]
    messages.append_many(store, "ana", rows)
    exporter.export(store, out, seed=0, recent_window=2, probe_share=1.0)
