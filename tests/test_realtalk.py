"""Issue 24 on hand-made material: the learned ranker's features by hand, the retriever against its
trainer, the gate's evidence for callbacks, the label reader, and `companion bench gate` / `bench
locomo` end to end on small LoCoMo-format files (no LoCoMo needed; one test uses it when present)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memory import features, messages, ranker, registry
from memory.context import TurnContext, TurnTime

T0 = datetime(2023, 5, 8, 13, 0, tzinfo=timezone.utc)

# (sender, text, minutes after T0): Ann is the participant, Bo the other side; day 3 is a new session
LOG = [
    ("user", "Ann: I adopted a beagle called Pretzel yesterday", 0),
    ("companion", "Bo: Congrats! A beagle is a great dog.", 1),
    ("user", "Ann: haha yes", 2),
    ("companion", "Bo: I started painting a sunrise last week", 3),
    ("user", "Ann: Lovely, send me a picture", 4),
    ("companion", "Bo: Will do, and I am planning a trip to Lisbon next month", 5),
    ("user", "Ann: Hey Bo, long time no talk! Work was busy.", 60 * 48),
    ("companion", "Bo: Same here, the studio took all my time.", 60 * 48 + 1),
]


@pytest.fixture
def log(store, ana):
    return messages.append_many(store, ana, [dict(sender=s, text=t, context="personal", ts=T0 + timedelta(minutes=m))
                                             for s, t, m in LOG])


def ctx_of(store, who, text, as_of=None, window=2):
    as_of = as_of or messages.next_ordinal(store, who)
    return TurnContext(store=store, participant=who, text=text, context="personal", as_of=as_of,
                       recent=messages.read(store, who, as_of, limit=window), time=TurnTime.at(store, who, as_of))


def test_ranker_features_by_hand(store, ana, log):
    c = ctx_of(store, ana, "When did Ann adopt the beagle in May 2023?")
    cord, X, rows = ranker.candidate_features(c, c.text)
    col = {f: i for i, f in enumerate(ranker.FEATURES)}
    row = {int(o): X[i] for i, o in enumerate(cord)}
    assert set(row) == {m.ordinal for m in log}  # 8 messages: every one is a candidate of one list or the other
    first, beagle_reply, short = log[0].ordinal, log[1].ordinal, log[2].ordinal
    # the query names Ann: her messages are "speaker named", Bo's are "other named"
    assert row[first][col["speaker_named"]] == 1 and row[first][col["other_named"]] == 0
    assert row[beagle_reply][col["speaker_named"]] == 0 and row[beagle_reply][col["other_named"]] == 1
    # a when-question and a message holding a time expression ("yesterday"); "in May 2023" and the day sent
    assert row[first][col["when_time"]] == 1 and row[log[4].ordinal][col["when_time"]] == 0
    assert all(row[o][col["date_match"]] == 1 for o in row)  # every message was sent in May 2023
    # the first message, and the first after two days of silence, open a session
    assert [o for o in row if row[o][col["session_open"]]] == [first, log[6].ordinal]
    # neighbours: the best dense similarity of the turn before and after, from the turn's own arrays
    sims, ords = c.dense(c.text)
    pos = {int(o): i for i, o in enumerate(ords)}
    want = max(max(sims[pos[short] - 1], 0.0), max(sims[pos[short] + 1], 0.0))
    assert row[short][col["nb_dense"]] == pytest.approx(want, abs=1e-6)
    assert row[short][col["nb_dense_short"]] == pytest.approx(want, abs=1e-6)  # "haha yes" is short
    assert row[first][col["nb_dense_short"]] == 0
    assert row[beagle_reply][col["companion"]] == 1 and row[first][col["companion"]] == 0
    assert rows[first][3] == log[0].dayid


def test_the_learned_retriever_ranks_as_its_trainer_scores(store, ana, log, tmp_path):
    """The retriever and eval.ranktrain.ranked agree on every query (one scoring function, two roads)."""
    from eval import ranktrain

    model = ranker.load()  # the shipped weights
    hyb = registry.create("retriever", "hybrid")
    assert hyb.params["recipe"] == "learned" and hyb.params["model_version"] == model["version"]
    for q in ("When did Ann adopt the beagle?", "Where is Bo going next month?", "what is Bo painting"):
        c = ctx_of(store, ana, q)
        cord, X, _ = ranker.candidate_features(c, q)
        offline = ranktrain.ranked(model, ranktrain.Table(cord, X, np.zeros(len(cord), bool)), 5)
        assert [h.ordinal for h in hyb.search(ctx_of(store, ana, q), q, 5)] == offline
    c = ctx_of(store, ana, "Where is Bo going next month?")
    assert "Lisbon" in hyb.search(c, c.text, 1)[0].text
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"features": ["bm25", "telepathy"], "coef": [1, 2], "mean": [0, 0], "scale": [1, 1]}))
    with pytest.raises(ranker.RankerError, match="telepathy"):
        registry.create("retriever", "hybrid", recipe="learned", model=str(bad))


def test_callback_evidence_of_the_gate(store, ana, log):
    # "your trip" and "Lisbon": what only the companion said, before the window; a window reply is not
    c = ctx_of(store, ana, "How is your trip to Lisbon coming along?", window=2)
    assert "lisbon" in features.companion_novelty(c)[1]  # only Bo ever said it
    assert "lisbon" not in features.entity_novelty(c)[1]
    assert features.unseen_reference(c)[1] == ["your trip to lisbon"]
    f = features.compute(c, features.NAMES)
    assert f["other_ref"] >= 1 and f["companion_callback"] > 0.2  # Bo's plan ("... Lisbon next month")
    here = ctx_of(store, ana, "the studio sounds like a lot", window=2)
    assert features.unseen_reference(here) == (0.0, [])  # "studio" is on screen
    w = features.in_window(here)
    assert w["dense_recent"] > 0.3 and w["answers_question"] == 0
    # the turn after two days: hours since the previous message, from the turn's time
    opener = ctx_of(store, ana, "hi", as_of=log[6].ordinal, window=2)
    assert features.in_window(opener)["log_gap_hours"] == pytest.approx(np.log1p(48 - 5 / 60), abs=1e-3)
    assert features.cue_features("Hey, long time no talk! Since we last spoke I just joined a choir")["news_cues"] >= 2


# ---------------------------------------------------------------- the label reader and bench gate


def mini_locomo():
    """Two small conversations in LoCoMo's shape (speaker_a is the participant)."""
    def conv(a, b, lines):
        out = {"speaker_a": a, "speaker_b": b}
        for n, (date, turns) in enumerate(lines, 1):
            out[f"session_{n}_date_time"] = date
            out[f"session_{n}"] = [{"speaker": a if i % 2 == 0 else b, "dia_id": f"D{n}:{i + 1}", "text": t}
                                   for i, t in enumerate(turns)]
        return out

    s1 = [("1:00 pm on 1 May, 2023", ["I adopted a beagle called Pretzel yesterday!", "Congrats! Beagles are lovely.",
                                       "He chews everything though", "Get him a rope toy, they love those.",
                                       "Good idea, thanks", "Any time!", "Talk soon", "Bye!"]),
          ("2:00 pm on 9 May, 2023", ["Hey! Did Pretzel like the rope toy you told me about? Oh wait, that was you",
                                       "Ha, did he like it?", "He loved it", "Great to hear", "What are you up to?",
                                       "I'm painting a sunrise", "Nice!", "Thanks"])]
    s2 = [("9:00 am on 2 June, 2023", ["I started learning the cello last week", "That is amazing, which teacher?",
                                        "A woman called Greta", "Sounds great", "It is hard", "Keep going!"]),
          ("10:00 am on 20 June, 2023", ["Hi again", "Hi! How is the cello with Greta going?", "Going well",
                                          "Good", "When did I start the cello?", "Last week of May"])]
    qa1 = [{"question": "When did Ann adopt Pretzel?", "answer": "30 April 2023", "evidence": ["D1:1"], "category": 2},
           {"question": "What toy did Bo suggest?", "answer": "a rope toy", "evidence": ["D1:4"], "category": 4},
           {"question": "What is Bo painting?", "answer": "a sunrise", "evidence": ["D2:6"], "category": 4}]
    qa2 = [{"question": "Who teaches Cy the cello?", "answer": "Greta", "evidence": ["D1:3"], "category": 4},
           {"question": "What instrument did Cy start?", "answer": "cello", "evidence": ["D1:1"], "category": 1},
           {"question": "What did Dee say about Mars?", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5}]
    return [{"sample_id": "conv-a", "conversation": conv("Ann", "Bo", s1), "qa": qa1},
            {"sample_id": "conv-b", "conversation": conv("Cy", "Dee", s2), "qa": qa2}]


LABELS = [
    {"sample_id": "conv-a", "dia_id": "D1:3", "locus": "thread", "refs": [], "draw": "uniform"},
    {"sample_id": "conv-a", "dia_id": "D1:5", "locus": "thread", "refs": [], "draw": "uniform"},
    {"sample_id": "conv-a", "dia_id": "D2:1", "locus": "companion_past", "refs": ["D1:4"], "draw": "callback"},
    {"sample_id": "conv-b", "dia_id": "D1:5", "locus": "thread", "refs": [], "draw": "uniform"},
    {"sample_id": "conv-b", "dia_id": "D2:1", "locus": "none", "refs": [], "draw": "uniform"},
    {"sample_id": "conv-b", "dia_id": "D2:5", "locus": "episode", "refs": ["D1:1"], "draw": "uniform"},
]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("change, needle", [
    (lambda r: r.update(locus="maybe"), "line 2: field 'locus': 'maybe' is not one of"),
    (lambda r: r.pop("dia_id"), "line 2: field 'dia_id' missing"),
    (lambda r: r.update(draw="random"), "line 2: field 'draw'"),
    (lambda r: r.update(refs="D1:1"), "line 2: field 'refs' must be a list"),
    (lambda r: r.update(dia_id="D1:3"), "line 2: conv-a D1:3 is labelled twice (first at line 1)"),
])
def test_label_errors_name_the_line_and_field(tmp_path, change, needle):
    from eval.benchgate import read_labels
    from eval.readers import CorpusError

    rows = [dict(r) for r in LABELS]
    change(rows[1])
    with pytest.raises(CorpusError) as e:
        read_labels(write_jsonl(tmp_path / "labels.jsonl", rows))
    assert needle in str(e.value)


def test_bench_gate_replays_each_label_as_of_its_position(tmp_path):
    from companion.cli import main

    corpus = tmp_path / "mini.json"
    corpus.write_text(json.dumps(mini_locomo()))
    labels = write_jsonl(tmp_path / "labels.jsonl", LABELS)
    r = CliRunner().invoke(main, ["bench", "gate", str(corpus), str(labels), "--cache", str(tmp_path / "c"),
                                  "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    uni, all_ = out["by_draw"]["uniform"], out["by_draw"]["all"]
    assert (uni["n"], uni["need"], all_["n"], all_["need"]) == (5, 1, 6, 2)
    assert out["demand_rate_uniform"]["k"] == 1 and out["demand_rate_uniform"]["n"] == 5
    # the shares are counts of the gate's own decisions at its threshold, over the right denominators
    assert all_["abstained_on_no_need"]["n"] == 4 and all_["retrieved_on_need"]["n"] == 2
    assert out["threshold"] == json.loads((features.CUES_FILE.parent / "gate-learned-v2.json").read_text())["threshold"]
    # a label on the companion's turn, or naming no turn, is refused by line
    bad = write_jsonl(tmp_path / "bad.jsonl", LABELS[:1] + [dict(LABELS[1], dia_id="D1:2"), dict(LABELS[2], dia_id="D9:9")])
    r = CliRunner().invoke(main, ["bench", "gate", str(corpus), str(bad), "--cache", str(tmp_path / "c")])
    said = r.output + str(r.exception)
    assert r.exit_code != 0
    assert "line 2: conv-a D1:2 is speaker_b's" in said and "line 3: conv-a has no turn D9:9" in said


def test_the_real_message_labels_hold_ids_only(tmp_path):
    from eval.benchgate import NEED, read_labels
    from eval.gatesets import REAL_DEV, REAL_FEATURES

    labs = read_labels(REAL_DEV)
    assert {lab.sample_id for lab in labs} == {"conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44"}
    for line in REAL_DEV.read_text().splitlines():
        assert set(json.loads(line)) == {"sample_id", "dia_id", "locus", "refs", "draw"}  # no text
    assert all(bool(lab.refs) == (lab.locus in NEED) for lab in labs)
    rows = json.loads(REAL_FEATURES.read_text())
    assert rows["ids"] == [f"{lab.sample_id} {lab.dia_id}" for lab in labs]
    assert rows["need"] == [int(lab.need) for lab in labs] and rows["features"] == features.NAMES


LOCOMO = os.environ.get("LOCOMO_PATH", "/work/data/locomo10.json")


@pytest.mark.skipif(not Path(LOCOMO).exists(), reason="LoCoMo is not on this machine (set LOCOMO_PATH)")
def test_the_committed_feature_rows_are_the_corpus_own(tmp_path):
    from eval import gatesets

    again = gatesets.real_features(LOCOMO, cache=tmp_path / "c")
    shipped = json.loads(gatesets.REAL_FEATURES.read_text())
    assert again["ids"] == shipped["ids"]
    assert np.allclose(np.array(again["rows"]), np.array(shipped["rows"]), atol=1e-4)


# ---------------------------------------------------------------- bench locomo end to end


def test_bench_locomo_cross_validates_on_conversations(tmp_path):
    from companion.cli import main

    corpus = tmp_path / "mini.json"
    corpus.write_text(json.dumps(mini_locomo()))
    r = CliRunner().invoke(main, ["bench", "locomo", str(corpus), "--no-own", "--cache", str(tmp_path / "c"),
                                  "--bootstrap", "100", "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["folds_layout"] == {"L1": ["conv-a"], "L2": ["conv-b"]}
    assert out["queries"] == {"L1": 3, "L2": 3}
    # category 5 is its own row and never pooled into 1-4
    pooled = out["pooled"]["locomo"]["bm25"]
    assert pooled["5"]["hit@5"]["n"] == 1 and pooled["1-4"]["hit@5"]["n"] == 5
    for s_ in out["pooled"]["locomo"].values():
        m = s_["1-4"]
        assert 0 <= m["hit@5"]["value"] <= 1 and m["recall@10"]["n"] == m["mrr@10"]["n"] == 5
    assert set(out["chosen"]) == {"L1", "L2"} and out["final_default"] in out["overall_out_of_fold_hit@5"]
    assert all(c["what"] in ("chosen >= max(bm25, dense)", "chosen >= bm25") for c in out["checks"])
