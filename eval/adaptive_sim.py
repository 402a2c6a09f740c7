"""Does the adaptive gate's learner find a participant's threshold? A simulation on the learner
itself (memory.adaptive.posterior and its Thompson draw), no store and no model.

A simulated participant needs the past exactly when the base score is >= their own threshold
tau. Each turn's score is uniform on [0, 1]. A wrong decision is reported with probability
`report` (a missed need as a miss, an unneeded retrieval as misuse); a right one is thumbed
up with probability `praise`. The learner sees every outcome of earlier turns, as live.
Printed: the share of right decisions by turn window, against a fixed threshold (the lexical
gate's default 0.35) and against the best fixed threshold (tau itself).

    python -m eval.adaptive_sim [--tau 0.6] [--turns 200] [--runs 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random

from memory.adaptive import DEFAULT_GRID, Outcome, posterior


def run_one(tau: float, turns: int, report: float, praise: float, rng: random.Random) -> list[int]:
    outs: list[Outcome] = []
    right = []
    for i in range(turns):
        s = rng.random()
        ab = posterior(outs, DEFAULT_GRID)
        draws = [rng.betavariate(a, b) for a, b in ab]
        t = DEFAULT_GRID[max(range(len(DEFAULT_GRID)), key=lambda j: draws[j])]
        retrieve, need = s >= t, s >= tau
        right.append(int(retrieve == need))
        if retrieve != need and rng.random() < report:
            outs.append(Outcome(i, "miss" if need else "misuse", "sim", s, retrieve))
        elif retrieve == need and rng.random() < praise:
            outs.append(Outcome(i, "good", "sim", s, retrieve))
    return right


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tau", type=float, default=0.6)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--report", type=float, default=0.5)
    ap.add_argument("--praise", type=float, default=0.3)
    ap.add_argument("--fixed", type=float, default=0.35)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    runs = [run_one(a.tau, a.turns, a.report, a.praise, rng) for _ in range(a.runs)]
    windows = [(0, 25), (25, 50), (50, 100), (100, a.turns)]
    out = {"tau": a.tau, "runs": a.runs, "report": a.report, "praise": a.praise,
           "adaptive": {f"turns {lo + 1}-{hi}": round(sum(sum(r[lo:hi]) for r in runs) / (a.runs * (hi - lo)), 3)
                        for lo, hi in windows if hi > lo},
           # a fixed threshold f is right unless the score falls between f and tau
           f"fixed {a.fixed}": round(1 - abs(a.tau - a.fixed), 3), f"fixed {a.tau} (best)": 1.0}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
