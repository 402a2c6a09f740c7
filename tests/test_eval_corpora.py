"""LoCoMo and LongMemEval readers on small self-made files, quirks included; the reader registry."""

import json

import pytest

from eval.locomo import read_locomo
from eval.longmemeval import read_longmemeval
from eval.readers import CorpusError
from eval.replay import probes_of
from memory import registry


def locomo_sample(**over):
    conv = {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I went to a support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "That's great, how was it?"},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "", "blip_caption": "a photo of a rainbow flag"},
        ],
        "session_2_date_time": "10:37 am on 27 June, 2023",  # a date key without its session
        "session_3_date_time": "8:18 pm on 3 July, 2023",
        "session_3": [
            {"speaker": "Melanie", "dia_id": "D3:1", "text": "I painted a sunrise last week."},
            {"speaker": "Caroline", "dia_id": "D3:2", "text": "Lovely! I'm researching adoption agencies."},
        ],
    }
    qa = [
        {"question": "When did Caroline go to the support group?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "What did both do?", "answer": 2023, "evidence": ["D1:1; D3:2"], "category": 1},  # merged ids
        {"question": "What did Melanie paint?", "answer": "A sunrise", "evidence": ["D3:1", ""], "category": 4},
        {"question": "What did Melanie research?", "adversarial_answer": "adoption agencies", "evidence": ["D3:2"], "category": 5},
    ]
    d = {"sample_id": "conv-26", "conversation": conv, "qa": qa}
    d.update(over)
    return d


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def test_locomo_maps_sessions_to_days_and_repairs_evidence(tmp_path):
    rel = read_locomo(write(tmp_path, "locomo10.json", [locomo_sample()]))
    p = rel.participants["conv-26"]
    assert [r.dayid for r in p.conversation] == ["day1-1", "day1-2", "day1-3", "day3-1", "day3-2"]
    assert [r.sender for r in p.conversation] == ["user", "companion", "user", "companion", "user"]
    assert p.conversation[0].text == "Caroline: Hey Mel! I went to a support group yesterday."
    assert "rainbow flag" in p.conversation[2].text  # an image turn keeps its caption
    q = {x.question: x for x in p.qa}
    assert q["What did both do?"].evidence_dayids == ["day1-1", "day3-2"]  # split
    assert q["What did both do?"].answer == "2023"
    assert q["What did Melanie paint?"].evidence_dayids == ["day3-1"]  # the empty id dropped
    adv = q["What did Melanie research?"]
    assert adv.answer == "Not mentioned in the conversation" and adv.adversarial_answer == "adoption agencies"
    w = "\n".join(rel.warnings)
    assert "session_2_date_time has no session_2" in w
    assert "split into 2 ids" in w and "empty evidence id" in w
    assert len(rel.warnings) == 3
    # questions are asked after the whole conversation; session-3 evidence is inside the recent window
    probes = {x.item: x for x in probes_of(rel)}
    assert probes["conv-26-q0001"].as_of == 6 and probes["conv-26-q0001"].distant
    assert not probes["conv-26-q0003"].memory_bearing  # day3-1 is among the last 3 messages


def continued_numbering():
    """A hand-made corpus whose session 4 continues session 3's numbering (D3:30 ...), as some
    LoCoMo-format exports do; its evidence cites the ids the file holds."""
    s3 = [{"speaker": "Ann" if i % 2 else "Bo", "dia_id": f"D3:{i}", "text": f"session three line {i}"}
          for i in range(1, 30)]
    s4 = [{"speaker": "Ann" if i % 2 else "Bo", "dia_id": f"D3:{i}", "text": f"session four line {i}"}
          for i in range(30, 41)]
    s4[4]["text"] = "I adopted a beagle called Pretzel"  # D3:34, the fifth turn of session 4
    conv = {"speaker_a": "Ann", "speaker_b": "Bo",
            "session_3_date_time": "1:56 pm on 8 May, 2023", "session_3": s3,
            "session_4_date_time": "2:10 pm on 9 May, 2023", "session_4": s4}
    qa = [{"question": "What dog did Ann adopt?", "answer": "a beagle", "evidence": ["D3:34"], "category": 4},
          {"question": "What did they say first in session four?", "answer": "line 30", "evidence": ["D3:30"], "category": 4},
          {"question": "And in session three?", "answer": "line 5", "evidence": ["D3:5"], "category": 4}]
    return {"sample_id": "cont", "conversation": conv, "qa": qa}


def test_locomo_evidence_follows_the_dia_ids_the_file_holds_not_positions(tmp_path):
    rel = read_locomo(write(tmp_path, "cont.json", [continued_numbering()]))
    p = rel.participants["cont"]
    gold = {q.question: q.evidence_dayids for q in p.qa}
    # D3:34 is the fifth turn of session 4 (day4-5), D3:30 its first; D3:5 stays in session 3
    assert gold["What dog did Ann adopt?"] == ["day4-5"] and "Pretzel" in p.row("day4-5").text
    assert gold["What did they say first in session four?"] == ["day4-1"]
    assert gold["And in session three?"] == ["day3-5"] and p.row("day3-5").text.endswith("line 5")
    assert not any("dropped" in w for w in rel.warnings)
    assert any("session_4: 11 turns numbered outside D4:" in w for w in rel.warnings)  # said, not silent


def test_locomo_positional_evidence_on_such_a_corpus_is_refused_naming_the_ids(tmp_path):
    d = continued_numbering()
    d["qa"] = [{"question": "q", "answer": "a", "evidence": ["D4:5"], "category": 4},  # the position, not an id
               {"question": "q2", "answer": "a", "evidence": ["D4:1", "D3:34"], "category": 4}]
    with pytest.raises(CorpusError) as e:
        read_locomo(write(tmp_path, "cont.json", [d]))
    assert "2 of 3 evidence ids point at no turn" in str(e.value)
    assert "qa[0].evidence[0]: D4:5" in str(e.value) and "qa[1].evidence[0]: D4:1" in str(e.value)


def test_locomo_duplicate_or_missing_turn_ids_are_refused_naming_them(tmp_path):
    d = continued_numbering()
    d["conversation"]["session_4"][2]["dia_id"] = "D3:5"  # also a session-3 turn
    with pytest.raises(CorpusError, match=r"session_4\[2\]: field 'dia_id': 'D3:5' is also the dia_id of session_3\[4\]"):
        read_locomo(write(tmp_path, "dup.json", [d]))
    d = continued_numbering()
    del d["conversation"]["session_4"][1]["dia_id"]
    d["conversation"]["session_3"][0]["dia_id"] = "3:1"
    with pytest.raises(CorpusError, match=r"2 turns without a readable dia_id .*session_3\[0\] '3:1', session_4\[1\] None"):
        read_locomo(write(tmp_path, "missing.json", [d]))


def test_locomo_a_rare_dangling_id_is_dropped_with_a_warning(tmp_path):
    # one id citing no turn among more than a hundred: an annotator's slip, as in the public file
    d = continued_numbering()
    d["qa"] = [{"question": f"q{i}", "answer": "a", "evidence": [f"D3:{1 + i % 40}"], "category": 4} for i in range(120)]
    d["qa"].append({"question": "slip", "answer": "a", "evidence": ["D3:5", "D3:99"], "category": 4})
    rel = read_locomo(write(tmp_path, "slip.json", [d]))
    q = rel.participants["cont"].qa[-1]
    assert q.evidence_dayids == ["day3-5"]
    assert any("D3:99 points at no turn; dropped" in w for w in rel.warnings)


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.pop("sample_id"), "locomo10.json [0]: field 'sample_id' missing"),
    (lambda d: d["conversation"]["session_1"][1].pop("speaker"), "session_1[1]: field 'speaker' missing"),
    (lambda d: d["conversation"]["session_1"][1].update(speaker="Bob"), "'Bob' is neither"),
    (lambda d: d["conversation"].update(session_1_date_time="someday"), "session_1_date_time: unreadable date"),
    (lambda d: d["qa"][0].pop("category"), "qa[0]: field 'category' missing"),
    (lambda d: d["qa"][0].pop("answer"), "qa[0]: field 'answer' missing"),
])
def test_locomo_errors_name_file_and_field(tmp_path, mutate, needle):
    d = locomo_sample()
    mutate(d)
    with pytest.raises(CorpusError, match=None) as e:
        read_locomo(write(tmp_path, "locomo10.json", [d]))
    assert needle in str(e.value)


def test_locomo_not_a_list_or_not_json(tmp_path):
    with pytest.raises(CorpusError, match="expected a list"):
        read_locomo(write(tmp_path, "locomo10.json", {"a": 1}))
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(CorpusError, match="bad.json: invalid JSON"):
        read_locomo(bad)


def lme_item(qid="q1", **over):
    d = {
        "question_id": qid, "question_type": "single-session-user", "question": "What degree did I graduate with?",
        "answer": "Business Administration", "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s_late", "s_early"],
        "haystack_dates": ["2023/05/25 (Thu) 10:00", "2023/05/20 (Sat) 02:21"],  # not in time order
        "haystack_sessions": [
            [{"role": "user", "content": "I graduated with a degree in Business Administration.", "has_answer": True},
             {"role": "assistant", "content": "Congratulations!"}],
            [{"role": "user", "content": "Any tips for a trip to Rome?"},
             {"role": "assistant", "content": ""},  # an empty turn
             {"role": "user", "content": "Thanks!"}],
        ],
        "answer_session_ids": ["s_late"],
    }
    d.update(over)
    return d


def test_longmemeval_orders_sessions_by_date_and_marks_evidence(tmp_path):
    items = [lme_item(), lme_item("q2_abs", haystack_sessions=[
        [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
        [{"role": "user", "content": "bye"}]])]
    rel = read_longmemeval(write(tmp_path, "longmemeval_s.json", items))
    p = rel.participants["q1"]
    # s_early (May 20) is day 1, s_late (May 25) day 2; the empty turn is dropped (its j is not reused)
    assert [(r.dayid, r.sender) for r in p.conversation] == [
        ("day1-1", "user"), ("day1-3", "user"), ("day2-1", "user"), ("day2-2", "companion")]
    assert p.conversation[2].session_id == "s_late"
    assert p.qa[0].evidence_dayids == ["day2-1"] and p.qa[0].category == "single-session-user"
    abs_ = rel.participants["q2_abs"].qa[0]
    assert abs_.abstention and abs_.evidence_dayids == []
    assert any("empty turn dropped" in w for w in rel.warnings)
    assert not any("q2_abs" in w and "has_answer" in w for w in rel.warnings)  # expected for _abs items
    assert list(read_longmemeval(write(tmp_path, "l.json", items), limit=1).participants) == ["q1"]


def test_longmemeval_errors_name_item_and_field(tmp_path):
    with pytest.raises(CorpusError, match=r"x.json \[0\]: field 'question' missing"):
        read_longmemeval(write(tmp_path, "x.json", [{k: v for k, v in lme_item().items() if k != "question"}]))
    with pytest.raises(CorpusError, match="differ in length"):
        read_longmemeval(write(tmp_path, "y.json", [lme_item(haystack_dates=["2023/05/20 (Sat) 02:21"])]))
    with pytest.raises(CorpusError, match=r"field .haystack_sessions\[0\]\[0\]\.role.: Input should be .user. or .assistant., got .system."):
        bad = lme_item()
        bad["haystack_sessions"][0][0]["role"] = "system"
        read_longmemeval(write(tmp_path, "z.json", [bad]))


def test_readers_are_registered_plugins(tmp_path):
    assert {"benchmark", "locomo", "longmemeval"} <= set(registry.names("reader"))
    rel = registry.get("reader", "locomo")(write(tmp_path, "locomo10.json", [locomo_sample()]))
    assert list(rel.participants) == ["conv-26"]


def test_locomo_adversarial_questions_are_their_own_stratum_not_pooled(tmp_path):
    from click.testing import CliRunner

    from companion.cli import main

    corpus = write(tmp_path, "locomo10.json", [locomo_sample()])
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["eval", "retrieval", "--corpus", str(corpus), "--format", "locomo", "--out", str(out),
                                  "--work", str(tmp_path / "work"), "--no-progress", "--data-dir", str(tmp_path / "h"),
                                  "--k", "5"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    n = {m["stratum"]: m["n"] for m in doc["metrics"]
         if m["system"] == "bm25" and m["name"] == "hit@5" and m["subset"] == "qa:with_gold" and m["average"] == "micro"}
    assert n["category:adversarial"] == 1 and "all" in n
    assert n["all"] == sum(v for k, v in n.items() if k.startswith("category:") and k != "category:adversarial")
    assert "its own stratum" in (out / "report.md").read_text()
