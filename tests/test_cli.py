"""The `companion` command, scripted as a researcher would script it."""

import json

from click.testing import CliRunner

from companion.cli import main


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_chat_refuses_without_consent_and_says_how(home):
    r = run("chat", "--participant", "zoe", "--model", "echo", input="hi\n")
    assert r.exit_code == 2
    assert "companion consent accept --participant zoe" in r.output
    r = run("messages", "--participant", "zoe", "--json")
    assert r.exit_code == 2 and "unknown participant 'zoe'" in r.output


def test_scripted_chat_one_message_a_line(home, tmp_path):
    other = tmp_path / "elsewhere"
    assert run("consent", "accept", "--participant", "ana", "--data-dir", str(other)).exit_code == 0
    r = run("chat", "--participant", "ana", "--model", "echo", "--context", "work", "--data-dir", str(other),
            input="first line\n\nsecond line\n")
    assert r.exit_code == 0
    assert r.stdout.splitlines() == ["You said: first line", "You said: second line"]
    assert "empty message skipped" in r.stderr
    msgs = json.loads(run("messages", "--participant", "ana", "--json", "--data-dir", str(other)).stdout)
    assert [(m["dayid"], m["sender"], m["text"], m["context"]) for m in msgs] == [
        ("day1-1", "user", "first line", "work"), ("day1-2", "companion", "You said: first line", "work"),
        ("day1-3", "user", "second line", "work"), ("day1-4", "companion", "You said: second line", "work")]
    assert all(set(m) >= {"dayid", "sender", "text", "ts", "context"} for m in msgs)
    tr = json.loads(run("traces", "--participant", "ana", "--json", "--data-dir", str(other)).stdout)
    assert [t["dayid"] for t in tr] == ["day1-1", "day1-3"]
    assert tr[0]["gate"]["name"] == "learned" and tr[0]["retriever"]["name"] == "hybrid" and "latency_ms" in tr[0]
    # --data-dir really chose the directory: the default home stayed empty
    assert not (home / "companion.db").exists()


def test_consent_show_and_withdraw(home):
    r = run("consent", "show")
    assert "Consent version 1" in r.output and "export" in r.output
    run("consent", "accept", "--participant", "ana", "--scopes", "logging,memory")
    assert "accepted (version 1, scopes logging, memory)" in run("consent", "show", "-p", "ana").output
    assert run("consent", "withdraw", "--participant", "ana", "--yes").exit_code == 0
    r = run("chat", "--participant", "ana", "--model", "echo", input="hi\n")
    assert r.exit_code == 2 and "unknown participant 'ana'" in r.output  # erased: the name is nobody now
    r = run("consent", "accept", "--participant", "ana", "--scopes", "logging,telepathy")
    assert r.exit_code == 2 and "unknown consent scope(s) ['telepathy']" in r.output


def test_memory_consolidate_with_a_model_extractor_through_the_gateway(home, install_plugin):
    install_plugin("extract-model", {"companion.models": {"extracting": "tests.plugins.models:Extracting"}})
    assert run("consent", "accept", "-p", "ana").exit_code == 0
    run("chat", "-p", "ana", "--model", "echo", input="hello there\nI live in Lisbon now\n")
    out = run("memory", "consolidate", "-p", "ana", "--extractor", "model", "--model", "extracting/x", "--json")
    report = json.loads(out.output)
    assert report["extractor"] == "model:extract-v1"
    assert report["verdicts"] == {"supported": 1, "unsupported": 1}  # the yacht is not in the cited message
    shown = json.loads(run("memory", "show", "-p", "ana", "--json").output)
    assert [(c["text"], c["source_dayids"]) for c in shown["claims"]] == [("Lives in Lisbon", ["day1-3"])]


def test_withdraw_asks_first_and_a_no_erases_nothing(home):
    run("consent", "accept", "-p", "ana")
    run("chat", "-p", "ana", "--model", "echo", input="my sister Lena visits on Friday\n")
    r = run("consent", "withdraw", "-p", "ana", input="n\n")
    assert r.exit_code != 0 and "Erase everything stored about ana" in r.output and "nothing was erased" in r.output
    assert len(json.loads(run("messages", "-p", "ana", "--json").stdout)) == 2  # still there
    r = run("consent", "withdraw", "-p", "ana")  # a script without --yes: no answer is a no
    assert r.exit_code != 0 and len(json.loads(run("messages", "-p", "ana", "--json").stdout)) == 2
    r = run("consent", "withdraw", "-p", "ana", input="y\n")
    assert r.exit_code == 0 and "consent withdrawn" in r.output
    assert run("messages", "-p", "ana", "--json").exit_code == 2  # gone
    r = run("consent", "withdraw", "-p", "nobody")  # an unknown name is named, nothing is asked
    assert r.exit_code == 2 and "unknown participant 'nobody'" in r.output and "Erase" not in r.output


def test_consent_commands_explain_themselves(home):
    for cmd in ("show", "withdraw"):
        out = run("consent", cmd, "--help").output
        assert len(out.split("Options:")[0].split("\n\n", 1)[1].strip()) > 20, cmd  # a description, not just usage
    assert "--yes" in run("consent", "withdraw", "--help").output


def test_actions_list_says_when_nothing_waits_and_numbers_without_gaps(home):
    run("consent", "accept", "-p", "ana")
    assert run("actions", "list", "-p", "ana").output.strip() == "Nothing waits for ana's approval. (--all lists everything)"
    assert run("actions", "list", "-p", "ana", "--all").output.strip() == "No actions for ana yet."
    # The exam mention proposes an unrequested check-in that low outreach drops; then two held messages.
    run("chat", "-p", "ana", "--model", "echo", input="my exam is tomorrow\nsend Bea a message saying hi\n"
                                                      "send Tom a message saying see you soon\n")
    listed = json.loads(run("actions", "list", "-p", "ana", "--all", "--json").stdout)
    assert any(a["status"] == "dropped" for a in listed) or len(listed) == 2
    lines = run("actions", "list", "-p", "ana").output.splitlines()
    assert lines[0].split() == ["#", "status", "context", "action"]
    assert [ln.split()[0] for ln in lines[1:]] == ["1", "2"]
    assert "message to Bea" in lines[1] and "message to Tom" in lines[2]
    r = run("actions", "approve", "2", "-p", "ana")
    assert r.exit_code == 0 and "message to Tom" in r.output
    assert "message to Tom" not in run("actions", "list", "-p", "ana").output
    r = run("actions", "reject", "7", "-p", "ana")
    assert r.exit_code == 2 and "no action #7 for ana" in r.output


def test_plugins_columns_never_run_together(home):
    out = run("plugins").output
    rows = [ln for ln in out.splitlines() if ln.startswith("  ")]
    assert rows
    for ln in rows:
        name, _, rest = ln.strip().partition(" ")
        assert not rest or rest.startswith(" "), ln  # at least two spaces between name and description
    starts = {len(ln) - len(ln.strip().partition(" ")[2].lstrip()) for ln in rows if ln.strip().partition(" ")[2]}
    assert len(starts) == 1  # one description column for every kind


def test_interactive_chat_leaves_on_quit_and_exit(home, monkeypatch):
    from companion.cli import chat

    run("consent", "accept", "-p", "ana")
    monkeypatch.setattr(chat, "_is_terminal", lambda: True)
    for word in ("quit", "exit", "  Quit "):
        r = run("chat", "-p", "ana", "--model", "echo", input=f"hello\n{word}\nnot sent\n")
        assert r.exit_code == 0
    said = [m["text"] for m in json.loads(run("messages", "-p", "ana", "--json").stdout) if m["sender"] == "user"]
    assert said == ["hello"] * 3


def test_scripted_chat_is_one_reply_a_line_even_with_paragraphs_and_actions(home, install_plugin):
    from companion.cli.chat import one_line

    install_plugin("para-model", {"companion.models": {"paras": "tests.plugins.models:Paragraphs"}})
    run("consent", "accept", "-p", "ana")
    r = run("chat", "-p", "ana", "--model", "paras/v1", input="hello\nsend Bea a message saying hi\n")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0] == "First paragraph.\\n\\nSecond paragraph, with a back\\\\slash."
    assert lines[1].startswith("First paragraph.") and "Waiting for your approval: message to Bea" in lines[1]
    stored = [m["text"] for m in json.loads(run("messages", "-p", "ana", "--json").stdout) if m["sender"] != "user"]
    assert [one_line(t) for t in stored] == lines  # unescaping a line gives the stored reply back
    assert "loading" in r.stderr and "paras/v1" in r.stderr  # the first turn says what it waits for
    assert r.stderr.count("loading") == 1


def test_serve_prints_the_model_the_url_and_a_ready_line_once_it_answers(home, monkeypatch):
    import socket
    import time

    from companion import app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def fake_serve(settings):  # the app's launch, reduced to opening its port after a while
        time.sleep(0.5)
        with socket.socket() as srv:
            srv.bind((settings.host, settings.port))
            srv.listen()
            time.sleep(1.5)

    monkeypatch.setattr(app, "serve", fake_serve)
    out = run("serve", "--model", "echo", "--port", str(port)).output.splitlines()
    assert out[0] == "companion: model echo/echo"
    ready = [ln for ln in out if "ready" in ln]
    assert ready == [f"companion: ready at http://127.0.0.1:{port} (Ctrl-C to stop)"]
    assert out.index(ready[0]) > out.index(f"companion: starting on http://127.0.0.1:{port} ...")


def test_extractors_are_chosen_by_registered_name_a_third_partys_too(home, install_plugin):
    install_plugin("extract-model", {"companion.models": {"extracting": "tests.plugins.models:Extracting"},
                                     "companion.extractors": {"verbatim": "tests.plugins.models:Verbatim"}})
    assert run("consent", "accept", "-p", "ana").exit_code == 0
    run("chat", "-p", "ana", "--model", "echo", input="hello there\nI live in Lisbon now\nNote: plays the oboe\n")
    r = run("memory", "consolidate", "-p", "ana", "--extractor", "nosuch")
    assert r.exit_code == 2 and "no extractor named 'nosuch'" in r.output and "combined" in r.output
    # the rules and the model together: the model's Lisbon claim is the rules' one (same slot, same
    # message), kept once; its yacht is not in the cited message
    report = json.loads(run("memory", "consolidate", "-p", "ana", "--extractor", "combined",
                            "--model", "extracting/x", "--json").output)
    assert report["extractor"].startswith("rule+model") and report["verdicts"] == {"supported": 1, "unsupported": 1}
    report = json.loads(run("memory", "rebuild", "-p", "ana", "--extractor", "verbatim", "--json").output)
    assert report["extractor"].startswith("verbatim")
    shown = json.loads(run("memory", "show", "-p", "ana", "--json").output)
    assert [(c["text"], c["source_dayids"]) for c in shown["claims"]] == [("plays the oboe", ["day1-5"])]
    listed = run("plugins").output
    assert "extractors:" in listed and "verbatim" in listed and "export_sources:" in listed


def test_a_command_closes_the_stores_it_opened(home, monkeypatch):
    from companion.cli import base
    from memory.store import Store

    opened = []

    def recorded(*a, **kw):  # Store picks the engine: record what it returns
        s = Store(*a, **kw)
        opened.append(s)
        return s

    monkeypatch.setattr(base, "Store", recorded)
    run("consent", "accept", "-p", "ana")
    run("chat", "-p", "ana", "--model", "echo", input="hello\n")
    assert run("messages", "-p", "ana").exit_code == 0
    assert run("memory", "delete", "-p", "ana", "--claim", "99").exit_code == 2  # fails, closes all the same
    assert len(opened) >= 4 and all(not s._all for s in opened)  # no connection left open
