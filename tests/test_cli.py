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
    assert run("consent", "withdraw", "--participant", "ana").exit_code == 0
    r = run("chat", "--participant", "ana", "--model", "echo", input="hi\n")
    assert r.exit_code == 2 and "Nothing was stored" in r.output
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
