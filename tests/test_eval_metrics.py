"""Eval metrics against cases computed by hand."""

import math

import pytest

from eval import metrics as M


def test_hit_recall_and_mrr_differ_on_one_case():
    gold = ["day1-1", "day1-2", "day1-3", "day1-4"]
    ranked = ["day9-9", "day1-3", "day9-8", "day1-1", "day9-7"]
    # hit@2: one gold in the top 2 -> 1; recall@2: 1 of 4 gold -> 0.25; RR: first gold at rank 2 -> 0.5
    assert M.hit_at_k(gold, ranked, 2) == 1.0
    assert M.recall_at_k(gold, ranked, 2) == 0.25
    assert M.reciprocal_rank(gold, ranked) == 0.5
    assert M.recall_at_k(gold, ranked, 5) == 0.5 and M.hit_at_k(gold, ranked, 1) == 0.0
    assert M.reciprocal_rank(gold, ["x", "y"]) == 0.0
    with pytest.raises(ValueError):
        M.recall_at_k([], ranked, 3)  # undefined, never 0


def test_auroc_counts_ties_as_one_half():
    # pos {0.9, 0.5}, neg {0.5, 0.1}: pairs (0.9>0.5) (0.9>0.1) (0.5=0.5 -> ½) (0.5>0.1) = 3.5 / 4
    assert M.auroc([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0]) == pytest.approx(0.875)
    assert M.auroc([1, 1, 1, 1], [1, 0, 1, 0]) == pytest.approx(0.5)  # all tied
    assert M.auroc([0.1, 0.2], [0, 1]) == 1.0 and M.auroc([0.2, 0.1], [0, 1]) == 0.0
    assert M.auroc([0.3, 0.4], [1, 1]) is None  # one class: not computable, not 0
    m = M.auroc_metric([0.3, 0.4], [1, 1], ["a", "b"])
    assert m.value is None and "both classes" in m.reason


def test_auroc_by_ranks_equals_pair_counting():
    import random

    rng = random.Random(3)
    s = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(60)]
    y = [rng.random() < 0.4 for _ in range(60)]
    pos = [a for a, b in zip(s, y) if b]
    neg = [a for a, b in zip(s, y) if not b]
    pairs = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    assert M.auroc(s, y) == pytest.approx(pairs)


def test_wilson_known_cases():
    lo, hi = M.wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = M.wilson(5, 10)
    assert (lo, hi) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert M.wilson(0, 0) is None


def test_decomposition_identity_holds_exactly():
    gains = [1.0, 0.0, 2.0, 0.5, 0.0, -1.0, 0.25]
    mb = [1, 0, 1, 0, 0, 1, 0]
    d, pi, g1, g0 = M.decompose(gains, mb)
    # by hand: π = 3/7, γ1 = (1 + 2 - 1)/3 = 2/3, γ0 = (0 + 0.5 + 0 + 0.25)/4 = 0.1875
    assert pi == pytest.approx(3 / 7) and g1 == pytest.approx(2 / 3) and g0 == pytest.approx(0.1875)
    assert d == pytest.approx(pi * g1 + (1 - pi) * g0, abs=1e-15)
    dec = M.decomposition(gains, mb, ["a", "a", "b", "b", "c", "c", "c"], reps=200)
    assert dec.delta.value == pytest.approx(dec.pi.value * dec.gamma1.value + (1 - dec.pi.value) * dec.gamma0.value)
    assert dec.gamma1.n == 3 and dec.gamma0.n == 4 and dec.delta.interval is not None
    none = M.decomposition([0.5, 0.1], [0, 0], ["a", "b"], reps=50)
    assert none.gamma1.value is None and "no memory-bearing" in none.gamma1.reason


def test_demand_rate_uses_the_proportional_stratum_only():
    mb = [1, 0, 0, 1, 1, 1, 0]
    strata = ["proportional", "proportional", "proportional", "proportional", "enriched", "enriched", "control"]
    ok = [True, True, True, False, True, True, True]  # the 4th is not scoreable
    m = M.demand_rate(mb, strata, ok, ["a", "a", "b", "b", "a", "b", "a"])
    assert m.value == pytest.approx(1 / 3) and m.n == 3 and m.stratum == "proportional"
    assert m.interval == pytest.approx(M.wilson(1, 3))
    empty = M.demand_rate([1], ["enriched"], [True], ["a"])
    assert empty.value is None and "proportional" in empty.reason


def test_micro_and_macro_and_their_intervals():
    v, c = [1, 1, 1, 0], ["big", "big", "big", "small"]
    mi = M.mean_metric("hit@1", v, c, average="micro", reps=200)
    ma = M.mean_metric("hit@1", v, c, average="macro", reps=200)
    assert mi.value == 0.75 and ma.value == 0.5  # participants weigh the same under macro
    assert mi.interval[0] <= mi.value <= mi.interval[1]
    one = M.mean_metric("hit@1", [1, 0], ["a", "a"])
    assert one.value == 0.5 and one.interval is None and "two participants" in one.reason
    assert M.mean_metric("hit@1", [], []).value is None


def test_coverage_curve_and_roc():
    assert M.coverage_curve([1, 3, 10, 50], [1, 5, 100]) == [0.25, 0.5, 1.0]
    assert M.coverage_curve([], [1, 2]) == [None, None]
    fpr, tpr = M.roc_curve([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0])
    assert fpr == [0.0, 0.0, 0.5, 1.0] and tpr == [0.0, 0.5, 1.0, 1.0]
    area = sum((fpr[i + 1] - fpr[i]) * (tpr[i + 1] + tpr[i]) / 2 for i in range(len(fpr) - 1))
    assert math.isclose(area, 0.875)  # the trapezoid area is the Mann-Whitney AUROC
