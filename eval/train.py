"""Train the learned gate on a released corpus: features as of each probe, label = memory-bearing."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from companion.settings import Settings
from companion.turn import context_at
from eval.ingest import ingest
from eval.metrics import auroc
from eval.readers import read_release
from memory import features
from memory.store import Store


def feature_rows(release, store: Store, settings: Settings, progress=None):
    """Yield (participant, probe, feature dict, label) for every scoreable chat probe."""
    w = release.recent_window
    for pid, part in release.participants.items():
        ingest(store, pid, part.conversation)
        for probe in part.chat_gold:
            if not probe.scoreable:
                continue
            as_of = part.index[probe.probe_dayid]
            ctx = context_at(store, pid, part.row(probe.probe_dayid).text, as_of, "personal",
                             settings.model_copy(update={"recent_window": w}))
            yield pid, probe, features.compute(ctx), probe.memory_bearing(part.index, w)
            if progress:
                progress()


def train(corpus: Path, out: Path, c: float = 1.0, seed: int = 0) -> dict:
    """Fit the learned gate on a release, the way the shipped weights are fitted (eval.gatesets.fit:
    message evidence only, Platt-calibrated out of fold, threshold by balanced accuracy, seeded)."""
    from eval.gatesets import TRAIN_FEATURES, fit

    release = read_release(corpus)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, synchronous="NORMAL")  # a temporary replay
        rows = list(feature_rows(release, store, Settings(home=Path(tmp))))
        store.close()
    if not rows:
        raise ValueError(f"{corpus}: no scoreable chat probes to train on")
    names = TRAIN_FEATURES
    X = np.array([[f[n] for n in names] for _, _, f, _ in rows])
    y = np.array([lab for *_, lab in rows], dtype=int)
    if len(set(y)) < 2:
        raise ValueError(f"{corpus}: training needs both memory-bearing and other probes")
    result = fit(X, y, names, seed=seed, c=c)
    z = ((X - np.array(result["mean"])) / np.array(result["scale"])) @ np.array(result["coef"]) + result["intercept"]
    result.update({
        "trained_on": str(corpus),
        "auroc_in_sample": auroc(z, y),  # optimistic by construction: measured on the training probes
        "created_at": datetime.now(timezone.utc).isoformat(),
    })
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    return result
