"""What a researcher notices at the terminal: one refusal for an unknown participant in every
command, progress bars on a terminal and silence when piped, and private scratch stores."""

from __future__ import annotations

import json
import logging
import os
import pty
import fcntl
import select
import struct
import subprocess
import sys
import termios

import click
import pytest
from click.testing import CliRunner

from companion.cli import main
from consent import progress

UNKNOWN = ("unknown participant 'nobody': no participant of that name in this data directory "
           "(a new participant starts with `companion consent accept --participant nobody`)")


def _commands(group, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def _takes_p(cmd) -> click.Option | None:
    return next((p for p in cmd.params if isinstance(p, click.Option) and "-p" in p.opts), None)


def _fill(cmd, p_opt, tmp_path) -> list[str]:
    """-p nobody, and a plausible value for every other required parameter."""
    args = [p_opt.opts[0], "nobody"]
    (tmp_path / "folder").mkdir(exist_ok=True)
    (tmp_path / "file.txt").write_text("x\n")
    for p in cmd.params:
        if p is p_opt or not p.required:
            continue
        t = p.type
        if isinstance(t, click.Choice):
            v = t.choices[0]
        elif isinstance(t, click.types.IntParamType):
            v = "1"
        elif isinstance(t, click.types.FloatParamType):
            v = "0.5"
        elif isinstance(t, click.Path):
            v = str(tmp_path / ("file.txt" if t.dir_okay is False else "folder"))
        else:
            v = "day1-2" if p.name in ("dayid",) else "x"
        if isinstance(p, click.Argument):
            args += [v] * (p.nargs if p.nargs > 0 else 1)
        else:
            args += [p.opts[0], v]
    return args


EXPECTED = {("messages",), ("feedback",), ("traces",), ("trial", "show"), ("trial", "set"), ("trial", "clear"),
            ("trial", "randomize"), ("trial", "report"), ("trial", "learner"), ("actions", "list"),
            ("memory", "show"), ("memory", "consolidate"), ("chat",), ("consent", "withdraw"),
            ("consent", "download")}


def test_every_command_taking_p_refuses_an_unknown_participant_the_same_way(home, tmp_path):
    CliRunner().invoke(main, ["consent", "accept", "-p", "ana"], catch_exceptions=False)  # someone exists
    taking = {path: cmd for path, cmd in _commands(main) if _takes_p(cmd) and path != ("consent", "accept")}
    assert EXPECTED <= set(taking), sorted(EXPECTED - set(taking))
    wrong = {}
    for path, cmd in sorted(taking.items()):
        r = CliRunner().invoke(main, [*path, *_fill(cmd, _takes_p(cmd), tmp_path)], input="hello\n")
        if r.exit_code != 2 or UNKNOWN not in r.output:
            wrong[" ".join(path)] = (r.exit_code, r.output[-300:], r.exception)
    assert not wrong, wrong


# --- progress -----------------------------------------------------------------------------------------


@pytest.fixture
def release(store, tmp_path):
    from tests.conftest import export_garden_chat

    out = tmp_path / "rel"
    export_garden_chat(store, out, ["my cat sleeps on the sofa", "the tomatoes are ripe", "is my cat still sleepy?"])
    return out


def _bars(stderr: str) -> list[str]:
    """The bars drawn (tqdm starts each line with a carriage return and the bar's name)."""
    return [d for d in ("export: reading", "export: identifiers", "release check", "identifiers",
                        "trial report: bootstrap") if f"\r{d}:" in stderr]


@pytest.mark.parametrize("terminal", [True, False])
def test_long_researcher_commands_show_progress_on_a_terminal_only(release, tmp_path, monkeypatch, terminal):
    monkeypatch.setattr(progress, "on_terminal", lambda: terminal)
    runs = {
        "export": ["export", "--out", str(tmp_path / "again"), "--probe-share", "1.0"],
        "check": ["release", "check", str(release)],
        "finalize": ["annotate", "finalize", str(release), "--annotator", "rita"],
        "report": ["trial", "report", "--json", "--bootstrap", "30"],
    }
    from consent import annotate as A

    A.set_many(release, "U01/day1-5", {
        "A": {"locus": "episode", "note": "asks about the cat"},
        "B": {"episode_refs": ["day1-1"], "grounding_dayids": ["day1-1"], "referent_on_screen": "no", "note": "day1-1"},
        "C": {"tier": "basic", "category": "event_recall", "rule": "one message answers it", "note": "n"},
        "D": {"reference_reply": "Is the cat still on the sofa?", "note": "n"},
        "E": {"scoreable": True, "note": "n"}}, "rita")
    from companion import trials
    from companion.turn import turn
    from companion.settings import Settings
    from memory.store import Store

    s = Store(os.environ["COMPANION_HOME"])
    trials.randomize(s, "ana", ["never", "always"], 1, "bm25", "earlier_turns")
    for t in ("one", "two"):
        turn(s, "ana", t, settings=Settings(home=os.environ["COMPANION_HOME"], model="echo"))
    s.close()
    seen = {}
    for name, args in runs.items():
        r = CliRunner().invoke(main, args, catch_exceptions=False)
        assert r.exit_code == 0, (name, r.output)
        seen[name] = _bars(r.stderr)
    if terminal:
        assert seen == {"export": ["export: reading", "export: identifiers"], "check": ["release check", "identifiers"],
                        "finalize": ["release check", "identifiers"], "report": ["trial report: bootstrap"]}
    else:
        assert seen == dict.fromkeys(runs, [])


def test_a_real_terminal_gets_the_bar_and_a_pipe_does_not(release):
    """No stand-in: `companion release check` with stderr on a pseudo-terminal, then on a pipe."""
    cmd = [sys.executable, "-m", "companion.cli", "release", "check", str(release)]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal has a size
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    got = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        got += chunk
    p.wait(timeout=120)
    os.close(master)
    assert p.returncode == 0 and b"release check" in got and b"identifiers" in got
    piped = subprocess.run(cmd, capture_output=True, timeout=300)
    assert piped.returncode == 0 and b"identifiers" not in piped.stderr and b"|" not in piped.stderr


# --- scratch stores -----------------------------------------------------------------------------------


def test_eval_preferences_probe_copies_are_private_from_the_start(store, tmp_path, caplog):
    """A probe runs on a copy of the persona's store (eval.preferences.copy_store); the copy's
    database was created with the umask's mode and the Store opened on it warned 'was readable by
    other accounts ... fixed' on every probe."""
    import tempfile

    from eval.preferences import copy_store

    old = os.umask(0o022)
    try:
        into = __import__("pathlib").Path(tempfile.mkdtemp(prefix="probe-", dir=tmp_path))
        with caplog.at_level(logging.WARNING, logger="memory.store"):
            copy = copy_store(store, into)
    finally:
        os.umask(old)
    try:
        assert copy.permission_fixes == [] and "readable by other accounts" not in caplog.text
        assert oct(os.stat(into / "companion.db").st_mode & 0o777) == "0o600"
    finally:
        copy.close()


def test_researcher_set_password_creates_a_private_data_directory(tmp_path):
    home = tmp_path / "fresh"
    old = os.umask(0o022)
    try:
        r = CliRunner().invoke(main, ["researcher", "set-password", "--new-password", "a-long-password",
                                      "--data-dir", str(home)])
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    assert oct(os.stat(home).st_mode & 0o777) == "0o700"
    assert json.dumps(r.output).count("readable") == 0
