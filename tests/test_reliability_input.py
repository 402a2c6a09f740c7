"""Hostile and bad input: each gets a clear error or is handled, nothing stored is lost, the app
keeps serving. The corpus readers are fuzzed with hypothesis: only CorpusError, never another
exception.

Decisions taken here (see memory/messages.py):
- a participant message is at most MAX_MESSAGE_CHARS (20,000) characters; a longer one (a 1 MB
  paste) is refused before anything is stored, with an error naming the limit;
- invalid UTF-8 bytes, a lone surrogate (what JSON's "\\ud800" decodes to), a NUL and an empty or
  blank message are refused with an error saying which;
- other control characters (escape sequences, BEL, CR, bidi overrides, zero-width joiners) are
  data: stored verbatim and returned verbatim;
- any script (Japanese, Arabic, emoji) is stored and returned intact and is searchable.
"""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from companion import app, auth, markup
from companion.settings import Settings
from companion.turn import turn
from consent import records as consent
from eval.fixtures import make_release
from eval.locomo import read_locomo
from eval.longmemeval import read_longmemeval
from eval.readers import CorpusError, read_release
from memory import messages
from memory.messages import MAX_MESSAGE_CHARS
from memory.store import Store, StoreError
from memory.embeddings import HashEmbedder

ONE_MB = "a" * (1 << 20)
CONTROL = "bell\x07 esc\x1b[31mred\x1b[0m cr\r tab\t ff\x0c del\x7f rlo\u202egnp.exe zwj\u200d end"
JAPANESE = "妹はポルトに住んでいます。来週会いに行きます。"
ARABIC = "أختي تعيش في بورتو وسأزورها الأسبوع القادم"
EMOJI = "my 🐈‍⬛ cat is called Zoë 👩🏽‍🚀"


@pytest.fixture
def quick_store(home):
    s = Store(home)
    s.vectors.embedder = HashEmbedder()  # no model load: these tests are about input, not vectors
    consent.accept(s, "ana", tz="UTC")
    yield s
    s.close()


@pytest.fixture
def quick_settings(home):
    # grounded off: the echo model shows which memory reached its prompt (grounded, recall is answered without it)
    return Settings(home=home, model="echo", gate="always", retriever="bm25", recent_window=0, grounded="off")


def snapshot(store: Store):
    store.settle()  # the last reply's vector lands after its turn returned (companion/turn.py)
    c = store.conn
    return (c.execute("SELECT participant, ordinal, dayid, sender, text FROM messages ORDER BY id").fetchall(),
            c.execute("SELECT * FROM day_counters ORDER BY participant, day_n").fetchall(),
            c.execute("SELECT count(*) FROM message_vectors").fetchone()[0],
            c.execute("SELECT count(*) FROM traces").fetchone()[0])


# --- the turn -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad, needle", [
    (ONE_MB, f"message is too long: {1 << 20} characters, the limit is {MAX_MESSAGE_CHARS}"),
    ("x" * (MAX_MESSAGE_CHARS + 1), f"the limit is {MAX_MESSAGE_CHARS}"),
    (b"caf\xe9 au lait", "not valid UTF-8 (byte 3)"),
    ("half a pair \ud800 here", "not valid Unicode (lone surrogate at character 12;"),
    ("nul\x00byte", "NUL character"),
    ("", "message is empty"),
    (" \n\t ", "message is empty"),
    (None, "message must be text"),
])
def test_bad_message_is_refused_clearly_and_nothing_stored_is_lost(quick_store, quick_settings, bad, needle):
    first = turn(quick_store, "ana", "my sister lives in Porto", settings=quick_settings)
    before = snapshot(quick_store)
    with pytest.raises(StoreError) as e:
        turn(quick_store, "ana", bad, settings=quick_settings)
    assert needle in str(e.value)
    assert snapshot(quick_store) == before  # nothing half-stored, nothing lost, no key consumed
    after = turn(quick_store, "ana", "where does my sister live", settings=quick_settings)
    assert (first.message.dayid, after.message.dayid) == ("day1-1", "day1-3")
    assert f"I recalled {first.message.dayid}" in after.shown


def test_message_at_the_limit_is_stored_intact(quick_store):
    text = ("word " * (MAX_MESSAGE_CHARS // 5))[:MAX_MESSAGE_CHARS - 1] + "!"
    assert len(text) == MAX_MESSAGE_CHARS
    m = messages.append(quick_store, "ana", "user", text, "personal")
    # a companion reply is not bounded by the participant limit (an echo of it is longer)
    r = messages.append(quick_store, "ana", "companion", "You said: " + text, "personal")
    got = messages.read(quick_store, "ana", r.ordinal + 1)
    assert [g.text for g in got] == [text, "You said: " + text] and m.dayid == "day1-1"


@pytest.mark.parametrize("text", [CONTROL, JAPANESE, ARABIC, EMOJI])
def test_control_characters_and_other_scripts_round_trip(quick_store, quick_settings, text):
    r = turn(quick_store, "ana", text, settings=quick_settings)
    assert r.shown == f"You said: {text}"
    got = messages.read(quick_store, "ana", messages.next_ordinal(quick_store, "ana"))
    assert [(m.sender, m.text) for m in got] == [("user", text), ("companion", f"You said: {text}")]
    reopened = Store(quick_store.data_dir)
    try:
        assert reopened.conn.execute("SELECT text FROM messages WHERE dayid='day1-1'").fetchone()[0] == text
    finally:
        reopened.close()


def test_arabic_message_is_found_again_by_bm25(quick_store, quick_settings):
    first = turn(quick_store, "ana", ARABIC, settings=quick_settings)
    later = turn(quick_store, "ana", "متى سأزور أختي", settings=quick_settings)  # "when will I visit my sister"
    assert first.message.dayid in [h["dayid"] for h in later.trace.hits]


# --- the served app -----------------------------------------------------------------------------


@pytest.fixture
def served(serve_app):
    url, store = serve_app(embedder=HashEmbedder(), grounded="off")  # echo shows what reached its prompt
    consent.accept(store, "ana", pass_hash=auth.hash_passphrase("ana-pass"), tz="UTC")
    return url, store


def _texts(chat) -> list[str]:
    out = []
    for m in chat:
        c = m["content"]
        out += [p.get("text", "") for p in c] if isinstance(c, list) else [str(c)]
    return out


def _said(chat) -> str:
    return json.dumps(chat, ensure_ascii=False)


def test_app_refuses_bad_input_and_keeps_serving(served):
    from gradio_client import Client

    url, store = served
    c = Client(url, verbose=False)
    c.predict("ana", "ana-pass", api_name="/sign_in")
    chat = c.predict("my sister lives in Porto", "personal", [], api_name="/respond")[0]
    assert "You said: my sister lives in Porto" in _said(chat)
    before = snapshot(store)

    chat = c.predict(ONE_MB, "personal", [], api_name="/respond")[0]
    assert f"Your message could not be taken: message is too long: {1 << 20} characters, " \
           f"the limit is {MAX_MESSAGE_CHARS}" in _said(chat)
    # (a lone surrogate cannot be sent: gradio_client's JSON encoder refuses it client-side;
    # the turn-level test above covers it)
    chat = c.predict("nul\x00byte", "personal", [], api_name="/respond")[0]
    assert "NUL character" in _said(chat)
    chat = c.predict("   ", "personal", [], api_name="/respond")[0]
    assert chat == []  # a blank message is ignored, nothing sent
    assert snapshot(store) == before

    # the app keeps serving: the same session, and a fresh one, chat on normally
    for text in (JAPANESE, CONTROL, "where does my sister live"):
        chat = c.predict(text, "personal", [], api_name="/respond")[0]
        # the chat display expands tabs, and Markdown punctuation comes escaped (it is shown as
        # typed, companion.markup); what is stored is checked verbatim below
        want = markup.text(f"You said: {text}").replace("\t", "    ")
        assert any(t.startswith(want) for t in _texts(chat))
    assert "I recalled day1-1" in _said(chat)
    d = Client(url, verbose=False)
    d.predict("ana", "ana-pass", api_name="/sign_in")
    stored = [m.text for m in messages.read(store, "ana", messages.next_ordinal(store, "ana")) if m.sender == "user"]
    assert stored == ["my sister lives in Porto", JAPANESE, CONTROL, "where does my sister live"]


# --- corpus files ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("rel") / "release")


def _copy(src, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    return dst


def test_truncated_conversation_names_file_and_line(release_dir, tmp_path):
    rel = _copy(release_dir, tmp_path)
    f = rel / "U01" / "conversation.jsonl"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])  # cut mid-line, as a copy interrupted would
    with pytest.raises(CorpusError, match=r"U01/conversation\.jsonl line \d+: invalid JSON"):
        read_release(rel)
    f.write_bytes(data[: data.rindex(b"\n", 0, len(data) // 2) + 1])  # cut at a line end
    with pytest.raises(CorpusError, match=r"U01/\w+\.jsonl line \d+: field '\w+': 'day\d+-\d+' is not in the conversation"):
        read_release(rel)  # a claim or probe now cites a message that is gone
    f.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])  # only the last row lost
    with pytest.raises(CorpusError, match=r"manifest\.json: field 'counts\.U01\.messages': says \d+, .*truncated or stale"):
        read_release(rel)


def test_dangling_dayids_name_file_line_and_field(release_dir, tmp_path):
    rel = _copy(release_dir, tmp_path)
    f = rel / "U01" / "qa.jsonl"
    lines = f.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["evidence_dayids"] = ["day999-1"]
    lines[0] = json.dumps(row)
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"U01/qa\.jsonl line 1: field 'evidence_dayids': 'day999-1' is not in the conversation"):
        read_release(rel)


def test_invalid_utf8_in_a_corpus_file_names_file_and_line(release_dir, tmp_path):
    rel = _copy(release_dir, tmp_path)
    f = rel / "U02" / "conversation.jsonl"
    lines = f.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"text": "', b'"text": "\xff\xfe', 1)
    f.write_bytes(b"\n".join(lines))
    with pytest.raises(CorpusError, match=r"U02/conversation\.jsonl line 3: not valid UTF-8"):
        read_release(rel)


# --- fuzzing the readers ------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["day1-1", "day0-1", "day1-0", "D1:1", "2023/05/20 (Sat) 02:21", "1:56 pm on 8 May, 2023",
                       "2024-01-01T00:00:00+00:00", "user", "companion"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8,
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated_json(draw, obj):
    """Replace, delete or retype one value somewhere in `obj` (a deep copy)."""
    obj = json.loads(json.dumps(obj))
    paths = list(_paths(obj))
    path = draw(st.sampled_from(paths))
    if not path:
        return draw(json_values)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    return obj


@st.composite
def mutated_bytes(draw, data: bytes):
    how = draw(st.sampled_from(["truncate", "flip", "insert", "random"]))
    if how == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if how == "random":
        return draw(st.binary(max_size=200))
    at = draw(st.integers(0, max(0, len(data) - 1)))
    junk = draw(st.binary(min_size=1, max_size=8))
    if how == "flip":
        return data[:at] + junk + data[at + len(junk):]
    return data[:at] + junk + data[at:]


FUZZ = hsettings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
RELEASE_FILES = ["manifest.json", "U01/conversation.jsonl", "U01/chat_gold.jsonl", "U01/profile.jsonl",
                 "U01/persona.json", "U01/qa.jsonl"]


@pytest.fixture(scope="module")
def fuzz_release(tmp_path_factory, release_dir):
    dst = tmp_path_factory.mktemp("fuzz") / "release"
    shutil.copytree(release_dir, dst)
    return dst


# Where a release error may point: a file of the release (a truncated conversation makes the
# profile's references dangle, and the profile is then the file at fault), the manifest (whose
# counts and participant list the files are checked against), or the participants as a whole.
def _names_where(message: str) -> bool:
    return message.startswith((*RELEASE_FILES, "manifest", "participants filed", "release does not survive"))


def _read_mutated(root, rel, new: bytes):
    """Read a release with one file replaced by `new`: either it reads, or a CorpusError names the
    file (and line) at fault; the reader never writes to the corpus, and the good release still
    reads the same once the file is restored."""
    f = root / rel
    old = f.read_bytes()
    before = read_release(root)
    f.write_bytes(new)
    try:
        read_release(root)
    except CorpusError as e:
        assert _names_where(str(e)), f"the error does not say where: {e}"
    finally:
        assert f.read_bytes() == new  # reading left the file as it was
        f.write_bytes(old)
    assert read_release(root) == before


@FUZZ
@given(data=st.data())
def test_fuzz_release_bytes(fuzz_release, data):
    rel = data.draw(st.sampled_from(RELEASE_FILES))
    _read_mutated(fuzz_release, rel, data.draw(mutated_bytes((fuzz_release / rel).read_bytes())))


@FUZZ
@given(data=st.data())
def test_fuzz_release_json_lines(fuzz_release, data):
    rel = data.draw(st.sampled_from(RELEASE_FILES))
    text = (fuzz_release / rel).read_text(encoding="utf-8")
    if rel.endswith(".json"):
        new = json.dumps(data.draw(mutated_json(json.loads(text))))
    else:
        lines = text.splitlines()
        i = data.draw(st.integers(0, len(lines) - 1))
        lines[i] = json.dumps(data.draw(mutated_json(json.loads(lines[i]))))
        new = "\n".join(lines) + "\n"
    _read_mutated(fuzz_release, rel, new.encode("utf-8", "surrogatepass"))


def _locomo():
    from tests.test_eval_corpora import locomo_sample

    return [locomo_sample()]


def _lme():
    from tests.test_eval_corpora import lme_item

    return [lme_item("q1"), lme_item("q2")]


@pytest.mark.parametrize("reader, make", [(read_locomo, _locomo), (read_longmemeval, _lme)],
                         ids=["locomo", "longmemeval"])
@FUZZ
@given(data=st.data())
def test_fuzz_locomo_and_longmemeval(tmp_path_factory, reader, make, data):
    path = tmp_path_factory.mktemp("corpus", numbered=True) / "corpus.json"
    good = make()
    path.write_text(json.dumps(good), encoding="utf-8")
    # the unmutated sample reads, one participant per conversation (LoCoMo) or question (LongMemEval)
    assert len(reader(path).participants) == len(good)
    if data.draw(st.booleans()):
        path.write_bytes(json.dumps(data.draw(mutated_json(good))).encode("utf-8", "surrogatepass"))
    else:
        path.write_bytes(data.draw(mutated_bytes(json.dumps(good).encode())))
    try:
        reader(path)
    except CorpusError as e:
        assert str(e).startswith(path.name), f"the error does not name the file: {e}"


def test_cli_chat_skips_invalid_utf8_lines_and_goes_on(tmp_path):
    """A real process reading real bytes: an undecodable line is refused by name, the next one
    is taken (stdin of a pipe decodes with surrogateescape in a C/POSIX locale, strict otherwise:
    either way the chat goes on)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COMPANION_HOME": str(tmp_path / "cli")}
    run = lambda *a, **kw: subprocess.run([sys.executable, "-m", "companion.cli", *a], env=env,  # noqa: E731
                                          capture_output=True, timeout=180, **kw)
    assert run("consent", "accept", "-p", "op", "--tz", "UTC").returncode == 0
    r = run("chat", "-p", "op", "--model", "echo", input=b"first\n\xff\xfe bad bytes\nafter\n")
    out, err = r.stdout.decode(), r.stderr.decode(errors="replace")
    assert out.splitlines() == ["You said: first", "You said: after"], (out, err)
    assert "not valid" in err
    s = Store(tmp_path / "cli")
    try:
        assert [m.text for m in messages.read(s, "op", 99)] == ["first", "You said: first", "after", "You said: after"]
    finally:
        s.close()
