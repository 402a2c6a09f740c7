"""Concurrency: simulated participants chatting at once through the served app's HTTP API
(a small run of eval.loadtest: correctness only; the benchmark prints the latencies)."""

from eval import loadtest


def test_concurrent_participants_get_no_errors_and_no_crossing(tmp_path):
    r = loadtest.run(participants=5, turns=2, fast_embedder=True, data_dir=str(tmp_path / "load"))
    assert r["errors"] == [] and r["crossings"] == []
    assert r["turns"] == 10 and r["ok"]


def test_a_crossing_would_be_caught():
    # the checker itself: another participant's word in a chat is reported
    chat = [{"role": "user", "content": loadtest.text_of(0, 0)},
            {"role": "assistant", "content": f"You said: {loadtest.text_of(1, 0)}"}]
    seen = {t for s in loadtest._texts(chat) for t in loadtest.TAG.findall(s)}
    assert seen - {loadtest.tag_of(0)} == {loadtest.tag_of(1)}
