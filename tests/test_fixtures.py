"""The synthetic release: deterministic, covering every stratum, locus and tier, and findable."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from rank_bm25 import BM25Okapi

from eval.fixtures import main, make_release
from eval.readers import read_release

# A local tokenizer, so this test checks the fixture and not whichever BM25 the project ships.
STOP = set("""a an and are as at be been but by can could did do does for from had has have he her him his how
i if in into is it its just me my no not of on or our she so than that the their them then there these they this
those to too us was we were what when where which who why will with would you your am im oh ok yeah""".split())


def tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.lower()) if w not in STOP and len(w) > 1]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return read_release(make_release(tmp_path_factory.mktemp("fx") / "release"))


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    a, b = make_release(tmp_path / "a"), make_release(tmp_path / "b")
    assert _files(a) == _files(b)
    assert _files(make_release(tmp_path / "c", seed=8)) != _files(a)
    make_release(a)  # regenerating over an earlier fixture release is allowed
    assert _files(a) == _files(b)


def test_cli_writes_a_release(tmp_path, capsys):
    main([str(tmp_path / "out"), "--seed", "3"])
    assert "U03:" in capsys.readouterr().out
    assert read_release(tmp_path / "out").manifest.model_extra["seed"] == 3


def test_three_clearly_different_sizes(release):
    sizes = [len(p.conversation) for p in release.participants.values()]
    assert 55 <= sizes[0] <= 90 and 130 <= sizes[1] <= 180 and 380 <= sizes[2] <= 420


def test_conversation_shape(release):
    for p in release.participants.values():
        senders = [r.sender for r in p.conversation]
        assert senders[0] == "user" and senders[-1] == "companion"
        pairs = list(zip(senders, senders[1:]))
        assert ("companion", "companion") not in pairs
        assert ("user", "user") in pairs  # occasional double user messages
        times = [datetime.fromisoformat(r.ts) for r in p.conversation]
        assert all(r.ts.endswith("+01:00") for r in p.conversation)
        assert times == sorted(times)
        first = times[0].date()
        for r, t in zip(p.conversation, times):  # dayid n counts calendar days from the first message
            assert r.dayid.startswith(f"day{(t.date() - first).days + 1}-")
        assert len({t.date() for t in times}) >= 4


def _probes(release):
    for p in release.participants.values():
        for g in p.chat_gold:
            yield p, g


def test_coverage_of_strata_loci_tiers_and_screens(release):
    seen = {f: {getattr(g, f) for _, g in _probes(release)} for f in ("stratum", "locus", "tier", "referent_on_screen")}
    assert seen == {"stratum": {"proportional", "enriched", "control"},
                    "locus": {"thread", "episode", "profile", "companion", "none"},
                    "tier": {"basic", "intermediate", "hard", "edge"},
                    "referent_on_screen": {"no", "partial", "clear"}}
    assert any(not g.scoreable for _, g in _probes(release))
    for p in release.participants.values():  # every participant has each stratum
        assert {g.stratum for g in p.chat_gold} == {"proportional", "enriched", "control"}


def _kind(p, g, w):
    if not g.grounding_dayids:
        return "none"
    if g.distant(p.index, w):
        return "far"
    return "mixed" if g.memory_bearing(p.index, w) else "near"


def test_grounding_near_far_and_mixed_is_labelled_truthfully(release):
    w = release.recent_window
    want = {"none": {"none"}, "near": {"near"}, "mixed": {"mixed"}, "far": {"lexical", "paraphrase"}}
    kinds = set()
    for p, g in _probes(release):
        k = _kind(p, g, w)
        kinds.add(k)
        assert g.model_extra["fixture_match"] in want[k], (p.id, g.probe_dayid, k)
    assert kinds == set(want)


def test_strict_reading_removes_exactly_the_clear_referents(release):
    w = release.recent_window
    for p, g in _probes(release):
        assert g.memory_bearing(p.index, w, strict=True) == (g.memory_bearing(p.index, w) and g.referent_on_screen != "clear")
    assert any(g.memory_bearing(p.index, w) and not g.memory_bearing(p.index, w, strict=True) for p, g in _probes(release))


def test_controls_are_cold_opens_with_empty_gold(release):
    controls = [(p, g) for p, g in _probes(release) if g.stratum == "control"]
    assert controls
    for p, g in controls:
        assert g.grounding_dayids == [] and g.locus == "none" and g.episode_refs == g.profile_refs == []
        at = p.index[g.probe_dayid]
        if at > 1:  # the previous message is from an earlier session (an hour or more before)
            gap = datetime.fromisoformat(p.conversation[at - 1].ts) - datetime.fromisoformat(p.conversation[at - 2].ts)
            assert gap.total_seconds() >= 3600


def test_proportional_stratum_mixes_need_and_no_need(release):
    # a blind sample: the demand rate it estimates must be strictly between 0 and 1
    w = release.recent_window
    prop = [g.memory_bearing(p.index, w) for p, g in _probes(release) if g.stratum == "proportional" and g.scoreable]
    assert 0 < sum(prop) < len(prop)
    assert all(g.memory_bearing(p.index, w) or g.locus != "none" for p, g in _probes(release) if g.stratum == "enriched")


def test_lexical_gold_is_found_by_bm25_and_paraphrased_gold_shares_no_words(release):
    n = {"lexical": 0, "paraphrase": 0}
    for p, g in _probes(release):
        m = g.model_extra["fixture_match"]
        if m not in n:
            continue
        n[m] += 1
        at = p.index[g.probe_dayid]
        earlier = p.conversation[: at - 1]  # docs/METRICS.md: the probe as the query over earlier messages
        query = tokens(p.row(g.probe_dayid).text)
        if m == "lexical":
            scores = BM25Okapi([tokens(r.text) for r in earlier]).get_scores(query)
            top = {earlier[i].dayid for i in sorted(range(len(earlier)), key=lambda i: -scores[i])[:5]}
            assert top & set(g.grounding_dayids), p.row(g.probe_dayid).text
        else:
            gold_words = {w for d in g.grounding_dayids for w in tokens(p.row(d).text)}
            assert not set(query) & gold_words, p.row(g.probe_dayid).text
    assert n["lexical"] >= 20 and n["paraphrase"] >= 15


def test_profile_qa_and_persona_cite_the_conversation(release):
    verdicts = set()
    for p in release.participants.values():
        ids = {c.id for c in p.profile}
        verdicts |= {c.verdict for c in p.profile}
        for g in p.chat_gold:
            assert set(g.profile_refs) <= ids
            assert g.reference_reply
        assert any(q.evidence_dayids == [] for q in p.qa) and all(q.answer for q in p.qa)
        assert p.persona.slots["occupation"].evidence
    assert verdicts == {"supported", "repairable", "unsupported", "pending", "pruned_supported", "undetermined"}
    moved = [c for p in release.participants.values() for c in p.profile if c.valid_to]
    assert moved and all(p.index[c.valid_from] < p.index[c.valid_to] for p in release.participants.values()
                         for c in p.profile if c.valid_to)
