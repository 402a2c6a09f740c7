"""A large synthetic release for the scale check: about 27k messages and 2k probes.

    python -m eval.synth OUT_DIR [--participants 20] [--messages 27000] [--probes 2000] [--seed 7]

Participants are made by the fixture generator (eval.fixtures) at larger sizes, spread from a
quarter to one and three-quarters of the mean so macro and micro averages differ; about a hundred
messages a day. The enriched and control probes are kept; the proportional stratum is thinned by
a seeded sample (blind to need, like the original draw) until the total is near `--probes`.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from eval.fixtures import RECENT_WINDOW, _participant
from eval.readers import Release, manifest_for, write_release


def build(participants: int = 20, messages: int = 27000, probes: int = 2000, seed: int = 7) -> Release:
    mean = messages / participants
    sizes = [round(mean * (0.25 + 1.5 * i / max(participants - 1, 1))) for i in range(participants)]
    parts = {}
    for i, target in enumerate(sizes):
        pid = f"S{i + 1:02d}"
        parts[pid] = _participant(pid, i, seed, size=(target, max(4, target // 100)))
    kept = sum(1 for p in parts.values() for g in p.chat_gold if g.stratum != "proportional")
    prop = [(pid, g.probe_dayid) for pid, p in parts.items() for g in p.chat_gold if g.stratum == "proportional"]
    keep = set(random.Random(f"{seed}:thin").sample(prop, max(0, min(len(prop), probes - kept))))
    for pid, p in parts.items():
        p.chat_gold = [g for g in p.chat_gold if g.stratum != "proportional" or (pid, g.probe_dayid) in keep]
    return Release(manifest_for(parts, RECENT_WINDOW, generator="eval.synth", seed=seed), parts)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eval.synth", description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--participants", type=int, default=20)
    ap.add_argument("--messages", type=int, default=27000)
    ap.add_argument("--probes", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    t = time.perf_counter()
    rel = build(a.participants, a.messages, a.probes, a.seed)
    write_release(rel, a.out_dir, overwrite=True)
    n_msg = sum(len(p.conversation) for p in rel.participants.values())
    n_probe = sum(len(p.chat_gold) for p in rel.participants.values())
    n_qa = sum(len(p.qa) for p in rel.participants.values())
    print(f"wrote {a.out_dir}: {len(rel.participants)} participants, {n_msg} messages, {n_probe} chat probes, "
          f"{n_qa} questions ({time.perf_counter() - t:.1f}s)")


if __name__ == "__main__":
    main()
